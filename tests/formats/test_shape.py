"""A format knows its shape (issue 44): how many responses a prompt shows, the verdicts it can give,
the tags around its answer and how to write a valid one; callers use these, never its name."""

from __future__ import annotations

import pickle
import random

import pytest

from j1.formats import FORMATS, Verdict, get_format, require_arity
from j1.formats.fourway import pick

THINK = "<think>x</think>"

# name -> (arity, positions, answer tags, names a position as [[X]])
SHAPES = {
    "pav": (2, ("A", "B"), ("<answer>", "</answer>"), True),
    "pas": (2, ("A", "B"), ("<score_A>", "</score_B>"), False),
    "pavs": (2, ("A", "B"), ("<score_A>", "</answer>"), True),
    "pos": (1, ("A",), ("<score>", "</score>"), False),
    "fourway": (4, ("A", "B", "C", "D"), ("<answer>", "</answer>"), True),
}


def test_every_format_has_a_shape():
    assert sorted(SHAPES) == sorted(FORMATS)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shape(name):
    fmt = get_format(name)
    arity, positions, tags, names_position = SHAPES[name]
    assert (fmt.arity, fmt.positions, fmt.answer_tags, fmt.names_position) == (arity, positions, tags, names_position)
    assert fmt.pairwise is (arity == 2)  # fourway is not a pair: it is never judged "in both orders"
    assert get_format(name, "compact").arity == arity  # the wording does not change the shape


# (format, winner) -> the answer it writes without an rng: the winner's verdict, 10 to the winner.
WRITTEN = [
    ("pav", "A", "<answer>[[A]]</answer>"),
    ("pav", "B", "<answer>[[B]]</answer>"),
    ("pas", "A", "<score_A>10</score_A> <score_B>0</score_B>"),
    ("pas", "B", "<score_A>0</score_A> <score_B>10</score_B>"),
    ("pavs", "B", "<score_A>0</score_A> <score_B>10</score_B> <answer>[[B]]</answer>"),
    ("pos", "A", "<score>10</score>"),
    ("fourway", "D", "<answer>[[D]]</answer>"),
    ("fourway", "C", "<answer>[[C]]</answer>"),
]


@pytest.mark.parametrize(("name", "winner", "answer"), WRITTEN)
def test_write_answer_names_the_winner(name, winner, answer):
    fmt = get_format(name)
    assert fmt.write_answer(winner) == answer
    parsed = fmt.parse(THINK + answer)
    # pos has no verdict to name: its one response is shown as A.
    assert parsed.valid and parsed.verdict is Verdict(winner)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_drawn_answers_parse_and_name_the_winner(name):
    fmt = get_format(name)
    rng = random.Random(7)
    for _ in range(50):
        assert fmt.parse(THINK + fmt.write_answer(rng=rng)).valid
        for winner in fmt.positions:
            assert fmt.parse(THINK + fmt.write_answer(winner, rng)).verdict is Verdict(winner)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_a_seed_draws_the_same_with_or_without_a_winner(name):
    # The warm-up relies on it: gold and random verdicts from one seed see the same later draws.
    fmt = get_format(name)
    with_winner, without = random.Random(3), random.Random(3)
    fmt.write_answer("A", with_winner)
    fmt.write_answer(None, without)
    assert with_winner.random() == without.random()


@pytest.mark.parametrize(("name", "winner"), [("pav", "C"), ("pos", "B"), ("fourway", "E"), ("pas", "tie")])
def test_write_answer_refuses_a_position_not_shown(name, winner):
    with pytest.raises(ValueError, match=f"{winner!r} is none of them"):
        get_format(name).write_answer(winner)


@pytest.mark.parametrize("name", ["pav", "pas", "fourway"])
def test_write_answer_needs_a_winner_or_an_rng(name):
    with pytest.raises(ValueError, match="name a winner or pass an rng"):
        get_format(name).write_answer()


@pytest.mark.parametrize(("name", "letter", "token"),
                         [("pav", "B", "[[B]]"), ("pavs", "A", "[[A]]"), ("fourway", "D", "[[D]]"),
                          ("pas", "A", None), ("pos", "A", None)])
def test_verdict_token(name, letter, token):
    assert get_format(name).verdict_token(letter) == token


# The four-way pick is typed: [[D]] is Verdict.D (it used to read as "A, a valid pick", which the
# pair rewards then oriented: in order BA that became B, "right" against label B).
FOURWAY = [
    ("<answer>[[D]]</answer>", Verdict.D),
    ("<answer>[[c]]</answer>", Verdict.C),
    ("<answer> [[ b ]] </answer>\n", Verdict.B),
    ("<answer>[[A]]</answer>", Verdict.A),
    ("<answer>[[E]]</answer>", Verdict.INVALID),
    ("<answer>[[C]]</answer><answer>[[D]]</answer>", Verdict.INVALID),  # tags disagree
    ("<answer>[[tie]]</answer>", Verdict.INVALID),  # a pick has no tie
    ("[[D]]", Verdict.INVALID),  # no answer tag
]


@pytest.mark.parametrize(("tail", "verdict"), FOURWAY)
def test_fourway_parse_is_the_typed_pick(tail, verdict):
    parsed = get_format("fourway").parse(THINK + tail)
    assert parsed.verdict is verdict
    assert pick(THINK + tail).choice == verdict.value  # RewardBench 2 reads the same pick
    assert (parsed.error is None) == parsed.valid


@pytest.mark.parametrize(("name", "tail"), [("pav", "<answer>[[D]]</answer>"), ("pavs", "<score_A>1</score_A> "
                                            "<score_B>2</score_B> <answer>[[C]]</answer>")])
def test_pair_formats_refuse_the_four_way_letters(name, tail):
    parsed = get_format(name).parse(THINK + tail)
    assert parsed.verdict is Verdict.INVALID and "not [[A]] or [[B]]" in parsed.error


def test_inconsistent_is_a_verdict_no_parser_gives():
    assert Verdict("inconsistent") is Verdict.INCONSISTENT
    for name in FORMATS:
        assert get_format(name).parse(THINK + "<answer>[[inconsistent]]</answer>").verdict is Verdict.INVALID


def test_require_arity():
    assert require_arity("pos", (1, 2), "x").name == "pos"
    with pytest.raises(ValueError) as err:
        require_arity("fourway", (1, 2), "the J1 rewards")
    assert str(err.value) == ("format 'fourway' shows 4 responses per prompt; the J1 rewards can score only "
                              "formats that show 1 or 2 (pas, pav, pavs or pos)")
    with pytest.raises(ValueError, match=r"show 4 \(fourway\)"):
        require_arity("pav", (4,), "x")


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_formats_pickle_with_their_shape(name):
    fmt = pickle.loads(pickle.dumps(get_format(name, "compact")))
    assert (fmt.arity, fmt.positions, fmt.template_name) == (SHAPES[name][0], SHAPES[name][1], "compact")
