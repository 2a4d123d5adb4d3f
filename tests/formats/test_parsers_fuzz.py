"""Property-based tests of every judge output parser (issue 26): on any text a parser returns a verdict
(A, B, tie or invalid) and never raises; changing the case of a tag name, or the whitespace inside a
tag's brackets or around its content, leaves the verdict and scores of a well-formed output as they were.

The formats come from the registry, so a format added later is fuzzed too."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from j1.formats import FORMATS
from j1.formats.fourway import POSITIONS, pick
from j1.formats.grammar import parse_answer, parse_score, split_thought, tag_contents
from j1.pairs import Parsed, Verdict

FUZZ = settings(max_examples=150, deadline=None)

# Pieces of the grammar, near misses included, so random texts reach deep into the parsers.
FRAGMENTS = [
    "<think>", "</think>", "< THINK >", "</ think>", "<answer>", "</answer>", "<Answer >", "< /answer>",
    "[[A]]", "[[b]]", "[[ B ]]", "[[C]]", "[[D]]", "[[tie]]", "[[", "]]", "<score_A>", "</score_A>", "<score_B>",
    "</score_B>", "<score>", "</score>", "7", "10", "10.0", "11", "-1", ".5", "8/10", "1e3", "nan", "inf", "٣",
    "\n", " ", "\t", "<", ">", "/", "ſcore", "\u212a",  # the Kelvin sign folds to k under re.IGNORECASE
]
TEXTS = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=30).map("".join)
TAG = re.compile(r"<\s*(/?)\s*([A-Za-z_]+)\s*>")


def _check_parsed(name: str, parsed: Parsed) -> None:
    assert isinstance(parsed, Parsed) and isinstance(parsed.verdict, Verdict)
    if parsed.verdict is Verdict.INVALID:
        assert isinstance(parsed.error, str) and parsed.error and parsed.scores is None
        return
    assert parsed.error is None
    # A valid verdict is one of the positions the format shows (pos: A, the response alone), or a tie.
    assert parsed.verdict.value in (*FORMATS[name].positions, Verdict.TIE.value)
    for value in (parsed.scores or {}).values():
        assert math.isfinite(value) and 0.0 <= value <= 10.0


@pytest.mark.parametrize("name", sorted(FORMATS))
@FUZZ
@given(text=TEXTS)
def test_parse_is_total(name, text):
    _check_parsed(name, FORMATS[name].parse(text))


@FUZZ
@given(text=TEXTS, tag=st.sampled_from(["answer", "score", "score_A", "think"]))
def test_grammar_functions_are_total(text, tag):
    thought, tail, error = split_thought(text)
    assert (tail is None) == (error is not None)
    contents, error = tag_contents(text, tag)
    assert all(isinstance(c, str) for c in contents) and (error is None or isinstance(error, str))
    verdict, error = parse_answer(text)
    assert (verdict is Verdict.INVALID) == (error is not None) and verdict in (Verdict.A, Verdict.B, Verdict.INVALID)
    score, error = parse_score(text, tag)
    assert (score is None) == (error is not None)
    assert score is None or 0.0 <= score <= 10.0


@FUZZ
@given(text=TEXTS)
def test_fourway_pick_is_total(text):
    p = pick(text)
    assert p.choice in (*POSITIONS, "invalid") and (p.error is None) == p.valid


# --- well-formed outputs keep their verdict under case and whitespace changes --------------------

THOUGHTS = st.text(st.characters(blacklist_characters="<>", blacklist_categories=("Cs",)), max_size=40)
SCORES = st.one_of(st.integers(0, 10).map(str), st.tuples(st.integers(0, 9), st.integers(0, 9)).map("{0[0]}.{0[1]}".format))
SPACE = st.text(st.sampled_from(" \t\n"), max_size=3)


@st.composite
def well_formed(draw, name: str) -> str:
    """A completion in ``name``'s grammar: a thought, then its answer template filled in."""
    fmt = FORMATS[name]
    answer = fmt.answer_template.format(verdict=draw(st.sampled_from(fmt.positions)), score_a=draw(SCORES),
                                        score_b=draw(SCORES), score=draw(SCORES))
    return f"<think>{draw(THOUGHTS)}</think>\n{answer}"


def _recase(draw, word: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(word), max_size=len(word)))
    return "".join(c.swapcase() if f else c for c, f in zip(word, flips, strict=True))


@st.composite
def restyled(draw, text: str) -> str:
    """``text`` with every tag's name recased and whitespace put inside its brackets; after the
    thought, also the whitespace around each tag's content and the case of a verdict letter changed."""

    def tag(m: re.Match) -> str:
        slash = f"/{draw(SPACE)}" if m.group(1) else ""
        return f"<{draw(SPACE)}{slash}{_recase(draw, m.group(2))}{draw(SPACE)}>"

    head, close, tail = text.partition("</think>")  # the thought is returned as written: leave it
    tail = re.sub(r"\[\[([A-D])\]\]", lambda m: f"[[{draw(SPACE)}{_recase(draw, m.group(1))}{draw(SPACE)}]]", tail)
    tail = re.sub(r">([^<>]+)<", lambda m: f">{draw(SPACE)}{m.group(1).strip()}{draw(SPACE)}<", tail)
    return TAG.sub(tag, head + close + tail)


@pytest.mark.parametrize("name", sorted(FORMATS))
@FUZZ
@given(data=st.data())
def test_case_and_whitespace_inside_tags_keep_the_verdict(name, data):
    fmt = FORMATS[name]
    text = data.draw(well_formed(name))
    before = fmt.parse(text)
    assert before.valid, (text, before.error)
    after = fmt.parse(data.draw(restyled(text)))
    assert (after.verdict, after.scores) == (before.verdict, before.scores)
    if name == "fourway":
        assert pick(data.draw(restyled(text))).choice == pick(text).choice
