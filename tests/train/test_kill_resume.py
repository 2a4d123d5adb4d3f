"""``j1 train`` killed with SIGKILL at a random (seeded) point, then resumed from its last checkpoint
(issue 26): log.jsonl and the reward trace hold every step once, and the resumed run ends where an
uninterrupted run at the same seed ends: the same per-step log values and the same weights; ``j1 warmup``
too. Issue 46: checkpoints by time and on SIGTERM, and what a kill lost recorded, not counted as trained."""

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
from types import SimpleNamespace

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


# --- issue 46: checkpoints by time and on SIGTERM; honest accounting on resume -------------------

def _warmup_args(tiny_model, pair_file, out, *extra):
    return ["warmup", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir", str(out),
            "--heldout_pairs", "1", "--max_steps", str(STEPS), "--per_device_train_batch_size", "4",
            "--check_max_new_tokens", "4", "--check_samples", "1", "--save_steps", "1", "--seed", "7",
            "--lr_scheduler_type", "constant", *CPU_FLAGS, *extra]


@pytest.mark.slow
def test_warmup_sigkill_then_resume_equals_an_uninterrupted_run(tiny_model, pair_file, tmp_path):
    reference = tmp_path / "reference"
    assert main(_warmup_args(tiny_model, pair_file, reference)) == 0
    out = tmp_path / "killed"
    # Random(2): right after checkpoint-1 (0.14 s), well before the last step
    _kill_at_a_random_checkpoint(_warmup_args(tiny_model, pair_file, out), out, random.Random(2))
    assert not (out / "warmup.json").exists(), "the kill came after the run ended"
    assert main(_warmup_args(tiny_model, pair_file, out, "--resume_from_checkpoint", "latest")) == 0
    assert [r["step"] for r in _log(out) if "loss" in r] == list(range(1, STEPS + 1))
    got, want = _training_values(_log(out)), _training_values(_log(reference))
    assert len(got) == len(want) == STEPS
    for g, w in zip(got, want, strict=True):
        for key in ("loss", "grad_norm", "learning_rate"):
            assert math.isclose(g[key], w[key], rel_tol=1e-6, abs_tol=1e-9), (g["step"], key, g[key], w[key])
    ref_weights, weights = _weights(reference), _weights(out)
    assert all(bool((ref_weights[k] == weights[k]).all()) for k in ref_weights)
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "done" and 1 <= run["resumed_step"] < STEPS and run["global_step"] == STEPS


def test_sigterm_leaves_a_checkpoint_at_the_step_it_stopped(tiny_model, pair_file, tmp_path):
    """No step-based checkpoint would come (--save_steps 1000): SIGTERM saves one where training is."""
    out = tmp_path / "run"
    args = _args(tiny_model, pair_file, out, "--max_steps", "200", "--save_steps", "1000")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "j1.cli.main", *args], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 300
        while not (out / "progress.json").exists() or json.loads((out / "progress.json").read_text())["global_step"] < 2:
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.time() < deadline, "the run made no progress"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        err = proc.stderr.read().decode()
        proc.stderr.close()
    assert rc == 128 + signal.SIGTERM, err[-3000:]
    assert "stopped by SIGTERM at step" in err
    run = json.loads((out / "run.json").read_text())
    step = run["global_step"]
    assert run["status"] == "interrupted" and run["signal"] == "SIGTERM" and 2 <= step < 200
    from j1.train.recipe import latest_checkpoint

    assert latest_checkpoint(out) == str(out / f"checkpoint-{step}")
    assert json.loads((out / "progress.json").read_text())["global_step"] == step
    assert not (out / "final").exists()
    # resumed, it loses nothing: no interruption to record, and the clock goes on from the checkpoint's
    assert main(_args(tiny_model, pair_file, out, "--max_steps", str(step + 1), "--save_steps", "1000",
                      "--resume_from_checkpoint", "latest")) == 0
    again = json.loads((out / "run.json").read_text())
    assert again["resumed_step"] == step and again["interruptions"] == []
    assert again["trained_minutes"] > again["resumed_trained_minutes"] > 0
    assert [r["step"] for r in _log(out) if "loss" in r] == list(range(1, step + 2))


def test_time_based_checkpoints_are_pruned_by_save_total_limit(tiny_model, pair_file, tmp_path):
    out = tmp_path / "run"
    # every step is more than 0.001 min (60 ms) after the last save: a checkpoint at each step, 2 kept
    assert main(_args(tiny_model, pair_file, out, "--save_steps", "1000", "--save_minutes", "0.001",
                      "--save_total_limit", "2")) == 0
    assert sorted(p.name for p in out.glob("checkpoint-*")) == [f"checkpoint-{STEPS - 1}", f"checkpoint-{STEPS}"]
    from j1.train.resume import checkpoint_progress

    held = checkpoint_progress(out / f"checkpoint-{STEPS}")
    assert held["global_step"] == STEPS and held["trained_seconds"] > 0


ARGS = SimpleNamespace(device="cpu", gradient_accumulation_steps=4, output_dir="/nonexistent")


def test_timed_save_fires_minutes_after_the_last_save(monkeypatch):
    from transformers import TrainerControl, TrainerState

    from j1.train import stopping

    now = [0.0]
    monkeypatch.setattr(stopping.time, "monotonic", lambda: now[0])
    cb = stopping.StopAndSaveCallback(save_minutes=1.0)
    cb.on_train_begin(ARGS, TrainerState(), TrainerControl())
    fired = []
    for t in (30.0, 59.0, 61.0, 100.0, 120.0, 122.0):  # a save at 61 s restarts the count: the next at 122 s
        now[0] = t
        control = cb.on_step_end(ARGS, TrainerState(), TrainerControl())
        fired.append(control.should_save)
        if control.should_save:
            cb.on_save(ARGS, TrainerState(), control)
    cb.close()
    assert fired == [False, False, True, False, False, True]


