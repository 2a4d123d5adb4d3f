"""``j1 train`` killed with SIGKILL at a random (seeded) point, then resumed from its last checkpoint
(issue 26): log.jsonl and the reward trace hold every step once, and the resumed run ends where an
uninterrupted run at the same seed ends: the same per-step log values and the same weights."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import CPU_FLAGS

from j1.cli.main import main

REPO = Path(__file__).resolve().parents[2]
STEPS = 4
# Values that measure the machine, not the training: they differ between any two runs.
CLOCK_KEYS = ("time", "runtime", "per_second", "flos")


def _args(tiny_model, pair_file, out, *extra):
    return ["train", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir", str(out),
            "--num_generations", "2", "--per_device_train_batch_size", "4", "--max_completion_length", "8",
            "--max_steps", str(STEPS), "--save_steps", "1", "--temperature", "1.0", "--seed", "7", "--reward_trace", "true",
            *CPU_FLAGS, *extra]


def _log(out: Path, name: str = "log.jsonl") -> list[dict]:
    return [json.loads(line) for line in (out / name).read_text().splitlines() if line.strip()]


def _training_values(rows: list[dict]) -> list[dict]:
    """The per-step rows without the clock-dependent values."""
    return [{k: v for k, v in r.items() if not any(c in k for c in CLOCK_KEYS)} for r in rows if "loss" in r]


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _kill_at_a_random_checkpoint(args: list[str], out: Path, rng: random.Random) -> int:
    """Start ``j1 train`` in a subprocess; SIGKILL it a random moment after a random checkpoint
    (1 .. STEPS-1) is complete. Returns the checkpoint it waited for."""
    target = rng.randint(1, STEPS - 1)
    jitter = rng.uniform(0.0, 1.5)  # after the checkpoint: mid-step, mid-log or mid-save of the next
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "j1.cli.main", *args], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 600
        while not (out / f"checkpoint-{target}" / "trainer_state.json").exists():
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.time() < deadline, "the run made no progress"
            time.sleep(0.05)
        time.sleep(jitter)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
    return target


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_sigkill_then_resume_equals_an_uninterrupted_run(tiny_model, pair_file, tmp_path, seed):
    reference = tmp_path / "reference"
    assert main(_args(tiny_model, pair_file, reference)) == 0

    out = tmp_path / "killed"
    waited_for = _kill_at_a_random_checkpoint(_args(tiny_model, pair_file, out), out, random.Random(seed))
    assert not (out / "final").exists() or waited_for == STEPS, "the kill came after the run ended"
    assert main(_args(tiny_model, pair_file, out, "--resume_from_checkpoint", "latest")) == 0

    steps = [r["step"] for r in _log(out) if "loss" in r]
    assert steps == list(range(1, STEPS + 1))  # nothing lost, nothing repeated
    # the reward trace too: one reward call per step (traced with the step before it), the same pairs
    trace = _log(out, "reward_trace-0.jsonl")
    assert [r["step"] for r in trace] == list(range(STEPS))
    assert trace == _log(reference, "reward_trace-0.jsonl")
    assert json.loads((out / "run.json").read_text())["global_step"] == STEPS
    got, want = _training_values(_log(out)), _training_values(_log(reference))
    assert [sorted(r) for r in got] == [sorted(r) for r in want]
    for g, w in zip(got, want, strict=True):
        for key, value in w.items():
            same = value == g[key] or (isinstance(value, float) and math.isclose(value, g[key], rel_tol=1e-6,
                                                                                   abs_tol=1e-9))
            assert same, (g["step"], key, g[key], value)
    ref_weights, weights = _weights(reference / "final"), _weights(out / "final")
    assert ref_weights.keys() == weights.keys()
    assert all(bool((ref_weights[k] == weights[k]).all()) for k in ref_weights)


@pytest.mark.parametrize("global_step,kept", [
    (0, []),  # a fresh run in the same folder starts the file anew
    (2, [0, 1]),  # resumed at checkpoint 2: the calls for steps 3 and 4 (traced as 2 and 3) are redone
    (9, [0, 1, 2, 3]),
])
def test_reopen_for_resume_drops_what_the_resumed_run_redoes(tmp_path, global_step, kept):
    from j1.train.callbacks import reopen_for_resume

    path = tmp_path / "reward_trace-0.jsonl"
    path.write_text("".join(json.dumps({"step": s}) + "\n" for s in range(4)) + '{"step": 4, "ro')  # torn tail
    with reopen_for_resume(path, global_step, lambda row: row["step"] < global_step) as out:
        out.write({"step": 99})
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [*kept, 99]
