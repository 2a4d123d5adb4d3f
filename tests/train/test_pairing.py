"""Fast tests of the pairing logic: the sampler, accelerate's per-process sharding of it, the
geometry check, the unit check and pair-level advantages (hand-worked)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from accelerate.data_loader import BatchSamplerShard
from torch.utils.data import BatchSampler

from j1.train.advantages import (
    couple_advantages,
    pair_advantages,
    position_balance_advantages,
    verdict_advantages,
)
from j1.train.sampler import PairRepeatSampler, check_pair_geometry
from j1.train.trl_grpo import check_units


def shards(num_rows, G, per_device, spg, processes, seed=0, iterations=1):
    """What each process receives: accelerate's BatchSamplerShard over our sampler, exactly as
    Trainer builds it (dataloader batch = per_device x steps_per_generation)."""
    local = per_device * spg
    out = []
    for p in range(processes):  # each process builds its own sampler with the same seed
        sampler = PairRepeatSampler(
            num_rows, mini_repeat_count=G, batch_size=local * processes // G,
            repeat_count=iterations * spg, shuffle=True, seed=seed,
        )
        batches = BatchSampler(sampler, batch_size=local, drop_last=False)
        out.append(list(BatchSamplerShard(batches, num_processes=processes, process_index=p)))
    return out


@pytest.mark.parametrize(
    "num_rows,G,per_device,spg,processes",
    [
        (16, 2, 4, 1, 2),   # 2 prompts = 1 pair per process
        (32, 4, 8, 2, 2),   # steps_per_generation 2: 4 prompts = 2 pairs per process
        (40, 5, 10, 1, 2),  # G = 5 as in the paper's recipe
        (48, 3, 6, 2, 4),   # 4 processes
        (24, 2, 4, 1, 1),
    ],
)
def test_every_process_batch_holds_whole_pairs(num_rows, G, per_device, spg, processes):
    check_pair_geometry(per_device, spg, G)
    per_proc = shards(num_rows, G, per_device, spg, processes)
    seen_units = set()
    for batches in per_proc:
        assert batches, "every process gets batches"
        for batch in batches:
            # G copies of one row, G copies of its partner (rows 2u, 2u+1), unit after unit
            for start in range(0, len(batch), 2 * G):
                block = batch[start : start + 2 * G]
                assert block[:G] == [block[0]] * G and block[G:] == [block[0] + 1] * G
                assert block[0] % 2 == 0
                seen_units.add(block[0] // 2)
    assert seen_units == set(range(num_rows // 2))  # with these sizes every unit is drawn


def test_sampler_shuffles_units_reproducibly():
    a = list(PairRepeatSampler(20, 1, batch_size=20, seed=1))
    assert a == list(PairRepeatSampler(20, 1, batch_size=20, seed=1))
    assert a != list(range(20))  # shuffled ...
    assert all(a[i] + 1 == a[i + 1] and a[i] % 2 == 0 for i in range(0, 20, 2))  # ... by whole units
    assert len(PairRepeatSampler(20, 3, batch_size=4, repeat_count=2)) == len(list(PairRepeatSampler(
        20, 3, batch_size=4, repeat_count=2)))


@pytest.mark.parametrize("rows,batch,msg", [(7, 2, "not a multiple of the unit"), (8, 3, "would split a pair")])
def test_sampler_rejects_split_pairs(rows, batch, msg):
    with pytest.raises(ValueError, match=msg):
        PairRepeatSampler(rows, 2, batch_size=batch)


@pytest.mark.parametrize("per_device,spg,G", [(4, 1, 4), (6, 1, 2), (5, 2, 2), (8, 1, 3)])
def test_geometry_check_names_the_fix(per_device, spg, G):
    with pytest.raises(ValueError, match="per_device_train_batch_size"):
        check_pair_geometry(per_device, spg, G)


def _row(pid, order):
    return {"pair_id": pid, "order": order, "judge_format": "pav"}


def test_check_units():
    good = [_row("p", "AB")] * 2 + [_row("p", "BA")] * 2 + [_row("q", "BA")] * 2 + [_row("q", "AB")] * 2
    check_units(good, 2)
    with pytest.raises(RuntimeError, match="not one pair"):
        check_units([_row("p", "AB")] * 2 + [_row("q", "BA")] * 2, 2)
    with pytest.raises(RuntimeError, match="not one pair"):
        check_units([_row("p", "AB")] * 4, 2)
    with pytest.raises(RuntimeError, match="whole pairs"):
        check_units([_row("p", "AB")] * 3, 2)


def test_pair_advantages_hand_worked():
    # Two reward functions (correctness, consistency), weights (1, 1); one pair, G = 2:
    # totals: AB [1+1, 1+0] = [2, 1]; BA [1+0, 0+0] = [1, 0]; mean 1; deviations [1, 0, 0, -1]
    # "none": [1, 0, 0, -1]; "group": std (unbiased) of [2, 1, 1, 0] = sqrt(2/3) = 0.8165
    r = torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    w = torch.ones(2)
    assert pair_advantages(r, w, 4, "none").tolist() == [1.0, 0.0, 0.0, -1.0]
    got = pair_advantages(r, w, 4, "group")
    assert got.tolist() == pytest.approx([1 / (0.8165 + 1e-4), 0, 0, -1 / (0.8165 + 1e-4)], rel=1e-3)


def test_pair_advantages_bias_gets_signal_where_per_prompt_has_none():
    # Always "A": AB rollouts right (1), BA wrong (0). Per prompt (G=2) both groups have zero variance,
    # so TRL's advantages are all 0; over the pair (2G=4) they are +/-0.5 before scaling.
    r = torch.tensor([[1.0], [1.0], [0.0], [0.0]])
    per_prompt = pair_advantages(r, torch.ones(1), 2, "none")
    assert per_prompt.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert pair_advantages(r, torch.ones(1), 4, "none").tolist() == [0.5, 0.5, -0.5, -0.5]


def test_pair_advantages_unscorable_rows_get_zero_and_leave_the_baseline():
    # row 3 unscorable (all NaN): baseline = mean(1, 0, 0.5) = 0.5 -> [0.5, -0.5, 0, 0]
    nan = float("nan")
    r = torch.tensor([[1.0], [0.0], [0.5], [nan]])
    assert pair_advantages(r, torch.ones(1), 4, "none").tolist() == [0.5, -0.5, 0.0, 0.0]
    with pytest.raises(ValueError, match="pair groups of 3"):
        pair_advantages(r, torch.ones(1), 3)
    with pytest.raises(ValueError, match="scale_rewards"):
        pair_advantages(r, torch.ones(1), 4, "median")


def test_couple_advantages_hand_worked():
    # One pair, G = 2, correctness only. AB: [right, right]; BA: [wrong, right].
    # Couples (AB_0, BA_0) = (1, 0) -> [+0.5, -0.5]; (AB_1, BA_1) = (1, 1) -> [0, 0].
    # Back in row order (AB_0, AB_1, BA_0, BA_1): [0.5, 0, -0.5, 0]. The pair group of 4 would give
    # mean 0.75 -> [0.25, 0.25, -0.75, 0.25].
    r = torch.tensor([[1.0], [1.0], [0.0], [1.0]])
    assert couple_advantages(r, torch.ones(1), 2, "none").tolist() == [0.5, 0.0, -0.5, 0.0]
    assert pair_advantages(r, torch.ones(1), 4, "none").tolist() == [0.25, 0.25, -0.75, 0.25]
    # "group": the std (unbiased) of two values 1 apart is 1/sqrt(2); equal values give 0, not NaN.
    got = couple_advantages(r, torch.ones(1), 2, "group")
    assert got.tolist() == pytest.approx([0.5 / (0.5**0.5 + 1e-4), 0.0, -0.5 / (0.5**0.5 + 1e-4), 0.0], rel=1e-5)


def test_couple_advantages_keep_pairs_apart_and_weigh_functions():
    # Two pairs, G = 3, two functions weighted (1, 2). Totals per row:
    # pair 0: AB [1, 3, 0], BA [3, 1, 0]   -> couples (1,3) (3,1) (0,0) -> AB [-1, 1, 0], BA [1, -1, 0]
    # pair 1: AB [2, 2, 3], BA [0, 2, 1]   -> couples (2,0) (2,2) (3,1) -> AB [1, 0, 1], BA [-1, 0, -1]
    totals = [1, 3, 0, 3, 1, 0, 2, 2, 3, 0, 2, 1]
    r = torch.tensor([[t % 2, t // 2] for t in totals], dtype=torch.float)
    got = couple_advantages(r, torch.tensor([1.0, 2.0]), 3, "none")
    assert got.tolist() == [-1, 1, 0, 1, -1, 0, 1, 0, 1, -1, 0, -1]


def test_couple_advantages_unscorable_and_bad_shapes():
    nan = float("nan")
    # Couple 0 has an unscorable BA row: baseline = the AB row alone -> 0 for both.
    r = torch.tensor([[1.0], [1.0], [nan], [0.0]])
    assert couple_advantages(r, torch.ones(1), 2, "none").tolist() == [0.0, 0.5, 0.0, -0.5]
    with pytest.raises(ValueError, match="pair groups of 4"):
        couple_advantages(torch.zeros(6, 1), torch.ones(1), 2)


def first_shown_weight(num_generations, letters, **options):
    """The summed advantage of the rollouts that name the first-shown response, for every way G
    rollouts per order can answer with ``letters`` ("A", "B", "x" = no verdict). The label says the
    first response is better, so AB is right when it names the first shown, BA when it names the
    second. Rewards: correctness + index consistency, through the real reward functions."""
    from itertools import product

    from j1.rewards import make_reward_funcs

    funcs, weights = make_reward_funcs("pav", consistency="index")
    sums = []
    for picks in product(letters, repeat=2 * num_generations):
        orders = ["AB"] * num_generations + ["BA"] * num_generations
        completions = [f"<think>t</think>\n<answer>[[{p}]]</answer>" if p != "x" else "<think>t" for p in picks]
        kwargs = {"pair_id": ["p"] * len(picks), "order": orders, "label": ["A"] * len(picks)}
        r = torch.tensor([f(prompts=[""] * len(picks), completions=completions, **kwargs) for f in funcs]).t()
        valid = torch.tensor([p != "x" for p in picks])
        advantages = verdict_advantages(r, torch.tensor(weights), valid, num_generations, **options)
        sums.append(float(advantages[torch.tensor([p == "A" for p in picks])].sum()))
    return sums


@pytest.mark.parametrize("num_generations", [1, 2, 3])
@pytest.mark.parametrize("scale", ["none", "group"])
def test_couples_give_no_weight_to_the_position_preference(num_generations, scale):
    # With couples, the rollouts that named the first-shown response always carry a total advantage
    # of 0, so no step can move the position preference on its own.
    assert max(map(abs, first_shown_weight(num_generations, "AB", couples=True, scale_rewards=scale))) < 1e-6
    if num_generations > 1:  # pair groups do not have this property
        assert max(map(abs, first_shown_weight(num_generations, "AB", scale_rewards=scale))) > 0.1


@pytest.mark.parametrize("num_generations", [1, 2])
def test_invalid_advantage_keeps_format_errors_out_of_the_position_preference(num_generations):
    # With invalid rollouts scored 0 like wrong ones, a right verdict beside an invalid one gains:
    # a couple (AB names the first shown, BA writes no verdict) pushes "first shown" up.
    assert max(first_shown_weight(num_generations, "ABx", couples=True, scale_rewards="none")) >= 0.5
    # Compared among valid rollouts only, the position preference gets no weight again.
    sums = first_shown_weight(num_generations, "ABx", couples=True, scale_rewards="none", invalid_advantage=-1.0)
    assert max(map(abs, sums)) < 1e-6


def test_verdict_advantages_hand_worked():
    w, nan = torch.ones(1), float("nan")
    r = torch.tensor([[1.0], [0.0], [0.0], [1.0]])  # AB: right, invalid (scored 0); BA: wrong, right
    valid = torch.tensor([True, False, True, True])
    # Unset: exactly pair_advantages / couple_advantages.
    assert verdict_advantages(r, w, valid, 2, scale_rewards="none").tolist() == [0.5, -0.5, -0.5, 0.5]
    assert verdict_advantages(r, w, valid, 2, couples=True, scale_rewards="none").tolist() == [0.5, -0.5, -0.5, 0.5]
    # Pair group, valid only: baseline mean(1, 0, 1) = 2/3 -> [1/3, -1, -2/3, 1/3].
    got = verdict_advantages(r, w, valid, 2, scale_rewards="none", invalid_advantage=-1.0)
    assert got.tolist() == pytest.approx([1 / 3, -1.0, -2 / 3, 1 / 3])
    # Couples, valid only: (AB_0, BA_0) = (1, 0) -> +-0.5; (AB_1, BA_1) = (invalid, 1) -> (-1, 0).
    got = verdict_advantages(r, w, valid, 2, couples=True, scale_rewards="none", invalid_advantage=-1.0)
    assert got.tolist() == [0.5, -1.0, -0.5, 0.0]
    # A group with no valid rollout: every rollout gets the invalid advantage; NaN rows stay 0.
    none_valid = torch.zeros(4, dtype=torch.bool)
    assert verdict_advantages(r, w, none_valid, 2, invalid_advantage=-0.5).tolist() == [-0.5] * 4
    r2 = torch.tensor([[1.0], [nan], [0.0], [0.0]])
    assert verdict_advantages(r2, w, torch.ones(4, dtype=torch.bool), 2, couples=True,
                              scale_rewards="none", invalid_advantage=-1.0).tolist() == [0.5, 0.0, -0.5, 0.0]
    with pytest.raises(ValueError, match="one validity flag per reward row"):
        verdict_advantages(r, w, valid[:3], 2, invalid_advantage=-1.0)
    with pytest.raises(ValueError, match="one validity flag per reward row"):
        verdict_advantages(r, w, None, 2, invalid_advantage=-1.0)
    assert verdict_advantages(r, w, None, 2, scale_rewards="none").tolist() == [0.5, -0.5, -0.5, 0.5]


# Positions: +1 first shown, -1 second shown, 0 none. Rollout i gets -strength x (mean position of the
# OTHER rollouts that name one) x its own position.
BALANCE_CASES = [
    # all +1: every other mean is +1 -> -1 each
    ([1, 1, 1, 1], 1.0, [-1, -1, -1, -1]),
    # even split: the others of a +1 are (+1, -1, -1) -> mean -1/3 -> +1/3; those of a -1 are
    # (+1, +1, -1) -> +1/3 -> +1/3 too: every rollout gets the same, so no push on the preference
    ([1, 1, -1, -1], 1.0, [1 / 3, 1 / 3, 1 / 3, 1 / 3]),
    # three +1, one -1: a +1 sees (+1, +1, -1) -> 1/3 -> -1/3; the -1 sees all +1 -> +1
    ([1, 1, 1, -1], 1.0, [-1 / 3, -1 / 3, -1 / 3, 1.0]),
    # zeros are not counted and get 0: a +1 sees (+1, -1) -> 0; the -1 sees (+1, +1) -> +2 x 1
    ([1, 0, 1, -1], 2.0, [0.0, 0.0, 0.0, 2.0]),
    # a lone position has no others -> 0; no positions -> 0
    ([0, 1, 0], 1.0, [0.0, 0.0, 0.0]),
    ([0, 0], 1.0, [0.0, 0.0]),
    # strength 0: off
    ([1, 1, -1], 0.0, [0.0, 0.0, 0.0]),
]


@pytest.mark.parametrize("positions,strength,expected", BALANCE_CASES)
def test_position_balance_hand_worked(positions, strength, expected):
    got = position_balance_advantages(torch.tensor(positions, dtype=torch.float), strength)
    assert got.tolist() == pytest.approx(expected)


def test_position_balance_rejects_negative_strength():
    with pytest.raises(ValueError, match="must be >= 0"):
        position_balance_advantages(torch.ones(2), -0.5)


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("q", [0.1, 0.5, 0.8, 0.97])
@pytest.mark.parametrize("strength", [0.5, 1.0])
def test_position_balance_is_the_gradient_of_a_penalty_on_the_imbalance(n, q, strength):
    # n independent valid rollouts, each naming the first-shown response with probability q = sigmoid(t).
    # Over every outcome, the expected policy gradient on t, E[sum_i b_i d/dt log p(s_i)], must be the
    # derivative of n x (-strength/2) (2q - 1)^2, i.e. -n strength (2q - 1) 2q(1 - q): a pull back to
    # q = 1/2 and nowhere else. (Leave-one-out makes b_i independent of s_i; with s_i in its own mean the
    # expectation would be biased.)
    expected_grad = 0.0
    for outcome in itertools.product((1.0, -1.0), repeat=n):
        prob = math.prod(q if s > 0 else 1 - q for s in outcome)
        b = position_balance_advantages(torch.tensor(outcome), strength).tolist()
        expected_grad += prob * sum(bi * ((1 - q) if s > 0 else -q) for bi, s in zip(b, outcome, strict=True))
    assert expected_grad == pytest.approx(-n * strength * (2 * q - 1) * 2 * q * (1 - q), abs=1e-9)
