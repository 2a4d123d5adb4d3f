"""The rewards score one response (pos) or a pair in both orders (pav, pas, pavs); a format whose
prompts show another number of responses (fourway, four) is refused in one line everywhere the
rewards are reached: the Rollout checks, the TRL reward functions, verl's compute_score (issue 44)."""

from __future__ import annotations

import pytest

from j1.integrations.verl import compute_score
from j1.rewards import (
    CorrectnessReward,
    Rollout,
    check_rollout,
    judge_rollout,
    make_reward_funcs,
    score_rollouts,
)
from j1.rewards.core import default_consistency_weight, reward_format

REFUSAL = ("format 'fourway' shows 4 responses per prompt; the J1 rewards can score only formats that show "
           "1 or 2 (pas, pav, pavs or pos)")


def said(v: str) -> str:
    return f"<think>x</think><answer>[[{v}]]</answer>"


# (format, order, label, completion) -> correctness, worked by hand: the verdict names a *shown*
# position; in order BA the first shown is the original B, so "[[A]]" there means B.
TABLE = [
    ("pav", "AB", "B", said("B"), 1.0),
    ("pav", "BA", "B", said("A"), 1.0),   # shown A in BA = original B = the label
    ("pav", "BA", "B", said("B"), 0.0),   # shown B in BA = original A
    ("pav", "BA", "B", said("D"), 0.0),   # [[D]] is no pair verdict: invalid, 0 (it scored 1.0 as fourway)
    ("pav", "AB", "A", said("D"), 0.0),
    ("pavs", "BA", "B", "<think>x</think><score_A>9</score_A> <score_B>1</score_B> <answer>[[D]]</answer>", 0.0),
    ("pas", "BA", "B", "<think>x</think><score_A>9</score_A> <score_B>1</score_B>", 1.0),  # shown A scored higher
]


@pytest.mark.parametrize(("fmt", "order", "label", "completion", "correct"), TABLE)
def test_correctness_table(fmt, order, label, completion, correct):
    (parts,) = score_rollouts([Rollout("p", order, label, completion, fmt)])
    assert parts.correctness == correct


@pytest.mark.parametrize("order", ["AB", "BA"])
def test_fourway_is_refused_not_scored(order):
    # The case: [[D]] in order BA with label B used to get correctness 1.0.
    r = Rollout("p", order, "B", said("D"), "fourway")
    for call in (check_rollout, judge_rollout, lambda x: score_rollouts([x])):
        with pytest.raises(ValueError) as err:
            call(r)
        assert str(err.value) == REFUSAL


def test_reward_format():
    assert [reward_format(n).arity for n in ("pav", "pas", "pavs", "pos")] == [2, 2, 2, 1]
    with pytest.raises(ValueError, match="^format 'fourway' shows 4 responses per prompt;"):
        reward_format("fourway")
    with pytest.raises(ValueError, match="unknown format 'nope'"):
        reward_format("nope")


def test_default_consistency_weight_follows_the_shape():
    # 1 for a pair format whose answer names the verdict, 0 for scores only (pas) and one response (pos).
    assert [default_consistency_weight(n) for n in ("pav", "pavs", "pas", "pos")] == [1.0, 1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="shows 4 responses"):
        default_consistency_weight("fourway")


def test_trl_reward_refuses_a_fourway_default_when_built():
    with pytest.raises(ValueError) as err:
        CorrectnessReward(default_format="fourway")
    assert str(err.value) == REFUSAL


def test_trl_reward_refuses_a_fourway_row():
    (correctness, *_), _ = make_reward_funcs("pav")
    cols = {"pair_id": ["p", "p"], "order": ["AB", "BA"], "label": ["B", "B"], "judge_format": ["pav", "fourway"]}
    with pytest.raises(ValueError) as err:
        correctness([said("B"), said("D")], **cols, trainer_state=None)
    assert str(err.value) == REFUSAL


def test_verl_compute_score_refuses_fourway():
    infos = [{"pair_id": "p", "order": o, "label": "B", "format": "fourway"} for o in ("AB", "BA")]
    with pytest.raises(ValueError) as err:
        compute_score(["j1"] * 2, [said("B"), said("D")], ["B", "B"], infos)
    assert str(err.value) == f"rollout 0: {REFUSAL}"


def test_verl_compute_score_of_d_in_ba():
    # pav: AB says B (right, 1); BA says [[D]] (invalid, 0); consistency 1 x 0 = 0 and 0 x 1 = 0.
    infos = [{"pair_id": "p", "order": o, "label": "B", "format": "pav"} for o in ("AB", "BA")]
    assert compute_score(["j1"] * 2, [said("B"), said("D")], ["B", "B"], infos) == [1.0, 0.0]
