"""The group (reference-free) win-rate rule of ``j1.rewards.group`` and ``j1.serve.protocol.group_rewards``."""

from __future__ import annotations

import random

import pytest

from j1.judging.judge import Judgment, OrderResult, Sample
from j1.rewards.group import group_plan, opponent_pairs, prompt_groups, win_rates
from j1.serve.protocol import group_rewards


@pytest.mark.parametrize("n, outcomes, expected", [
    (1, [], [0.5]),                                              # alone: no comparison, no contest
    (2, [(0, 1, ["A", "A"])], [1.0, 0.0]),                        # a win in both orders
    (2, [(0, 1, ["A", "B"])], [0.5, 0.5]),                        # a flip: one vote each
    (2, [(0, 1, ["tie", "tie"])], [0.5, 0.5]),                    # ties are half a win each
    (2, [(0, 1, ["invalid", "A"])], [1.0, 0.0]),                  # the invalid vote leaves the denominator
    (2, [(0, 1, ["invalid", "invalid"])], [0.5, 0.5]),            # no valid vote: no contest
    # 0: 2 of 2 vs 1, 0.5 of 2 vs 2 -> 2.5/4; 1: 0/2 (its pair with 2 is all invalid); 2: 1.5/2
    (3, [(0, 1, ["A", "A"]), (0, 2, ["tie", "B"]), (1, 2, ["invalid", "invalid"])], [0.625, 0.0, 0.75]),
    # a judged pair may repeat (k random opponents drawn from both ends): its votes add up
    (2, [(0, 1, ["A"]), (0, 1, ["B", "B"])], [1 / 3, 2 / 3]),
])
def test_win_rates(n, outcomes, expected):
    assert win_rates(n, outcomes) == pytest.approx(expected)


def test_no_contest_value_can_be_none():
    assert win_rates(2, [(0, 1, ["invalid"])], no_contest=None) == [None, None]


def test_unknown_verdicts_count_as_invalid():
    assert win_rates(2, [(0, 1, ["C", "A"])]) == [1.0, 0.0]


def test_groups_and_pairs():
    assert prompt_groups([]) == []
    assert prompt_groups(["p", "p", "q"]) == [[0, 1], [2]]
    assert opponent_pairs(4, 3, random.Random(0)) == opponent_pairs(4, None, random.Random(0))
    drawn = opponent_pairs(6, 1, random.Random(0))
    assert all(i < j for i, j in drawn) and {i for p in drawn for i in p} == set(range(6))  # everyone meets one
    with pytest.raises(ValueError, match="opponents 0"):
        opponent_pairs(3, 0, random.Random(0))
    # online DPO's layout: prompt i at i and i + B
    plan = group_plan(["p", "q", "p", "q"], ["a", "b", "c", "d"], None)
    assert plan == [(0, 2), (1, 3)]
    # seeded by the seed and the group's texts: the same batch draws the same opponents
    prompts, texts = ["p"] * 8, [str(i) for i in range(8)]
    assert group_plan(prompts, texts, 2, seed=1) == group_plan(prompts, texts, 2, seed=1)


def _judgment(*orders: list[str]) -> Judgment:
    s = [OrderResult(o, vs[0], [Sample(v, None, None, "") for v in vs]) for o, vs in zip(("AB", "BA"), orders, strict=True)]
    return Judgment("pav", "x", s, None)


def test_group_rewards_logs():
    got = group_rewards(3, [(0, 1), (0, 2), (1, 2)], [_judgment(["A"], ["A"]), None, _judgment(["invalid"], ["invalid"])])
    # 0 beats 1 in both orders; 2's only judged pair is invalid: no contest
    assert got.rewards == [1.0, 0.0, 0.5]
    assert got.logs == {"invalid_rate": 0.5, "flip_rate": 0.0, "no_contest_rate": pytest.approx(1 / 3),
                        "comparisons": 2, "n": 3}
    with pytest.raises(ValueError, match="2 judgments for 1 pairs"):
        group_rewards(2, [(0, 1)], [None, None])
