"""``j1 judge`` end to end: the real CLI on the embedded model, a scripted server and a real server."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from j1.backends import Completion
from j1.cli.judge_cmd import render_text
from j1.cli.main import main
from j1.formats import get_format
from j1.judging.judge import assemble, low_confidence, to_sample

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
            assert set(s) == {"verdict", "scores", "thought", "text", "error", "finish_reason", "margin"}
            assert s["verdict"] in verdicts
            assert (s["error"] is None) == (s["verdict"] != "invalid")  # a reason exactly when invalid
            assert s["finish_reason"] in {"stop", "length"}


OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def test_judge_defaults_to_the_shipped_judge_offline(tmp_path):
    """The shipped judge j1-135m on a fresh machine (an empty j1 cache, no network), with no flag but the
    pair: the base is converted from the embedded GGUF, and the manifest's wording, prefill and length apply."""
    from j1.judging.judges import DEFAULT_JUDGE, manifest_for

    manifest = manifest_for(DEFAULT_JUDGE)
    proc = run_cli(["judge", *PAIR, "--json"], env_extra={**OFFLINE, "J1_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    check_judge_json(out, manifest.format, manifest.samples)
    for order in out["orders"]:
        (sample,) = order["samples"]
        assert sample["text"].startswith(manifest.assistant_prefill)
        assert sample["verdict"] != "invalid", sample  # the trained judge writes a verdict after its prefill
        # its answer ends where it ends: a complete answer stops, with nothing after the closing tag
        assert sample["finish_reason"] == "stop" and sample["text"].endswith("</answer>"), sample
    # the verdict's log-odds margin, as j1 probe reads it, and whether it is low-confidence
    assert isinstance(out["margin"], float)
    assert out["low_confidence"] == low_confidence(out["verdict"], out["margin"], 1.0)


def test_judge_base_model_zero_shot_says_why_it_is_invalid():
    """The untrained base, asked for the whole answer, rarely writes the grammar; the reason is printed."""
    proc = run_cli(["judge", *PAIR, "--model", "smollm2-135m", "--max-new-tokens", "24"], env_extra=OFFLINE)
    assert proc.returncode == 0, proc.stderr
    assert "verdict: " in proc.stdout
    if "verdict: invalid" in proc.stdout:
        assert "why invalid: " in proc.stdout


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


def _pav(v: str) -> str:
    return f"<think>t</think><answer>[[{v}]]</answer>"


NO_THINK = "no </think>: the judge must think before it answers"
CUT = "cut off at the token limit (8 tokens) before a valid answer: think block never closed"


@pytest.mark.parametrize(
    ("fmt_name", "completions", "sample_lines", "why"),
    [
        # Both orders fail the same way: the reason once, without order names.
        ("pav", {"AB": ["<think>t</think> A"], "BA": ["<think>t</think> B"]},
         ["--- sample 1: invalid (no <answer> tag)"], "no <answer> tag"),
        # Different reasons: each order's, by name; the cut-off one names the token count.
        ("pav", {"AB": ["<answer>[[A]]</answer>"], "BA": [Completion("<think>B is", "length", 8)]},
         [f"--- sample 1: invalid ({NO_THINK})", f"--- sample 1: invalid ({CUT})"], f"AB: {NO_THINK}; BA: {CUT}"),
        # AB is valid (2 of its samples vote A) although one sample is invalid: only BA's reason counts.
        ("pav", {"AB": [_pav("A"), "<think>t</think>", _pav("A")], "BA": ["<think>t</think><answer>A</answer>"]},
         ["--- sample 1: A", "--- sample 2: invalid (no <answer> tag)"], "answer is not [[A]] or [[B]]: 'A'"),
        # Every order valid: invalid samples show their reason, but there is no why line.
        ("pav", {"AB": [_pav("A"), "garbage"], "BA": [_pav("B")]}, [f"--- sample 2: invalid ({NO_THINK})"], None),
        ("pas", {"AB": ["<think>t</think><score_A>8</score_A><score_B>2</score_B>"], "BA": ["<think>t</think>"]},
         ["--- sample 1: A scores {'A': 8.0, 'B': 2.0}", "--- sample 1: invalid (no <score_A> tag)"], "no <score_A> tag"),
        # Pointwise pair: B's only score is out of range, so B has no mean and the verdict is invalid.
        ("pos", {"A": ["<think>t</think><score>8</score>"], "B": ["<think>t</think><score>11</score>"]},
         ["--- sample 1: 8.0", "--- sample 1: invalid (score out of [0, 10]: 11.0)"], "score out of [0, 10]: 11.0"),
    ],
)
def test_render_text_says_why_invalid(fmt_name, completions, sample_lines, why):
    lines = render_text(assemble(get_format(fmt_name), completions)).splitlines()
    assert all(line in lines for line in sample_lines), lines
    whys = [line for line in lines if line.startswith("why invalid")]
    assert whys == ([] if why is None else [f"why invalid: {why}"])
    if why is not None:
        assert lines[-2:] == [f"why invalid: {why}", "verdict: invalid"]


def test_render_text_pointwise_single_says_why():
    fmt = get_format("pos")
    bad = {"score": None, "samples": [to_sample(fmt, Completion("<think>t</think><score>", "length", 8), "A"),
                                      to_sample(fmt, "<think>t</think>", "A")]}
    lines = render_text(bad).splitlines()
    cut = "cut off at the token limit (8 tokens) before a valid answer: <score> tag not closed"
    assert lines[0] == f"--- sample 1: invalid ({cut})"
    assert "--- sample 2: invalid (no <score> tag)" in lines
    assert lines[-1] == f"score: invalid ({cut})"  # the first invalid sample's reason
    good = {"score": 7.0, "samples": [to_sample(fmt, "<think>t</think><score>7</score>", "A")]}
    assert render_text(good).splitlines() == ["--- sample 1: score 7.0", "t", "score: 7.0"]


def test_judge_scripted_server_says_why_invalid(capsys):
    """The judge answers without <answer> tags when B is shown first: the CLI says so, text and --json."""
    from fake_openai import FakeOpenAIServer

    def reply(messages, index, body):
        user = messages[-1]["content"]
        return _pav("A") if user.index("Canberra") < user.index("Sydney") else "<think>hm</think> the second"

    with FakeOpenAIServer(reply) as server:
        assert main(["judge", *PAIR, "--base-url", server.base_url]) == 0
        text = capsys.readouterr().out
        assert main(["judge", *PAIR, "--base-url", server.base_url, "--json"]) == 0
    assert "--- sample 1: invalid (no <answer> tag)" in text
    assert text.rstrip().splitlines()[-2:] == ["why invalid: no <answer> tag", "verdict: invalid"]
    out = json.loads(capsys.readouterr().out)
    check_judge_json(out, "pav", 1)
    ab, ba = (o["samples"][0] for o in out["orders"])
    assert (ab["error"], ab["finish_reason"]) == (None, "stop")
    assert (ba["error"], ba["finish_reason"]) == ("no <answer> tag", "stop")
