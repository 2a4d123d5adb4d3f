"""End to end on the embedded SmolLM2-135M with tiny budgets: the real CLI in a subprocess, and
the runner on the session's shared local backend (pointwise)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from j1.cli.common import parse
from j1.eval.runner import run_eval
from j1.eval.spec import EvalSpec

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "eval"


def test_cli_eval_then_score_on_the_embedded_model(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "j1.cli.main", "eval", "--benchmark", "generic", "--data", str(FIX / "generic.jsonl"),
           "--format", "pav", "--samples", "2", "--temperature", "1.0", "--limit", "2", "--max-new-tokens", "16",
           "--out", str(out)]
    # One torch thread: on a shared 2-core box the default spin-waiting threads are several times slower.
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = json.loads(proc.stdout)
    assert printed["n"] == 2 and printed["benchmark"] == "generic"
    assert "prompt/s" in proc.stderr or "s/prompt" in proc.stderr  # the tqdm bar with its rate
    m = json.loads((out / "metrics.json").read_text())
    assert list(m["scaling"]) == ["1", "2"] and 0 <= m["overall"]["invalid_rate"] <= 1
    lines = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert len(lines) == 4 and all(len(x["texts"]) == 2 for x in lines)  # 2 pairs x 2 orders, 2 samples each
    run = json.loads((out / "run.json").read_text())
    assert run["model"] == "SmolLM2-135M-Instruct" or run["model"]
    assert run["git"]["revision"] and run["usage"]["completion_tokens"] > 0

    (out / "metrics.json").unlink()
    proc = subprocess.run([sys.executable, "-m", "j1.cli.main", "score", str(out)], capture_output=True, text=True,
                          timeout=300, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((out / "metrics.json").read_text()) == m


def test_pointwise_run_on_the_shared_local_backend(tmp_path, embedded_backend):
    cfg = parse(EvalSpec, ["--benchmark", "rmbench", "--data", str(FIX / "rmbench.json"), "--format", "pos",
                             "--limit", "1", "--max-new-tokens", "16", "--out", str(tmp_path / "rm"),
                             "--progress", "false"], prog="j1 eval")
    m = run_eval(cfg, backend=embedded_backend)
    assert m["n"] == 1 and {"easy", "normal", "hard"} <= set(m["overall"])
    lines = (tmp_path / "rm" / "judgments.jsonl").read_text().splitlines()
    assert len(lines) == 6  # each of the 6 responses scored once