def _signalled(monkeypatch, grace, micro_steps, save_took=None):
    """A StopAndSaveCallback that got SIGTERM at t=100 s, after a whole step of 4 micro-steps of
    ``micro_steps[0..3]`` seconds; returns (at which micro-step of the next step it stopped, control)."""
    import signal

    from transformers import TrainerControl, TrainerState

    from j1.train import stopping

    now = [0.0]
    monkeypatch.setattr(stopping.time, "monotonic", lambda: now[0])
    cb = stopping.StopAndSaveCallback(grace_seconds=grace)
    state = TrainerState()
    cb.on_train_begin(ARGS, state, TrainerControl())
    cb.close()  # the handlers are not needed: the signal is delivered by hand below
    for k, d in enumerate(micro_steps):  # the whole step before the signal
        now[0] += d
        (cb.on_step_end if k == 3 else cb.on_substep_end)(ARGS, state, TrainerControl())
    state.global_step = 1
    if save_took is not None:
        cb._save_took = save_took
    now[0] = 100.0
    cb._handle(signal.SIGTERM, None)
    for k, d in enumerate(micro_steps):
        now[0] += d
        if k == 3:
            return 4, cb.on_step_end(ARGS, state, TrainerControl())
        control = cb.on_substep_end(ARGS, state, TrainerControl())
        if control.should_training_stop:
            return k + 1, control
    raise AssertionError("never stopped")


@pytest.mark.parametrize("grace, save_took, stops_at", [
    # micro-steps of 30 (it generates), 10, 10, 10 s; the signal at t=100. After micro-step 1 (t=130)
    # the step ends at 160 (as the last step took: 10 + 10 + 10), then the save.
    (None, None, 4),   # no grace: at the end of the step
    (90, 5.0, 4),      # 160 + 5 <= 100 + 90: finish the step
    (70, 5.0, 4),      # 165 <= 170, just
    (60, 5.0, 1),      # 165 > 160: stop at t=130
    (90, None, 1),     # untimed save: half the grace (45) is kept for it: 160 + 45 > 190
])
def test_a_signal_stops_where_the_save_fits_the_grace(monkeypatch, grace, save_took, stops_at):
    at, control = _signalled(monkeypatch, grace, [30.0, 10.0, 10.0, 10.0], save_took)
    assert at == stops_at and control.should_training_stop
    # mid-step: checkpoint-1 is not in output_dir, so the steps done are saved
    assert control.should_save


def test_step_seconds_left_and_must_stop_now():
    from j1.train.stopping import must_stop_now, step_seconds_left

    assert step_seconds_left(1, 4, [30.0], [30.0, 10.0, 12.0, 14.0]) == 36.0  # the last step's micro-steps 2-4
    assert step_seconds_left(2, 4, [30.0, 10.0], []) == 20.0  # first step: this step's pace after generation
    assert step_seconds_left(1, 4, [30.0], []) == 90.0  # only the generating micro-step seen: its pace
    assert must_stop_now(0.0, 10.0, 5.0, 5.0) is False and must_stop_now(0.0, 10.0, 5.0, 5.1) is True


@pytest.mark.parametrize("previous, progress, checkpoint, want", [
    # killed at step 12 (162 s in) before any checkpoint: all of it lost, none counted as trained
    ([], {"global_step": 12, "trained_seconds": 162.0, "finished": False}, (0, 0.0),
     [{"reached_step": 12, "resumed_from_step": 0, "lost_steps": 12, "lost_minutes": 2.7}]),
    # killed at step 12, resumed from 10 (135 s): 2 steps, (162 - 135) / 60 = 0.45 min lost; history kept
    ([{"lost_steps": 3}], {"global_step": 12, "trained_seconds": 162.0, "finished": False}, (10, 135.0),
     [{"lost_steps": 3}, {"reached_step": 12, "resumed_from_step": 10, "lost_steps": 2, "lost_minutes": 0.45}]),
    # killed before its first step after resuming: nothing new lost
    ([{"lost_steps": 3}], {"global_step": 10, "trained_seconds": 135.2, "finished": False}, (10, 135.0),
     [{"lost_steps": 3}]),
    # the last run ended (done, time limit, signal): continuing it keeps the history, nothing new
    ([{"lost_steps": 3}], {"global_step": 20, "trained_seconds": 300.0, "finished": True}, (20, 300.0),
     [{"lost_steps": 3}]),
    # a fresh start after a finished run, or in a new folder: a new history
    ([{"lost_steps": 3}], {"global_step": 20, "trained_seconds": 300.0, "finished": True}, (0, 0.0), []),
    ([], None, (0, 0.0), []),
])
def test_interruptions(previous, progress, checkpoint, want):
    from j1.train.resume import interruptions

    held = {"global_step": checkpoint[0], "trained_seconds": checkpoint[1]}
    assert interruptions(previous, progress, held) == want


def test_a_torn_trainer_state_is_not_a_checkpoint(tmp_path):
    from j1.train.recipe import latest_checkpoint

    for step, text in ((4, '{"global_step": 4}'), (6, '{"global_step": 6, "log_hi')):  # 6: killed mid-write
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text(text)
    assert latest_checkpoint(tmp_path) == str(tmp_path / "checkpoint-4")
