"""bench/gpu_check.sh --self-test: the GPU check's steps at tiny shapes on the CPU write every section of
gpu.json with numbers, the table, and at most 8 files (what comes back from the GPU machine); the parts
that carry the weights split, stage and reassemble through gpu_check.sh (a missing and a corrupt part each
stop with one line); the real judge's answers on 2 of make demo's pairs are the committed CPU reference's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SECTIONS = ("parts", "setup", "judge", "pytest", "train_smoke", "decode", "serve", "train_8b")


def _numbers(obj) -> int:
    """How many numbers (not bools) ``obj`` holds, at any depth."""
    if isinstance(obj, bool):
        return 0
    if isinstance(obj, int | float):
        return 1
    if isinstance(obj, dict):
        return sum(_numbers(v) for v in obj.values())
    if isinstance(obj, list):
        return sum(_numbers(v) for v in obj)
    return 0


def test_self_test_writes_every_section(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(["bash", str(REPO / "bench" / "gpu_check.sh"), "--self-test", str(out)],
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8 and {"gpu.json", "gpu.md"} <= set(files), files
    report = json.loads((out / "gpu.json").read_text())
    assert report["mode"] == "self-test" and report["device"] == "cpu"
    for name in SECTIONS:
        section = report["sections"][name]
        assert section["device"] == "cpu", name
        assert _numbers(section) > 0, (name, section)
    # pytest's counts are numbers even when its short timeout cuts it; the benches' sections carry their JSON
    for name in ("train_smoke", "train_8b", "decode", "serve"):
        assert report["sections"][name]["status"] == "ok", (name, report["sections"][name].get("tail"))
    for name in ("train_smoke", "train_8b"):
        result = report["sections"][name]["result"]
        assert result["device"] == "cpu" and result["ratio_shared_over_plain_wall"] > 0
    assert report["sections"]["train_8b"]["result"]["use_peft"] and report["sections"]["train_8b"]["result"]["random_weights"]
    assert report["sections"]["decode"]["result"]["device"] == "cpu"
    serve = report["sections"]["serve"]["result"]["results"]["local"]
    assert serve["device"] == "cpu" and set(serve["concurrent_by_clients"]) == {"32", "64"}
    parts = report["sections"]["parts"]
    assert parts["status"] == "ok" and parts["parts"] == 3 and parts["reassembled_same"] and parts["unpacked_same"]
    assert "not staged yet (missing: 2)" in parts["missing_part"]["line"]
    assert "the part is corrupt" in parts["corrupt_part"]["line"] and parts["corrupt_part"]["returncode"] == 2
    judge = report["sections"]["judge"]
    assert judge["status"] == "ok", judge.get("tail")
    run = judge["result"]["runs"]["float32"]
    assert (run["device"], run["dtype"], run["pairs"]) == ("cpu", "float32", 2)
    assert set(run["metrics"]["groups"]) == {"same source", "other sources"}
    # the CPU's float32 answers on the same 4 judgments: the committed reference reproduces here
    assert run["versus_cpu"]["compared"] == 4 and run["versus_cpu"]["same_text"] == 4, run["versus_cpu"]
    assert judge["result"]["weights_sha256"] == judge["result"]["reference_weights_sha256"]
    table = (out / "gpu.md").read_text()
    assert "| check | measured | goal | met? |" in table and len(report["checks"]) >= 10
    assert all(c["met"] == "yes" for c in report["checks"] if c["check"].startswith(("parts:", "j1-135m on")))
