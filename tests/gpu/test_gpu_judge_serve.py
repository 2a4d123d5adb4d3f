"""``j1 judge`` and ``j1 serve`` on the device. Neither has a device flag: the local backend takes cuda when
there is one, which the spy on generation confirms for ``j1 judge`` (run in this process); ``j1 serve``
runs as its own process on a free loopback port and answers as ``j1 judge`` does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from serve.serving import free_port, http

from j1.cli.main import main
from j1.pairs import Verdict

pytestmark = pytest.mark.gpu

PAIR = {"prompt": "What is 2 + 3?", "response_a": "5", "response_b": "6"}


def _judge(model, capsys, *extra) -> dict:
    capsys.readouterr()
    assert main(["judge", "--model", str(model), "--prompt", PAIR["prompt"], "--response-a", PAIR["response_a"],
                 "--response-b", PAIR["response_b"], "--max-new-tokens", "12", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_judge_runs_on_the_device_and_repeats(tiny_model, device, generations, capsys):
    greedy = _judge(tiny_model, capsys)
    assert generations.on(device)
    assert [o["order"] for o in greedy["orders"]] == ["AB", "BA"] and greedy["verdict"] in set(Verdict)
    assert _judge(tiny_model, capsys) == greedy
    sampled = _judge(tiny_model, capsys, "--samples", "3", "--temperature", "1.0", "--seed", "5")
    assert all(len(o["samples"]) == 3 for o in sampled["orders"])
    assert _judge(tiny_model, capsys, "--samples", "3", "--temperature", "1.0", "--seed", "5") == sampled


def test_judge_pointwise_on_the_device(tiny_model, device, generations, capsys):
    capsys.readouterr()
    assert main(["judge", "--model", str(tiny_model), "--format", "pos", "--prompt", PAIR["prompt"],
                 "--response-a", PAIR["response_a"], "--max-new-tokens", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["samples"]) == 1 and generations.on(device)


def _post(url: str, path: str, body: dict) -> dict:
    with http().Client(timeout=120) as client:
        resp = client.post(url + path, json=body)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_serve_answers_judge_and_get_reward_then_stops(tiny_model, capsys):
    cli = _judge(tiny_model, capsys)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "j1.cli.main", "serve", "--model", str(tiny_model), "--port", str(port),
         "--max-new-tokens", "12", "--batch_wait_ms", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, "NO_COLOR": "1"})
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read()
            try:
                with http().Client() as client:
                    if client.get(url + "/health").json()["status"] == "ok":
                        break
            except http().TransportError:
                assert time.monotonic() < deadline, "j1 serve did not start"
                time.sleep(0.2)
        # the same model, pair and greedy settings as j1 judge: the same JSON
        # j1 judge adds the probe's margin (a second pass the server does not make); the rest is the same
        assert _post(url, "/v1/judge", PAIR) == {k: v for k, v in cli.items() if k not in ("margin", "low_confidence")}
        rewards = _post(url, "/get_reward", {"query": ["Q: 5", "Q: 6", "Q: 7"], "prompts": ["Q: "] * 3,
                                             "labels": ["6", "5", "5"]})
        assert len(rewards["rewards"]) == 3 and all(0.0 <= r <= 1.0 for r in rewards["rewards"])
        assert rewards["extra_logs"]["n"] == 3
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr = proc.stderr.read()
        proc.stderr.close()
    assert "Traceback" not in stderr, stderr[-3000:]
