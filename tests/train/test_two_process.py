"""Two CPU processes through ``accelerate launch --multi_gpu --num_processes 2`` + ``--use_cpu`` (torchrun,
gloo): every reward call on every process sees both orders of each of its pairs, with all their
rollouts, and the processes share the pairs out without overlap. (The same logic, without processes,
is in test_pairing.py.) Issue 52: the processes stop, save and resume alike when only one of them gets
a signal, when their clocks disagree, and when only one can read which checkpoint ``latest`` is
(``skewed_rank.py`` skews one process's view)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import CPU_FLAGS

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port nothing listens on now (the OS picks it)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_two_processes_keep_pairs_together(tiny_model, tmp_path):
    from tiny import write_pairs

    pairs = write_pairs(tmp_path / "pairs.jsonl", n=16)
    out = tmp_path / "run"
    accelerate = Path(sys.executable).parent / "accelerate"
    cmd = [
        # `--cpu --num_processes 2` starts ONE process in accelerate 1.15 unless MPI is set up; the
        # torchrun launcher (--multi_gpu) with the trainer's --use_cpu gives 2 gloo CPU processes.
        # A free port, not torchrun's fixed default 29500, which another job on the machine may hold.
        str(accelerate), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no",
        "--main_process_port", str(free_port()),
        "--dynamo_backend", "no", "-m", "j1.cli.main", "train",
        "--train_file", str(pairs), "--model_name_or_path", str(tiny_model), "--output_dir", str(out),
        # G = 3 rollouts; 6 rows per micro-batch, 2 accumulation steps (= steps_per_generation): one
        # generation batch of 12 rows = 4 prompts = 2 pairs per process per optimizer step
        "--num_generations", "3", "--per_device_train_batch_size", "6", "--gradient_accumulation_steps", "2",
        "--max_completion_length", "6", "--max_steps", "4", "--save_strategy", "no", "--reward_trace", "true",
        # couples + invalid_advantage + position_balance: the validity flags and named positions are
        # gathered from both processes too
        "--formulation", "pavs", "--consistency", "index", "--advantage_groups", "couple", "--invalid_advantage", "-1",
        "--position_balance", "1",
        *CPU_FLAGS,
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]

    calls = {rank: [json.loads(x) for x in (out / f"reward_trace-{rank}.jsonl").read_text().splitlines()]
             for rank in (0, 1)}
    assert len(calls[0]) == len(calls[1]) == 4  # one generation (and reward call) per optimizer step
    seen = set()
    for k in range(4):
        per_rank = {}
        for rank in (0, 1):
            call = calls[rank][k]
            assert call["process"] == rank
            rows = defaultdict(list)
            for pid, order, fmt in call["rows"]:
                assert fmt == "pavs"
                rows[pid].append(order)
            # both orders of every pair, G = 3 rollouts each, in this very call
            assert all(sorted(o) == ["AB"] * 3 + ["BA"] * 3 for o in rows.values()), call
            assert len(rows) == 2
            per_rank[rank] = set(rows)
        assert not per_rank[0] & per_rank[1]  # the processes judged different pairs
        seen |= per_rank[0] | per_rank[1]
    assert seen == {f"p{i}" for i in range(16)}  # 4 steps x 2 processes x 2 pairs = one epoch
    logs = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]
    steps = [r for r in logs if "loss" in r]
    assert len(steps) == 4 and all(r["j1/missing_partner"] == 0.0 for r in steps)


# --- issue 52: ranks that agree ---------------------------------------------------------------------

SKEWED = Path(__file__).resolve().parent / "skewed_rank.py"


def _launch(tiny_model, pairs, out, *extra, skew="", grace=None, popen=False, timeout=300):
    """``j1 train`` on 2 gloo processes (a tiny model, G = 2, 2 micro-steps per optimizer step) through
    ``skewed_rank.py``; rank 1's view skewed by ``skew``; ``grace``: torchrun's shutdown timeout."""
    accelerate = Path(sys.executable).parent / "accelerate"
    cmd = [str(accelerate), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
           "--mixed_precision", "no", "--main_process_port", str(free_port()), "--dynamo_backend", "no", str(SKEWED),
           "train", "--train_file", str(pairs), "--model_name_or_path", str(tiny_model), "--output_dir", str(out),
           "--num_generations", "2", "--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "2",
           "--max_completion_length", "6", "--seed", "3", *CPU_FLAGS, *extra]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(REPO / "src"),
           "J1_TEST_SKEW": skew}
    if grace is not None:
        env["TORCH_ELASTIC_SHUTDOWN_TIMEOUT"] = str(grace)
    # A session of its own: a test that gives up kills the launcher and its workers together.
    proc = subprocess.Popen(cmd, cwd=out.parent, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    if popen:
        return proc
    try:
        _, err = proc.communicate(timeout=timeout)
    finally:
        _kill_group(proc)
    return subprocess.CompletedProcess(cmd, proc.returncode, "", err)


def _kill_group(proc) -> None:
    """SIGKILL what is left of a launch (the launcher and its workers), if anything is."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _worker(launcher_pid: int, rank: int):
    """The training process of ``rank`` under the launcher (torchrun's agent runs inside it)."""
    import psutil

    for child in psutil.Process(launcher_pid).children(recursive=True):
        try:
            if child.environ().get("RANK") == str(rank) and any("skewed_rank.py" in a for a in child.cmdline()):
                return child
        except psutil.Error:
            continue
    return None


