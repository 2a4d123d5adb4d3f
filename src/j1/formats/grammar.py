"""The judge output grammar shared by every format, as total, strict pure functions.

A judge completion looks like::

    <think> ... free reasoning ... </think>
    <score_A>7</score_A> <score_B>3.5</score_B>      (score formats)
    <answer>[[A]]</answer>                            (verdict formats)

Rules (issue #2): only text after the *last* ``</think>`` counts, so a verdict or score written
inside the thought is ignored; a ``<think>`` that is never closed, or no ``</think>`` at all, is
invalid (the opening tag may be missing because some templates pre-fill it). Tag names are
case-insensitive and may carry spaces inside the brackets (``< Answer >``); anything else is strict.
"""

from __future__ import annotations

import math
import re

from j1.pairs import Parsed, Verdict


def invalid(error: str, thought: str | None = None) -> Parsed:
    return Parsed(Verdict.INVALID, None, thought, error)


_THINK_OPEN = re.compile(r"<\s*think\s*>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"<\s*/\s*think\s*>", re.IGNORECASE)


def split_thought(text: str) -> tuple[str | None, str | None, str | None]:
    """Split a completion into (thought, tail, error).

    ``tail`` is the text after the last ``</think>``, the only part that may carry a verdict.

    >>> split_thought("<think>hmm</think> <answer>[[A]]</answer>")
    ('hmm', ' <answer>[[A]]</answer>', None)
    >>> split_thought("<think>never closed [[A]]")[2]
    'think block never closed'
    """
    closes = list(_THINK_CLOSE.finditer(text))
    if not closes:
        if _THINK_OPEN.search(text):
            return None, None, "think block never closed"
        return None, None, "no </think>: the judge must think before it answers"
    last = closes[-1]
    head = text[: last.start()]
    opens = list(_THINK_OPEN.finditer(head))
    thought = head[opens[0].end() :] if opens else head
    return thought.strip(), text[last.end() :], None


def _tag_pattern(name: str) -> re.Pattern[str]:
    # Non-greedy content, no nested tag of the same name; DOTALL so content may span lines.
    return re.compile(
        rf"<\s*{name}\s*>(.*?)<\s*/\s*{name}\s*>",
        re.IGNORECASE | re.DOTALL,
    )


def _open_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"<\s*{name}\s*>", re.IGNORECASE)


_TAGS: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {}


def tag_contents(tail: str, name: str) -> tuple[list[str], str | None]:
    """All contents of ``<name>…</name>`` in ``tail``; error if an opening tag is left unclosed."""
    if name not in _TAGS:
        _TAGS[name] = (_tag_pattern(name), _open_pattern(name))
    full, opening = _TAGS[name]
    contents = [m.group(1) for m in full.finditer(tail)]
    if len(opening.findall(tail)) != len(contents):
        return contents, f"<{name}> tag not closed"
    return contents, None


_TOKENS: dict[tuple[str, ...], re.Pattern[str]] = {}


def choices_text(options: list[str]) -> str:
    """``'x, y or z'``: how an error lists what was allowed.

    >>> choices_text(["[[A]]", "[[B]]"]), choices_text(["[[A]]", "[[B]]", "[[C]]"])
    ('[[A]] or [[B]]', '[[A]], [[B]] or [[C]]')
    """
    return options[0] if len(options) == 1 else f"{', '.join(options[:-1])} or {options[-1]}"


def parse_answer(tail: str, positions: tuple[str, ...] = ("A", "B")) -> tuple[Verdict, str | None]:
    """The verdict in ``<answer>[[A]]</answer>``, one of ``positions`` (the letters a format shows,
    ``JudgeFormat.positions``); (INVALID, reason) when absent, malformed or contradictory.

    >>> parse_answer("<answer>[[b]]</answer>")
    (<Verdict.B: 'B'>, None)
    >>> parse_answer("[[A]]")[0]
    <Verdict.INVALID: 'invalid'>
    >>> parse_answer("<answer>[[D]]</answer>"), parse_answer("<answer>[[D]]</answer>", tuple("ABCD"))
    ((<Verdict.INVALID: 'invalid'>, "answer is not [[A]] or [[B]]: '[[D]]'"), (<Verdict.D: 'D'>, None))
    """
    if positions not in _TOKENS:
        _TOKENS[positions] = re.compile(rf"^\s*\[\[\s*([{''.join(positions)}])\s*\]\]\s*$", re.IGNORECASE)
    token = _TOKENS[positions]
    contents, err = tag_contents(tail, "answer")
    if err:
        return Verdict.INVALID, err
    if not contents:
        return Verdict.INVALID, "no <answer> tag"
    verdicts = set()
    for content in contents:
        m = token.match(content)
        if not m:
            allowed = choices_text([f"[[{p}]]" for p in positions])
            return Verdict.INVALID, f"answer is not {allowed}: {content.strip()[:40]!r}"
        verdicts.add(Verdict(m.group(1).upper()))
    if len(verdicts) > 1:
        return Verdict.INVALID, "answer tags disagree"
    return verdicts.pop(), None


# A plain ASCII decimal number, optionally followed by "/10". No exponents, no non-ASCII digits
# (``\d`` would accept them), no signs other than a leading minus (which then fails the range
# check with a clear reason).
_SCORE = re.compile(r"^\s*(-?[0-9]+(?:\.[0-9]+)?|-?\.[0-9]+)\s*(?:/\s*10(?:\.0+)?)?\s*$")


def parse_score(tail: str, name: str) -> tuple[float | None, str | None]:
    """The number in ``<name>…</name>``, which must lie in [0, 10]; (None, reason) otherwise.

    >>> parse_score("<score>8/10</score>", "score")
    (8.0, None)
    >>> parse_score("<score>11</score>", "score")[1]
    'score out of [0, 10]: 11.0'
    """
    contents, err = tag_contents(tail, name)
    if err:
        return None, err
    if not contents:
        return None, f"no <{name}> tag"
    values = set()
    for content in contents:
        m = _SCORE.match(content)
        if not m:
            return None, f"<{name}> is not a number: {content.strip()[:40]!r}"
        value = float(m.group(1))
        if not math.isfinite(value) or not 0.0 <= value <= 10.0:
            return None, f"score out of [0, 10]: {value}"
        values.add(value)
    if len(values) > 1:
        return None, f"<{name}> tags disagree"
    return values.pop(), None


def parse_verdict(text: str, letters: tuple[str, ...]) -> Parsed:
    """A completion that thinks, then names one of ``letters`` in the answer tag (``pav``, ``fourway``).

    >>> parse_verdict("<think>x</think><answer>[[B]]</answer>", ("A", "B")).verdict
    <Verdict.B: 'B'>
    >>> parse_verdict("<answer>[[B]]</answer>", ("A", "B")).error
    'no </think>: the judge must think before it answers'
    """
    thought, tail, err = split_thought(text)
    if err:
        return invalid(err, thought)
    verdict, err = parse_answer(tail, letters)
    if err:
        return invalid(err, thought)
    return Parsed(verdict, None, thought)
