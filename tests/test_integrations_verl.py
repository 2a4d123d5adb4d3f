"""``j1.integrations.verl``: the reward function called the way verl 0.6.1's batch reward manager
calls it (parity with ``j1 reward``), the pair sampler built the way verl builds a custom sampler, and
(slow) the reward run through verl's own BatchRewardManager in verl's own environment."""

from __future__ import annotations

import inspect
import json
import os
import pickle
import subprocess
from pathlib import Path

import pytest

from j1.cli.main import main
from j1.integrations.verl import BATCH_REWARD_KWARGS, VERL_VERSION, PairSampler, compute_score

A = "<think>compare</think><answer>[[A]]</answer>"
B = "<think>compare</think><answer>[[B]]</answer>"
INV = "A is better."  # no think block, no answer tag: invalid


def S(a, b):  # pas
    return f"<think>t</think><score_A>{a}</score_A> <score_B>{b}</score_B>"


def P(s):  # pos
    return f"<think>t</think><score>{s}</score>"


# (pair_id, order, label, completion), in a shuffled batch order (verl's balance_batch reorders rows).
# Hand-worked pav totals with the defaults (expected consistency, weights 1 and 1):
#   p1 (better A, 3 rollouts per order): AB [A, B, INV] -> correctness [1, 0, 0];
#      BA [B, B, A] -> B shown = original A -> [1, 1, 0].
#      consistency AB = c x mean(BA) = [2/3, 0, 0]; BA = c x mean(AB) = [1/3, 1/3, 0].
#   p2 (better B, 2 per order): AB [B, A] -> [1, 0]; BA [A, INV] -> A shown = original B -> [1, 0];
#      consistency AB [1 x 1/2, 0], BA [1 x 1/2, 0].
#   p3 (better A) has only order AB: correctness 1, consistency None (adds nothing).
PAV_TABLE = [
    ("p1", "AB", "A", A, 1 + 2 / 3), ("p2", "BA", "B", A, 1.5), ("p1", "BA", "A", B, 1 + 1 / 3),
    ("p3", "AB", "A", A, 1.0), ("p1", "AB", "A", B, 0.0), ("p2", "AB", "B", B, 1.5),
    ("p1", "BA", "A", B, 1 + 1 / 3), ("p2", "AB", "B", A, 0.0), ("p1", "AB", "A", INV, 0.0),
    ("p2", "BA", "B", INV, 0.0), ("p1", "BA", "A", A, 0.0), ("p3", "AB", "A", A, 1.0),
]
PAS_TABLE = [("q", "AB", "A", S(8, 2)), ("q", "BA", "A", S(8, 2)), ("q", "AB", "A", S(3, 3)), ("q", "BA", "A", INV),
             ("r", "BA", "B", S(1, 9))]
POS_TABLE = [("s", "A", "A", P(8)), ("s", "A", "A", P(4)), ("s", "B", "A", P(5)), ("s", "B", "A", INV),
             ("t", "A", "B", P(3))]


def _infos(table, fmt):
    return [{"pair_id": pid, "order": o, "label": lab, "format": fmt, "label_shown": None, "index": i}
            for i, (pid, o, lab, *_) in enumerate(table)]


def _j1_reward(tmp_path, table, fmt, *flags):
    """``j1 reward`` on the same rollouts: its totals, in file order."""
    src, out = tmp_path / f"{fmt}.jsonl", tmp_path / f"{fmt}.out.jsonl"
    src.write_text("".join(json.dumps({"pair_id": pid, "order": o, "label": lab, "completion": c}) + "\n"
                           for pid, o, lab, c, *_ in table), encoding="utf-8")
    assert main(["reward", "--input", str(src), "--output", str(out), "--format", fmt, *flags]) == 0
    return [json.loads(line)["rewards"]["total"] for line in out.read_text().splitlines()]


def _verl_call(table, fmt, **reward_kwargs):
    """compute_score called exactly as verl 0.6.1's BatchRewardManager.verify calls it (keywords only;
    its extra_infos carry ``rollout_reward_scores``, which must be ignored)."""
    infos = [{**info, "rollout_reward_scores": {}} for info in _infos(table, fmt)]
    return compute_score(data_sources=[f"j1/{fmt}"] * len(table), solution_strs=[row[3] for row in table],
                         ground_truths=[row[2] for row in table], extra_infos=infos, **reward_kwargs)