def _saved_by_both(checkpoint: Path) -> bool:
    """Both processes took part in the save: each writes its own RNG state into the checkpoint."""
    return (checkpoint / "rng_state_0.pth").exists() and (checkpoint / "rng_state_1.pth").exists()


@pytest.mark.slow  # two launches: 40 s alone, over 90 s on a busy machine
def test_a_signal_to_one_process_stops_both_and_latest_is_rank_0s(tiny_model, tmp_path):
    """SIGTERM to rank 1 alone: both stop at the same step and save it together (before, rank 1 left
    and rank 0 waited in the next collective). Then a resume from ``latest`` where rank 1's storage
    shows only the oldest checkpoint: both continue from the checkpoint rank 0 names."""
    from tiny import write_pairs

    pairs = write_pairs(tmp_path / "pairs.jsonl", n=16)
    out = tmp_path / "run"
    proc = _launch(tiny_model, pairs, out, "--max_steps", "200", "--save_steps", "2", "--reward_trace", "true",
                   popen=True)
    try:
        deadline = time.time() + 300
        while not (out / "progress.json").exists() or json.loads((out / "progress.json").read_text())["global_step"] < 3:
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            assert time.time() < deadline, "the run made no progress"
            time.sleep(0.1)
        worker = _worker(proc.pid, 1)
        assert worker is not None
        worker.send_signal(signal.SIGTERM)
        proc.wait(timeout=180)  # before issue 52: rank 0 waited forever for rank 1
    finally:
        _kill_group(proc)
        err = proc.stderr.read()
        proc.stderr.close()
    assert proc.returncode != 0 and "stopped by SIGTERM at step" in err, err[-3000:]
    run = json.loads((out / "run.json").read_text())
    step = run["global_step"]
    assert run["status"] == "interrupted" and run["signal"] == "SIGTERM" and 3 <= step < 200
    assert _saved_by_both(out / f"checkpoint-{step}")
    assert json.loads((out / f"checkpoint-{step}" / "trainer_state.json").read_text())["global_step"] == step
    assert (out / "checkpoint-2").exists()  # an older checkpoint for rank 1's stale view below

    # Resume: rank 1's `latest` would be checkpoint-2; rank 0's, checkpoint-{step}, is the one both take.
    done = _launch(tiny_model, pairs, out, "--max_steps", str(step + 1), "--save_steps", "2", "--reward_trace", "true",
                   "--resume_from_checkpoint", "latest", skew="stale_latest")
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "done" and run["resumed_step"] == step and run["global_step"] == step + 1
    assert [r["step"] for r in _rows(out / "log.jsonl") if "loss" in r] == list(range(1, step + 2))
    for rank in (0, 1):  # each process redid nothing and skipped nothing: one reward call per step
        assert [r["step"] for r in _rows(out / f"reward_trace-{rank}.jsonl")] == list(range(step + 1)), rank


