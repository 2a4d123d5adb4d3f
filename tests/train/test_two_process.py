"""Two CPU processes through ``accelerate launch --multi_gpu --num_processes 2`` + ``--use_cpu``: every reward call on every
process sees both orders of each of its pairs, with all their rollouts, and the processes share
the pairs out without overlap. (The same logic, without processes, is in test_pairing.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
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
