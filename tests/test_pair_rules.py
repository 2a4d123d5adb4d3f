"""The one rule each for a flip, a plurality vote and "mean score, then compare" (issue 44): every
caller (judge, eval, consistency, RewardBench 2, rewards, serve, attack) goes through these."""

from __future__ import annotations

import pickle

import pytest

from j1.eval.consistency_scoring import _pooled_rates
from j1.judging.judge import Sample, compare_means, majority, mean_score
from j1.pairs import Verdict, flip_rate, flipped, plurality

# The flip rule. Verdicts are already in original naming (A = the pair's first response), so an
# unbiased judge says the same thing in both orders. A flip: every order valid, and they disagree.
# A tie is a verdict (a tie against a pick is a flip); an invalid order is not counted at all.
FLIPS = [
    (("A", "A"), False),
    (("B", "B"), False),
    (("tie", "tie"), False),
    (("A", "B"), True),                  # the position-bias flip: the first shown wins both times
    (("B", "A"), True),
    (("A", "tie"), True),                # changed its mind with the order
    (("tie", "B"), True),
    (("A", "invalid"), None),            # nothing to compare: counted by the invalid rate instead
    (("invalid", "tie"), None),
    (("invalid", "invalid"), None),
    ((Verdict.A, "A"), False),           # enum and plain string are the same verdict
    ((Verdict.TIE, "tie"), False),
    (("r1", "r1", "r1"), False),         # four-way rotations: the answer picked in each
    (("r1", "r2", "r1"), True),
    (("r1", "invalid", "r1"), None),
]


@pytest.mark.parametrize(("verdicts", "flip"), FLIPS)
def test_flipped(verdicts, flip):
    assert flipped(*verdicts) is flip


def test_flipped_needs_two_orders():
    with pytest.raises(ValueError, match="two or more"):
        flipped("A")


@pytest.mark.parametrize(("flags", "rate"), [
    ([True, False, None, None], 0.5),     # 1 flip of the 2 pairs valid in both orders
    ([False, False, True], 1 / 3),
    ([None, None], None),                 # nothing counted: None, never 0
    ([], None),
])
def test_flip_rate_counts_only_pairs_valid_in_every_order(flags, rate):
    assert flip_rate(flags) == (rate if rate is None else pytest.approx(rate))


def test_consistency_flip_rate_is_the_pairs_rule():
    # y[i][j]: 1 when i (shown first) wins, -1 when j wins, 0 tie, None invalid.
    # (0,1): 1 / y[1][0] = -1 -> 0 wins both orders: no flip. (0,2): 1 / y[2][0] = 1 -> each shown
    # first wins: flip. (1,2): None -> not counted. So 1 flip of 2 counted pairs.
    y = [[0, 1, 1],
         [-1, 0, None],
         [1, 0, 0]]
    assert _pooled_rates([y])["flip_rate"] == pytest.approx(1 / 2)
    tie_vs_pick = [[0, 0], [-1, 0]]  # tie one way, 0 wins the other: a flip
    assert _pooled_rates([tie_vs_pick])["flip_rate"] == 1.0


# The vote rule: the most frequent valid vote; none valid is invalid; a shared top is ``shared``.
VOTES = [
    ([], "tie", "invalid"),
    (["invalid", "invalid"], "tie", "invalid"),
    (["A"], "tie", "A"),
    (["A", "A", "B"], "tie", "A"),
    (["A", "B"], "tie", "tie"),                       # pairwise samples split evenly: a tie
    (["A", "B", "tie"], "tie", "tie"),                # PandaLM's three annotators all differ
    (["tie", "tie", "A"], "tie", "tie"),
    (["A", "invalid", "invalid"], "tie", "A"),        # invalid votes are left out, not a rival
    (["A", "B"], "invalid", "invalid"),               # RewardBench 2: a shared top earns nothing
    (["C", "D", "D", "invalid"], "invalid", "D"),
    ([Verdict.B, "B", Verdict.A], "tie", "B"),
]


@pytest.mark.parametrize(("votes", "shared", "winner"), VOTES)
def test_plurality(votes, shared, winner):
    assert plurality(votes, shared=shared) == winner


def test_majority_is_the_plurality_as_a_verdict():
    assert majority(["A", "B"]) is Verdict.TIE
    assert majority(["B", "B", "A", "invalid"]) is Verdict.B
    assert majority([]) is Verdict.INVALID


def _s(score: float | None, slot: str = "A") -> Sample:
    return Sample("A" if score is not None else "invalid", None if score is None else {slot: score}, None, "")


@pytest.mark.parametrize(("a", "b", "expected"), [
    ([8.0, 6.0], [9.0, 3.0], (7.0, 6.0, Verdict.A)),            # means 7 and 6
    ([5.0], [5.0, None], (5.0, 5.0, Verdict.TIE)),               # an unscored sample is left out
    ([2.0, 4.0], [9.0], (3.0, 9.0, Verdict.B)),
    ([None], [9.0], (None, 9.0, Verdict.INVALID)),               # no score: no comparison
    ([], [], (None, None, Verdict.INVALID)),
])
def test_compare_means(a, b, expected):
    assert compare_means([_s(x) for x in a], [_s(x, "B") for x in b]) == expected


def test_mean_score_reads_pointwise_samples_only():
    with pytest.raises(ValueError, match="pointwise"):
        mean_score([Sample("A", {"A": 1.0, "B": 2.0}, None, "")])


def test_rules_are_plain_functions():
    for f in (flipped, flip_rate, plurality, compare_means):
        assert pickle.loads(pickle.dumps(f)) is f