def test_skewed_clocks_stop_and_save_both_processes_alike(tiny_model, tmp_path):
    """Rank 1's clock runs 50x fast: by it, every step is past --save_minutes and the time box ends
    after a few steps, while rank 0 sees neither. Both save at the same steps and stop at the same
    one (before, rank 1 saved and stopped alone, and the run hung in the next collective)."""
    from tiny import write_pairs

    pairs = write_pairs(tmp_path / "pairs.jsonl", n=16)
    out = tmp_path / "run"
    # rank 1: a step of ~0.5 s reads as ~25 s, over --save_minutes 0.2 (12 s); the box of 1.5 min (90 s)
    # ends within a few steps. Rank 0 alone would save after 12 s and stop after 90 s, or at step 40.
    done = _launch(tiny_model, pairs, out, "--max_steps", "40", "--save_steps", "1000", "--save_minutes", "0.2",
                   "--max_minutes", "1.5", skew="clock=50")
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads((out / "run.json").read_text())
    step = run["global_step"]
    assert run["status"] == "done" and 1 <= step < 40, step
    assert [r["step"] for r in _rows(out / "log.jsonl") if "loss" in r] == list(range(1, step + 1))
    saved = sorted(int(p.name.split("-")[1]) for p in out.glob("checkpoint-*"))
    assert saved == list(range(1, step + 1))  # every step saved, as rank 1's clock asked
    assert all(_saved_by_both(out / f"checkpoint-{k}") for k in saved)
    assert (out / "final" / "judge.json").exists()


@pytest.mark.slow  # ~35 s alone, but it times micro-steps against an 8 s timeout: not beside other tests
def test_sigterm_to_torchrun_saves_within_its_shutdown_timeout(tiny_model, tmp_path):
    """torchrun forwards a SIGTERM to its workers and SIGKILLs them TORCH_ELASTIC_SHUTDOWN_TIMEOUT seconds
    later. A step here is 8 micro-steps (~20 s on 2 shared cores), the timeout 8 s, and the signal comes
    as a step begins: finishing the step would be killed (as before issue 52: no checkpoint, run.json
    left running). j1 stops at the next micro-step and saves the optimizer steps done, before the kill."""
    from tiny import write_pairs

    pairs = write_pairs(tmp_path / "pairs.jsonl", n=64)
    out = tmp_path / "run"
    proc = _launch(tiny_model, pairs, out, "--max_steps", "50", "--save_steps", "1000",
                   "--gradient_accumulation_steps", "8", grace=8, popen=True)
    try:
        deadline = time.time() + 300
        while not (out / "progress.json").exists() or json.loads((out / "progress.json").read_text())["global_step"] < 1:
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            assert time.time() < deadline, "the run made no progress"
            time.sleep(0.05)
        signalled = time.time()
        proc.send_signal(signal.SIGTERM)  # to the launcher: torchrun's agent runs in it
        proc.wait(timeout=120)
        took = time.time() - signalled
    finally:
        _kill_group(proc)
        err = proc.stderr.read()
        proc.stderr.close()
    assert "forcefully exiting" not in err, err[-3000:]  # torchrun had to SIGKILL a worker
    assert "stopping mid-step" in err and "stopped by SIGTERM at step" in err, err[-3000:]
    assert took < 8 + 5, took
    run = json.loads((out / "run.json").read_text())
    step = run["global_step"]
    assert run["status"] == "interrupted" and run["signal"] == "SIGTERM" and step >= 1
    assert _saved_by_both(out / f"checkpoint-{step}")
    assert json.loads((out / f"checkpoint-{step}" / "trainer_state.json").read_text())["global_step"] == step