def test_pav_hand_worked():
    assert _verl_call(PAV_TABLE, "pav") == pytest.approx([row[4] for row in PAV_TABLE])


@pytest.mark.parametrize("fmt, table", [("pav", PAV_TABLE), ("pas", PAS_TABLE), ("pos", POS_TABLE)])
@pytest.mark.parametrize("flags", [(), ("--consistency", "index"), ("--consistency_weight", "0.5"),
                                   ("--correctness_weight", "2", "--consistency_weight", "3")])
def test_parity_with_j1_reward(tmp_path, fmt, table, flags):
    """Same rollouts, same options: compute_score's reward is j1 reward's total, rollout by rollout."""
    kwargs = {"consistency": "index"} if "index" in flags else {}
    if "--consistency_weight" in flags:
        kwargs["consistency_weight"] = float(flags[flags.index("--consistency_weight") + 1])
    if "--correctness_weight" in flags:
        kwargs["correctness_weight"] = float(flags[flags.index("--correctness_weight") + 1])
    assert _verl_call(table, fmt, **kwargs) == pytest.approx(_j1_reward(tmp_path, table, fmt, *flags))


def test_mixed_formats_score_as_separate_files(tmp_path):
    # MultiTask batches hold pas and pos rollouts: each format is rewarded as j1 reward rewards its file.
    both = [*PAS_TABLE, *POS_TABLE]
    infos = [*_infos(PAS_TABLE, "pas"), *_infos(POS_TABLE, "pos")]
    got = compute_score(["j1"] * len(both), [r[3] for r in both], [None] * len(both), infos)
    assert got == pytest.approx(_j1_reward(tmp_path, PAS_TABLE, "pas") + _j1_reward(tmp_path, POS_TABLE, "pos"))


def test_missing_extra_info_is_named():
    with pytest.raises(ValueError, match=r"rollout 1: extra_info has no 'order'"):
        compute_score(["j1"] * 2, [A, A], ["A", "A"],
                      [{"pair_id": "p", "order": "AB", "label": "A", "format": "pav"},
                       {"pair_id": "p", "label": "A", "format": "pav"}])
    with pytest.raises(ValueError, match=r"rollout 0: order 'A' is not valid for format 'pav'"):
        compute_score(["j1"], [A], ["A"], [{"pair_id": "p", "order": "A", "label": "A", "format": "pav"}])
    with pytest.raises(ValueError, match="consistency 'mean'"):
        compute_score(["j1"], [A], ["A"], _infos([("p", "AB", "A", A)], "pav"), consistency="mean")


def test_signature_is_verls_batch_call():
    # verl 0.6.1's BatchRewardManager.verify passes these four keywords plus custom_reward_function.reward_kwargs.
    params = inspect.signature(compute_score).parameters
    assert tuple(params)[:4] == BATCH_REWARD_KWARGS and VERL_VERSION == "0.6.1"
    assert any(p.kind is p.VAR_KEYWORD for p in params.values())
    assert pickle.loads(pickle.dumps(compute_score)) is compute_score  # ray ships it to reward workers


# --- the sampler ---------------------------------------------------------------------------------


def _rows(n_pairs, fmt="pav", drop=()):
    orders = ("AB", "BA") if fmt != "pos" else ("A", "B")
    rows = [{"extra_info": {"pair_id": f"p{k}", "order": o, "format": fmt}} for k in range(n_pairs) for o in orders]
    return [r for i, r in enumerate(rows) if i not in drop]


def _batches(sampler, batch_size):
    order = list(sampler)
    return [order[i : i + batch_size] for i in range(0, len(order) - batch_size + 1, batch_size)]  # drop_last


@pytest.mark.parametrize("batch_size", [2, 4, 6, 10])
@pytest.mark.parametrize("fmt", ["pav", "pos"])
def test_sampler_keeps_pairs_together_across_epochs(batch_size, fmt):
    rows = _rows(15, fmt)
    sampler = PairSampler(data_source=rows, data_config={"train_batch_size": batch_size, "shuffle": True, "seed": 3})
    epochs = [list(sampler) for _ in range(3)]
    for order in epochs:
        assert sorted(order) == list(range(30))
        for batch in _batches(iter(order), batch_size):
            ids = [rows[i]["extra_info"]["pair_id"] for i in batch]
            assert all(ids.count(p) == 2 for p in ids), f"a pair is split: {ids}"
    assert epochs[0] != epochs[1]  # reshuffled per epoch (seed + epoch)
    again = PairSampler(data_source=rows, data_config={"train_batch_size": batch_size, "shuffle": True, "seed": 3})
    assert list(again) == epochs[0]  # seeded


