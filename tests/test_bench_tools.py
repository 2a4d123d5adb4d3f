"""The arithmetic of the speed diagnostics: bench_decode's bounds and the GRPO step's phase split."""

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _module(path: str):
    spec = importlib.util.spec_from_file_location(Path(path).stem, REPO / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("rows", "expected"), [
    # prefill floor 3 s + 48 later tokens x 0.125 s = 9 s for 32 judgments; j1's prefill 2000 / 400 = 5 s.
    ({"j1": {"prefill_tok_s": 400.0}}, {"judgments_ceiling": 32 / 9, "j1_prefill_s": 5.0,
                                        "judgments_ceiling_j1_prefill": 32 / 11}),
    ({}, {"judgments_ceiling": 32 / 9}),  # no j1 row: the floors' bound only
])
def test_decode_floor_bounds(rows, expected):
    floor = {"prefill_floor_s": 3.0, "step_floor_s": 0.125, "prompt_tokens": 2000}
    got = _module("bench/bench_decode.py").floor_lines(floor, rows, judgments=32, new_tokens=49)
    assert got == pytest.approx(expected)


def test_train_step_phases():
    lines = [
        "main (x.py:1);_inner_training_loop (t.py:2);training_step (t.py:3);_generate (trl.py:4);"
        "generate (j1/backends/decode.py:185) 7",
        "main (x.py:1);training_step (t.py:3);compute_loss (t.py:5);backward (torch.py:6) 3",
        "main (x.py:1);training_step (t.py:3);compute_loss (t.py:5);prefix_cache (j1/backends/sharedprefix.py:57) 2",
        "main (x.py:1);training_step (t.py:3);compute_loss (t.py:5);forward (m.py:7) 5",
        "main (x.py:1);from_pretrained (h.py:8) 4",
        "main (x.py:1);training_step (t.py:3);log (t.py:9) 1",
        "not a sample line",
    ]
    assert _module("results/bench/train_step_phases.py").phases(lines) == {
        "generation (j1.backends.decode, the rollouts)": 7,
        "loss backward": 3,
        "loss forward: prompts (encoded once each)": 2,
        "loss forward: completions and LM head": 5,
        "outside the step loop": 4,
        "other, in the step": 1,
    }


def test_gpu_smoke_reads_the_serve_benchmark(tmp_path, monkeypatch):
    """The GPU smoke run's serving step reads bench_serve.py's JSON (here a committed CPU run's)."""
    smoke = _module("bench/gpu_smoke.py")
    measured = (REPO / "results/serve/bench_local.json").read_text()
    calls = []

    def fake_bench(cmd, check):
        calls.append(cmd)
        Path(cmd[cmd.index("--json") + 1]).write_text(measured)

    monkeypatch.setattr(smoke.subprocess, "run", fake_bench)
    serve = smoke.serve_load(tmp_path, 30.0)
    assert calls[0][calls[0].index("--target") + 1] == "local" and "30.0" in calls[0]
    assert serve["speedup"] == 1.05 and serve["goal"] == 5.0
    assert (serve["sequential_answered"], serve["concurrent_answered"]) == (12, 32)
    assert (serve["concurrent_judgments_per_s"], serve["sequential_judgments_per_s"]) == (0.0524, 0.0499)
    assert smoke.serve_line(serve).strip() == (
        "j1 serve on the GPU, 32 clients: 0.0524 judgments/s against 0.0499 one at a time, "
        "**1.05x** (goal 5.0x); dropped 0, wrong 0")
