"""Aggregation of samples and orders into a judgment: hand-worked tables (issue #2)."""

from __future__ import annotations

import pytest

from j1.backends import Completion
from j1.formats import Parsed, Verdict, get_format
from j1.judging.judge import Sample, assemble, first_error, majority, mean_scores, to_sample
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


# Why a sample is invalid (issue: ``j1 judge`` must say why). Each row: format, completion text, the
# parser's exact reason. Every reason the grammar can give appears at least once.
NO_THINK = "no </think>: the judge must think before it answers"
REASONS = [
    ("pav", "<answer>[[A]]</answer>", NO_THINK),
    ("pav", "", NO_THINK),
    ("pav", "<think>A is better [[A]]", "think block never closed"),
    ("pav", "<think>t</think> [[A]]", "no <answer> tag"),
    ("pav", "<think>t</think><answer>[[A]]", "<answer> tag not closed"),
    ("pav", "<think>t</think><answer>[[A]]</answer><answer>[[B]]</answer>", "answer tags disagree"),
    ("pav", "<think>t</think><answer>A</answer>", "answer is not [[A]] or [[B]]: 'A'"),
    ("pav", "<think>t</think><answer>[[Ä]]</answer>", "answer is not [[A]] or [[B]]: '[[Ä]]'"),  # unicode
    ("pas", "<think>t</think><score_A>7</score_A>", "no <score_B> tag"),
    ("pas", "<think>t</think><score_A>7</score_A><score_A>8</score_A><score_B>1</score_B>", "<score_A> tags disagree"),
    ("pavs", "<think>t</think><score_A>7</score_A><score_B>1</score_B>", "no <answer> tag"),
    ("pos", "<think>t</think><score>11</score>", "score out of [0, 10]: 11.0"),
    ("pos", "<think>t</think><score>high</score>", "<score> is not a number: 'high'"),
    ("pos", "<think>t</think><score>7", "<score> tag not closed"),
]


def _slot(fmt_name: str) -> str:
    return "AB" if get_format(fmt_name).pairwise else "A"


@pytest.mark.parametrize(("fmt_name", "text", "reason"), REASONS)
def test_invalid_sample_carries_the_parser_reason(fmt_name, text, reason):
    fmt = get_format(fmt_name)
    for completion, finish in [(text, None), (Completion(text, "stop", 40), "stop")]:
        s = to_sample(fmt, completion, _slot(fmt_name))
        assert (s.verdict, s.scores, s.error, s.finish_reason) == (INV, None, reason, finish)
    assert fmt.parse(text).error == reason  # the sample passes the parser's reason on unchanged


@pytest.mark.parametrize(("fmt_name", "text", "reason"), REASONS)
def test_cut_off_invalid_sample_says_so_with_the_token_count(fmt_name, text, reason):
    s = to_sample(get_format(fmt_name), Completion(text, "length", 8), _slot(fmt_name))
    assert s.error == f"cut off at the token limit (8 tokens) before a valid answer: {reason}"
    assert s.finish_reason == "length" and s.verdict == INV


def test_cut_off_without_a_token_count_leaves_the_count_out():
    # A server that sends no usage reports 0 tokens; "(0 tokens)" would be false.
    s = to_sample(get_format("pav"), Completion("<think>long", "length", 0), "BA")
    assert s.error == "cut off at the token limit before a valid answer: think block never closed"


@pytest.mark.parametrize(
    ("fmt_name", "slot", "text", "verdict", "scores"),
    [
        ("pav", "AB", "<think>t</think><answer>[[A]]</answer>", A, None),
        ("pav", "BA", "<think>t</think><answer>[[A]]</answer>", B, None),  # first shown in BA = original B
        ("pas", "AB", "<think>t</think><score_A>2</score_A><score_B>9</score_B>", B, {"A": 2.0, "B": 9.0}),
        ("pos", "B", "<think>t</think><score>8/10</score>", A, {"B": 8.0}),
    ],
)
@pytest.mark.parametrize("finish", ["stop", "length"])
def test_valid_sample_has_no_error_even_if_cut_off(fmt_name, slot, text, verdict, scores, finish):
    # The answer was complete before the limit (e.g. trailing text was cut): the verdict stands.
    s = to_sample(get_format(fmt_name), Completion(text, finish, 512), slot)
    assert (s.verdict, s.scores, s.error, s.finish_reason) == (verdict, scores, None, finish)


def test_first_error_is_the_first_invalid_samples_reason():
    fmt = get_format("pav")
    samples = [to_sample(fmt, _pav("A"), "AB"), to_sample(fmt, "<think>t</think>", "AB"),
               to_sample(fmt, Completion("x", "length", 3), "AB")]
    assert first_error(samples) == "no <answer> tag"
    assert first_error(samples[:1]) is None and first_error([]) is None


def test_assemble_keeps_errors_and_finish_reasons():
    j = assemble(get_format("pav"), {"AB": [Completion(_pav("A"), "stop", 20)],
                                     "BA": [Completion("<think>still going", "length", 16)]})
    ab, ba = (o.samples[0] for o in j.orders)
    assert (ab.error, ab.finish_reason) == (None, "stop")
    assert ba.error == "cut off at the token limit (16 tokens) before a valid answer: think block never closed"
    assert j.verdict == INV


def test_sample_positional_fields_unchanged():
    # The new fields come last with defaults, so Sample(verdict, scores, thought, text) still builds.
    s = Sample("A", None, "t", "x")
    assert (s.error, s.finish_reason) == (None, None)
