"""``j1 synth chat`` (on the scripted HTTP server) and ``j1 synth mix`` killed with SIGKILL at a random
(seeded) point, then rerun (issue 26): nothing the killed run finished is lost or written twice, no
file is left half-written, and the result equals an uninterrupted run's."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer

from j1.cli.main import main

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "OPENAI_API_KEY": "test", "PYTHONPATH": str(REPO / "src")}


def _kill_when(argv: list[str], ready: Callable[[], bool], jitter: float) -> None:
    """Run ``j1 ARGV`` in a subprocess; SIGKILL it ``jitter`` seconds after ``ready()`` holds (or let it
    end, if it ends first)."""
    proc = subprocess.Popen([sys.executable, "-m", "j1.cli.main", *argv], cwd=REPO, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 300
        while not ready() and proc.poll() is None:
            assert time.time() < deadline, "the run made no progress"
            time.sleep(0.02)
        time.sleep(jitter)
        assert proc.poll() in (None, 0), proc.stderr.read().decode()[-3000:]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stderr.close()


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# --- synth chat -----------------------------------------------------------------------------------

REWRITE = "Original request:\n"


def chat_reply(messages, index, body):
    """Deterministic: x' swaps the animal; the answer echoes the request."""
    text = messages[-1]["content"]
    if REWRITE in text:
        return text.split(REWRITE, 1)[1].replace("cats", "dogs" if index == 0 else "owls")
    return "Answer to: " + text


PERMISSIVE = ["--lexical_min", "0", "--embedding_min", "0", "--embedding_max", "1", "--reword_embedding", "1"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_synth_chat_killed_at_a_random_point(tmp_path, seed):
    rng = random.Random(seed)
    n = 12
    src = tmp_path / "prompts.jsonl"
    src.write_text("".join(json.dumps({"prompt": f"Write poem number {k} about cats."}) + "\n" for k in range(n)))
    with FakeOpenAIServer(chat_reply) as server:
        ref = tmp_path / "ref.jsonl"
        args = ["--source", str(src), "--chunk_size", "3", "--concurrency", "2", "--progress", "false",
                "--base-url", server.base_url, *PERMISSIVE]
        assert main(["synth", "chat", "--out", str(ref), *args]) == 0
        out = tmp_path / "chat.jsonl"
        after = rng.randint(0, n - 1)  # kill once this many pairs are written, plus up to half a second
        _kill_when(["synth", "chat", "--out", str(out), *args], lambda: len(_lines(out)) >= after,
                   rng.uniform(0.0, 0.5))
        before = [line for line in _lines(out) if line.endswith("}")]  # a torn last line may be cut
        assert main(["synth", "chat", "--out", str(out), *args]) == 0
    pairs = _lines(out)
    ids = [json.loads(line)["id"] for line in pairs]
    assert len(ids) == len(set(ids)) == n  # nothing lost, nothing twice
    assert pairs[: len(before)] == before  # what the killed run wrote stays as it was
    assert sorted(pairs) == sorted(_lines(ref))  # the same pairs as an uninterrupted run
    assert _lines(out.with_name("chat.dropped.jsonl")) == []
    stats = json.loads(out.with_name("chat.stats.json").read_text())
    assert (stats["pairs"], stats["done"]) == (n, n)
    assert not list(tmp_path.glob(".*.tmp"))  # no temp file of a side file the kill interrupted


# --- synth mix ------------------------------------------------------------------------------------

MIX_FILES = ("train.jsonl", "heldout.jsonl", "mix.stats.json")


def _mix_outputs(folder: Path) -> dict:
    found = {name: (folder / name).read_text() for name in MIX_FILES if (folder / name).exists()}
    if "mix.stats.json" in found:  # the same but for the folder it names
        found["mix.stats.json"] = {k: v for k, v in json.loads(found["mix.stats.json"]).items() if k != "out_dir"}
    return found


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_synth_mix_killed_at_a_random_point(tmp_path, seed):
    rng = random.Random(seed)
    inputs = []
    for kind, n in (("chat", 6000), ("math", 3000)):
        path = tmp_path / f"{kind}.jsonl"
        path.write_text("".join(json.dumps({"id": f"{kind}{i}", "prompt": f"{kind} prompt {i % 4000}",
                                            "chosen": "good " * 20, "rejected": "bad " * 20, "kind": kind,
                                            "source": path.name, "meta": {}}) + "\n" for i in range(n)))
        inputs.append(f"{path}:{n // 2}")
    args = ["synth", "mix", "--inputs", *inputs, "--heldout_fraction", "0.1", "--seed", "3"]
    ref = tmp_path / "ref"
    assert main([*args, "--out_dir", str(ref)]) == 0
    want = _mix_outputs(ref)

    out = tmp_path / "mix"
    # kill while a file is being written or between two files: its temp file, or the file itself, has appeared
    name = rng.choice(["train.jsonl", "heldout.jsonl", "mix.stats.json"])
    _kill_when([*args, "--out_dir", str(out)],
               lambda: out.is_dir() and any(p.name.startswith((name, f".{name}.")) for p in out.iterdir()),
               rng.uniform(0.0, 0.2))
    # every output is whole or absent (written to a temp file and renamed), never half-written
    for name, content in _mix_outputs(out).items():
        assert content == want[name], name
    assert main([*args, "--out_dir", str(out)]) == 0
    assert _mix_outputs(out) == want
    assert sorted(p.name for p in out.iterdir()) == sorted([*MIX_FILES, "mix.run.json"])  # no temp file left
