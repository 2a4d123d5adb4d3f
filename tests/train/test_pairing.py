"""Fast tests of the pairing logic: the sampler, accelerate's per-process sharding of it, the
geometry check, the unit check and pair-level advantages (hand-worked)."""

from __future__ import annotations

import pytest
import torch
from accelerate.data_loader import BatchSamplerShard
from torch.utils.data import BatchSampler

from j1.train.sampler import PairRepeatSampler, check_pair_geometry
from j1.train.trl_grpo import check_units, pair_advantages


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