def test_sampler_without_shuffle_and_with_a_lost_row():
    # Row 3 (p1's BA) was filtered out (an overlong prompt): p1 cannot get consistency and is left out.
    rows = _rows(3, drop={3})
    sampler = PairSampler(rows, {"train_batch_size": 2, "shuffle": False, "seed": None})
    assert list(sampler) == [0, 1, 3, 4] and len(sampler) == 4


def test_sampler_reads_verl_dataset_frame_and_rejects_odd_batches():
    from datasets import Dataset

    class VerlLike:  # RLHFDataset keeps its rows in .dataframe (a datasets.Dataset)
        dataframe = Dataset.from_list(_rows(4))

    assert len(PairSampler(VerlLike(), {"train_batch_size": 4})) == 8
    with pytest.raises(ValueError, match="train_batch_size 3 would split a pair"):
        PairSampler(_rows(4), {"train_batch_size": 3})


# --- verl itself (its own environment) -----------------------------------------------------------

VERL_PYTHON = os.environ.get("J1_VERL_PYTHON", "/work/verl-venv/bin/python")
REPO = Path(__file__).resolve().parents[1]


def _has_verl() -> bool:
    if not Path(VERL_PYTHON).exists():
        return False
    probe = subprocess.run([VERL_PYTHON, "-c", "import verl.workers.reward_manager"], capture_output=True, timeout=300)
    return probe.returncode == 0


@pytest.mark.slow
def test_reward_through_verls_batch_reward_manager(tmp_path):
    """Export pairs, load them with verl's RLHFDataset, sample with PairSampler, tokenise scripted
    rollouts and reward them with verl's BatchRewardManager + get_custom_reward_fn (loading this
    file's compute_score by path, as a verl run does); the rewards equal j1 reward's."""
    if not _has_verl():
        pytest.skip(f"no verl at J1_VERL_PYTHON={VERL_PYTHON} (see results/scale/README.md to make one)")
    from j1.models import resolve_model

    assert main(["export", "verl", "--pairs", str(REPO / "src/j1/assets/data/heldout_mismatch.jsonl"),
                 "--format", "pav", "--out", str(tmp_path), "--max_pairs", "3", "--template", "compact"]) == 0
    parquet = tmp_path / "heldout_mismatch.parquet"
    completions = [A, B, INV, B]  # per prompt, rollout k gets completions[(row + k) % 4]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "OMP_NUM_THREADS": "1"}
    run = subprocess.run([VERL_PYTHON, str(REPO / "tests/verl_check.py"), str(parquet), resolve_model(None),
                          json.dumps(completions), str(tmp_path / "verl.json")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads((tmp_path / "verl.json").read_text())
    assert got["sampled_batches_whole_pairs"] and got["rows"] == 6
    table = [(r["pair_id"], r["order"], r["label"], r["completion"]) for r in got["rollouts"]]
    assert [r["completion"] for r in got["rollouts"]] == [r["decoded"] for r in got["rollouts"]]
    assert got["scores"] == pytest.approx(_j1_reward(tmp_path, table, "pav"))


def test_example_config_names_j1s_pieces():
    """examples/verl: the sampler and reward it names exist, its batch keeps pairs whole, and the launch
    script points verl at this module's file."""
    import importlib

    import yaml

    cfg = yaml.safe_load((REPO / "examples/verl/j1_pav_llama31_8b.yaml").read_text())
    sampler = cfg["data"]["sampler"]
    module = importlib.import_module(sampler["class_path"].removeprefix("pkg://"))
    assert getattr(module, sampler["class_name"]) is PairSampler
    assert cfg["data"]["train_batch_size"] % 2 == 0 and cfg["data"]["dataloader_num_workers"] == 0
    assert cfg["reward_model"]["reward_manager"] == "batch"
    assert getattr(module, cfg["custom_reward_function"]["name"]) is compute_score
    assert set(cfg["custom_reward_function"]["reward_kwargs"]) <= set(inspect.signature(compute_score).parameters)
    script = (REPO / "examples/verl/run_j1_pav_llama31_8b.sh").read_text()
    assert "custom_reward_function.path=\"$(pwd)/src/j1/integrations/verl.py\"" in script
    assert (REPO / "src/j1/integrations/verl.py").resolve() == Path(module.__file__).resolve()
