"""Aggregation of samples and orders into a judgment: hand-worked tables (issue #2)."""

from __future__ import annotations

import pytest

from j1.formats import Parsed, Verdict, get_format
from j1.judge import assemble, majority, mean_scores, to_sample
from j1.pairs import INCONSISTENT, combine_orders, orient

A, B, TIE, INV = "A", "B", "tie", "invalid"


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        ([A], A),
        ([B, B, A], B),
        ([A, B], TIE),  # 1-1: an A/B tie gives "tie"
        ([A, A, B, B, INV], TIE),  # 2-2, the invalid one does not vote
        ([INV, INV], INV),  # no valid sample
        ([], INV),
        ([A, INV, INV, INV], A),  # one valid vote is a majority of the valid samples
        ([TIE, TIE, A], TIE),  # plurality over {A, B, tie}
        ([TIE, A, A], A),
        ([TIE, A], TIE),  # 1-1 between tie and A: shared top count
        ([Verdict.B, "B", Verdict.A], B),  # enums and strings mix
    ],
)
def test_majority(votes, expected):
    assert majority(votes).value == expected


@pytest.mark.parametrize(
    ("ab", "ba", "expected"),
    [(A, A, A), (B, B, B), (TIE, TIE, TIE), (A, B, INCONSISTENT), (A, TIE, INCONSISTENT),
     (A, INV, INV), (INV, B, INV), (INV, INV, INV)],
)
def test_combine_orders(ab, ba, expected):
    assert combine_orders(ab, ba) == expected


def test_orient_maps_shown_positions_back():
    shown = Parsed(Verdict.A, {"A": 9.0, "B": 1.0}, "t")
    assert orient(shown, "AB") == (Verdict.A, {"A": 9.0, "B": 1.0})
    # In BA the response shown first is the original B.
    assert orient(shown, "BA") == (Verdict.B, {"A": 1.0, "B": 9.0})
    assert orient(Parsed(Verdict.TIE), "BA")[0] is Verdict.TIE
    assert orient(Parsed(Verdict.INVALID), "BA")[0] is Verdict.INVALID
    with pytest.raises(ValueError, match="order"):
        orient(shown, "XY")


def _pav(v: str) -> str:
    return f"<think>t</think><answer>[[{v}]]</answer>"


def test_assemble_pav_consistent():
    # AB shows the original A first and picks A; BA shows B first and picks "B" as shown = original A.
    j = assemble(get_format("pav"), {"AB": [_pav("A"), _pav("A"), "garbage"], "BA": [_pav("B")]})
    assert [o.order for o in j.orders] == ["AB", "BA"]
    assert [o.verdict for o in j.orders] == [A, A]
    assert [s.verdict for s in j.orders[0].samples] == [A, A, INV]
    assert j.verdict == A and j.scores is None


def test_assemble_pav_inconsistent_position_bias():
    # Always "first shown": A in AB, and in BA the first shown is original B.
    j = assemble(get_format("pav"), {"AB": [_pav("A")], "BA": [_pav("A")]})
    assert [o.verdict for o in j.orders] == [A, B]
    assert j.verdict == INCONSISTENT


def test_assemble_pas_mean_scores_in_original_positions():
    fmt = get_format("pas")
    ab = ["<think>t</think><score_A>8</score_A><score_B>2</score_B>",
          "<think>t</think><score_A>6</score_A><score_B>4</score_B>"]
    ba = ["<think>t</think><score_A>3</score_A><score_B>7</score_B>", "nonsense"]
    j = assemble(fmt, {"AB": ab, "BA": ba})
    # Original A: 8, 6 (AB) and 7 (BA, shown second) -> mean 7; original B: 2, 4, 3 -> mean 3.
    assert j.scores == {"A": 7.0, "B": 3.0}
    assert [o.verdict for o in j.orders] == [A, A]
    assert j.verdict == A


def test_assemble_pos_scores_each_response():
    fmt = get_format("pos")
    j = assemble(fmt, {"A": ["<think>t</think><score>4</score>", "<think>t</think><score>6</score>"],
                       "B": ["<think>t</think><score>5</score>", "bad"]})
    assert j.orders == []
    assert j.responses["A"]["score"] == 5.0 and j.responses["B"]["score"] == 5.0
    assert j.verdict == TIE and j.scores == {"A": 5.0, "B": 5.0}
    j = assemble(fmt, {"A": ["<think>t</think><score>9</score>"], "B": ["bad"]})
    assert j.verdict == INV and j.scores == {"A": 9.0, "B": None}


def test_mean_scores_skips_missing():
    fmt = get_format("pas")
    samples = [to_sample(fmt, "x", "AB"), to_sample(fmt, "<think>t</think><score_A>1</score_A><score_B>2</score_B>", "BA")]
    assert mean_scores(samples) == {"A": 2.0, "B": 1.0}
    assert mean_scores([to_sample(fmt, "x", "AB")]) is None
