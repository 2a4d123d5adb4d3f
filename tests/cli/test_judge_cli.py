"""``j1 judge`` end to end: the real CLI on the embedded model, a scripted server and a real server."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from j1.cli.main import main

J1 = [sys.executable, "-m", "j1.cli.main"]
PAIR = ["--prompt", "What is the capital of Australia?", "--response-a", "Canberra.", "--response-b", "Sydney."]


def run_cli(args: list[str], env_extra: dict | None = None) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, **(env_extra or {})}
    return subprocess.run(J1 + args, capture_output=True, text=True, timeout=600, env=env)


def check_judge_json(out: dict, fmt: str, samples: int) -> None:
    verdicts = {"A", "B", "tie", "invalid"}
    assert out["format"] == fmt
    assert out["verdict"] in verdicts | {"inconsistent"}
    assert [o["order"] for o in out["orders"]] == ["AB", "BA"]
    for order in out["orders"]:
        assert order["verdict"] in verdicts
        assert len(order["samples"]) == samples
        for s in order["samples"]:
            assert set(s) == {"verdict", "scores", "thought", "text"}
            assert s["verdict"] in verdicts


def test_judge_embedded_model_both_orders():
    """The README's main job: the embedded default model, both orders, --max-new-tokens 32."""
    proc = run_cli(["judge", *PAIR, "--max-new-tokens", "32", "--json"])
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    check_judge_json(out, "pav", 1)
    assert out["scores"] is None


def test_judge_scripted_server_maps_orders_back(fake_openai, capsys):
    """The server always says [[A]] (position bias): AB -> A, BA -> B in original terms: inconsistent."""
    rc = main(["judge", *PAIR, "--base-url", fake_openai.base_url, "--samples", "3", "--temperature", "1", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    check_judge_json(out, "pav", 3)
    assert [o["verdict"] for o in out["orders"]] == ["A", "B"]
    assert out["verdict"] == "inconsistent"
    assert len(fake_openai.requests) == 2 and all(r["n"] == 3 for r in fake_openai.requests)


def test_judge_scripted_server_scores(capsys):
    from fake_openai import FakeOpenAIServer

    def reply(messages, index, body):
        # Scores the response about Canberra 9 and the other 2, wherever it is shown.
        user = messages[-1]["content"]
        first = user.index("Canberra") < user.index("Sydney")
        a, b = (9, 2) if first else (2, 9)
        return f"<think>check</think><score_A>{a}</score_A><score_B>{b}</score_B>"

    with FakeOpenAIServer(reply) as server:
        assert main(["judge", *PAIR, "--format", "pas", "--base-url", server.base_url, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "A" and out["scores"] == {"A": 9.0, "B": 2.0}


def test_judge_pointwise_scripted(capsys):
    from fake_openai import FakeOpenAIServer

    def reply(messages, index, body):
        return "<think>ok</think><score>8</score>" if "Canberra" in messages[-1]["content"] else "<think>no</think><score>3/10</score>"

    with FakeOpenAIServer(reply) as server:
        assert main(["judge", *PAIR, "--format", "pos", "--base-url", server.base_url, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "A" and out["scores"] == {"A": 8.0, "B": 3.0} and out["orders"] == []
    assert out["responses"]["B"]["samples"][0]["scores"] == {"B": 3.0}


def test_judge_with_a_prefill_reads_the_whole_answer(capsys):
    """--assistant_prefill: the server only continues '<answer>[['; the verdict comes from both parts."""
    from fake_openai import FakeOpenAIServer

    def reply(messages, index, body):
        user = messages[-2]["content"]  # the last message is the prefill
        return "A]]</answer>" if user.index("Canberra") < user.index("Sydney") else "B]]</answer>"

    head = "<think>fixed</think><answer>[["
    with FakeOpenAIServer(reply) as server:
        assert main(["judge", *PAIR, "--base-url", server.base_url, "--assistant_prefill", head, "--json"]) == 0
        assert [r["messages"][-1]["content"] for r in server.requests] == [head, head]
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "A" and [o["verdict"] for o in out["orders"]] == ["A", "A"]
    assert out["orders"][1]["samples"][0]["text"] == head + "B]]</answer>"
    assert out["orders"][0]["samples"][0]["thought"] == "fixed"


def test_judge_text_output(fake_openai, capsys):
    assert main(["judge", *PAIR, "--base-url", fake_openai.base_url]) == 0
    text = capsys.readouterr().out
    assert "=== order AB (A first): verdict A" in text and "=== order BA (B first): verdict B" in text
    assert text.rstrip().endswith("verdict: inconsistent")


def test_judge_server_error_is_clear():
    from fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(fail_first=10**6, fail_status=500) as server:
        proc = run_cli(["judge", *PAIR, "--base-url", server.base_url, "--max-retries", "0"])
    assert proc.returncode != 0
    assert "HTTP 500" in proc.stderr and "127.0.0.1" in proc.stderr
    assert proc.stdout == ""  # no judgment printed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "xyz", *PAIR], "not a judge format"),
        (["--prompt", "p", "--response-a", "a"], "add --response-b"),
        (["--response-a", "a", "--response-b", "b"], "needs --prompt"),
        ([*PAIR, "--samples", "4"], "--temperature"),
    ],
)
def test_judge_bad_arguments(args, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["judge", *args])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_judge_against_real_server(transformers_server):
    """A real OpenAI-compatible server (transformers serve) running the embedded model on loopback."""
    base_url, model = transformers_server
    proc = run_cli(["judge", *PAIR, "--base-url", base_url, "--model", model, "--max-new-tokens", "8", "--json"])
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    check_judge_json(out, "pav", 1)
    assert all(s["text"] for o in out["orders"] for s in o["samples"])  # real generated text came back
