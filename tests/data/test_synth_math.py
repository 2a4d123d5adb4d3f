"""``j1 synth math`` against a scripted OpenAI-compatible server and the embedded model: pairs, drop
reasons, seeded choice, stats, resume, kill -9 + rerun."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer

from j1.cli.main import main
from j1.data.mathcheck import check_answer, parse_gold
from j1.data.synth_math import MATH_EXAMPLE, choose, math_messages
from j1.schema import read_pairs

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "data"

# Per problem of gsm8k_tiny.jsonl, what sample k answers (cycled). R = right, W = wrong, N = no box.
SCRIPT = {
    "Tom has 3 apples": ["so \\boxed{7}", "so \\boxed{8}", "I am not sure", "\\boxed{12}"],  # pair
    "A box holds 12 pens": ["\\boxed{3000}", "\\boxed{3,000}", "\\boxed{3000.0}", "\\boxed{3000}"],  # all right
    "Half of 9": ["\\boxed{4}", "\\boxed{5}", "no", "\\boxed{4.6}"],  # none right
    "What is 10 minus 4": ["\\boxed{6}", "six", "six", "six"],  # right + unanswered only
    "What is 5 times 5": ["\\boxed{25}", "\\boxed{\\frac{50}{2}}", "\\boxed{10}", "\\boxed{55}"],  # pair
}


def scripted(messages, index, body):
    text = messages[-1]["content"]
    for key, answers in SCRIPT.items():
        if key in text:
            return answers[index % len(answers)]
    return "\\boxed{0}"  # generated problems (kill test): "Problem k" -> right iff k even, see below


def _run(server, out, *extra):
    return main(["synth", "math", "--source", str(FIX / "gsm8k_tiny.jsonl"), "--base-url", server.base_url,
                 "--samples", "4", "--out", str(out), "--progress", "false", *extra])


def test_pairs_and_drop_reasons(fake_openai, tmp_path, capsys):
    fake_openai.reply = scripted
    out = tmp_path / "math.jsonl"
    assert _run(fake_openai, out) == 0
    pairs = read_pairs(out)
    by_prompt = {p.prompt.split(" ")[0] + p.prompt.split(" ")[1]: p for p in pairs}
    assert sorted(by_prompt) == ["Tomhas", "Whatis"]
    tom = next(p for p in pairs if p.prompt.startswith("Tom"))
    assert tom.kind == "math" and tom.source == "gsm8k_tiny.jsonl"
    assert tom.chosen == "so \\boxed{7}"  # the only right sample
    assert tom.rejected in {"so \\boxed{8}", "\\boxed{12}"}  # a wrong one; never the unanswered one
    assert tom.meta["verification"] == ["right", "wrong", "no_answer", "wrong"]
    assert tom.meta["answers"] == ["7", "8", None, "12"]
    assert tom.meta["gold"] == "7" and tom.meta["model"] == "scripted-judge" and tom.meta["samples"] == 4
    assert tom.reference == "7"  # the gold answer stays with the pair (a judge may read it: --judge_inputs)
    five = next(p for p in pairs if "5 times 5" in p.prompt)
    assert five.chosen in {"\\boxed{25}", "\\boxed{\\frac{50}{2}}"}  # 50/2 verifies as 25

    dropped = [json.loads(line) for line in (tmp_path / "math.dropped.jsonl").open()]
    reasons = {d["prompt"].split(" ")[0] + d["prompt"].split(" ")[1]: d["reason"] for d in dropped}
    assert reasons == {"Abox": "no_wrong_sample", "Halfof": "no_right_sample", "Whatis": "no_wrong_sample"}

    stats = json.loads((tmp_path / "math.stats.json").read_text())
    assert stats["prompts_seen"] == 5 and stats["done"] == 5 and stats["pairs"] == 2
    assert stats["dropped"] == {"no_right_sample": 1, "no_wrong_sample": 2}
    # right: 1 (Tom) + 4 (pens) + 0 + 1 (10-4) + 2 (25) = 8; wrong: 2 + 0 + 3 + 0 + 2 = 7; no_answer: 1+0+1+3+0 = 5
    assert stats["samples"] == {"right": 8, "wrong": 7, "no_answer": 5}
    assert stats["tokens"]["completion"] == 5 * 20  # the fake server bills 5 tokens per choice
    assert stats["runs"][-1]["requests"] == 5
    assert json.loads((tmp_path / "math.run.json").read_text())["command"] == "j1 synth math"
    assert "math pairs: 2 of 5 prompts done" in capsys.readouterr().out
    # the prompt asks for a boxed answer, and sends all 4 samples in one request (n=4)
    assert all(r["n"] == 4 for r in fake_openai.requests)
    assert "\\boxed{}" in fake_openai.requests[0]["messages"][-1]["content"]
    # after the worked example, whose solution ends in a boxed answer
    assert [m["role"] for m in fake_openai.requests[0]["messages"]] == ["user", "assistant", "user"]
    assert fake_openai.requests[0]["messages"][1]["content"].endswith("The answer is \\boxed{27}.")


def test_math_messages():
    problem = "Tom has 3 apples and buys 4 more. How many apples?\n(unicode: é)"
    plain = math_messages(problem, example=None)
    assert len(plain) == 1 and plain[0]["role"] == "user"
    assert plain[0]["content"].endswith("Problem: " + problem)  # the source's text, unchanged
    shot = math_messages(problem)
    assert shot[-1] == plain[0] and shot[0]["content"].endswith("Problem: " + MATH_EXAMPLE[0])
    assert shot[1] == {"role": "assistant", "content": MATH_EXAMPLE[1]}
    # the example's own answer verifies: a worked example that failed our checker would teach nothing
    assert check_answer(parse_gold("#### 27"), MATH_EXAMPLE[1]).status == "right"


def test_rerun_asks_nothing_and_extends_with_limit(fake_openai, tmp_path):
    fake_openai.reply = scripted
    out = tmp_path / "math.jsonl"
    assert _run(fake_openai, out, "--limit", "2") == 0
    assert len(fake_openai.requests) == 2
    first = out.read_text() + (tmp_path / "math.dropped.jsonl").read_text()
    assert _run(fake_openai, out, "--limit", "2") == 0
    assert len(fake_openai.requests) == 2  # nothing asked again
    assert _run(fake_openai, out) == 0
    assert len(fake_openai.requests) == 5  # only the 3 new problems
    both = out.read_text() + (tmp_path / "math.dropped.jsonl").read_text()
    assert both.count("\n") == 5 and all(line in both for line in first.splitlines())
    stats = json.loads((tmp_path / "math.stats.json").read_text())
    assert [r["processed"] for r in stats["runs"]] == [2, 0, 3]
    assert [r["skipped_already_done"] for r in stats["runs"]] == [0, 2, 2]


def test_same_seed_same_file_other_seed_other_choice(fake_openai, tmp_path):
    fake_openai.reply = scripted
    _run(fake_openai, tmp_path / "a.jsonl", "--seed", "3")
    _run(fake_openai, tmp_path / "b.jsonl", "--seed", "3")
    # lines are appended as requests finish (concurrently), so compare them as sets
    a, b = ((tmp_path / n).read_text().splitlines() for n in ("a.jsonl", "b.jsonl"))
    assert sorted(a) == sorted(b) and len(a) == 2
    # the choice among 2 wrong x 2 right samples is seeded by (seed, id): over several seeds it varies
    picks = {choose("some-id", ["right", "right", "wrong", "wrong"], s) for s in range(20)}
    assert len(picks) > 1 and all(c in (0, 1) and r in (2, 3) for c, r in picks)


def test_max_minutes_stops_between_chunks_and_rerun_finishes(tmp_path):
    src = _generated_source(tmp_path / "gen.jsonl", 12)
    out = tmp_path / "math.jsonl"
    args = ["synth", "math", "--source", str(src), "--samples", "2", "--out", str(out), "--progress", "false",
            "--concurrency", "2"]
    with FakeOpenAIServer(gen_reply, latency=0.4) as server:
        # 0.005 min = 0.3 s: the first chunk (2 problems, one wave of 2 requests at 0.4 s) ends past it
        assert main([*args, "--base-url", server.base_url, "--max_minutes", "0.005"]) == 0
        assert len(server.requests) == 2  # no second chunk was started
        assert len(_lines(out)) + len(_lines(tmp_path / "math.dropped.jsonl")) == 2  # nothing thrown away
        assert main([*args, "--base-url", server.base_url]) == 0
        assert len(server.requests) == 12
    stats = json.loads((tmp_path / "math.stats.json").read_text())
    assert [r["processed"] for r in stats["runs"]] == [2, 10] and stats["done"] == 12


@pytest.mark.parametrize("statuses,expected", [
    ([], "no_right_sample"),
    (["no_answer", "no_answer"], "no_right_sample"),
    (["wrong", "wrong"], "no_right_sample"),
    (["right", "right"], "no_wrong_sample"),
    (["right", "no_answer"], "no_wrong_sample"),
    (["no_answer", "right", "wrong"], (1, 2)),
])
def test_choose_table(statuses, expected):
    assert choose("x", statuses, 0) == expected


def test_bad_input_names_file_line_and_field(fake_openai, tmp_path, capsys):
    assert main(["synth", "math", "--source", str(FIX / "math_bad.jsonl"), "--base-url", fake_openai.base_url,
                 "--out", str(tmp_path / "m.jsonl")]) == 2
    assert re.search(r"math_bad\.jsonl:2: missing field 'answer'", capsys.readouterr().err)
    assert fake_openai.requests == []


@pytest.mark.parametrize("args,message", [
    (["--out", "x.jsonl"], "--source is required"),
    (["--source", "s.jsonl"], "--out is required"),
    (["--source", "s.jsonl", "--out", "x.json"], "must end in .jsonl"),
    (["--source", "s.jsonl", "--out", "x.jsonl", "--samples", "1"], "needs a right and a wrong sample"),
    (["--source", "s.jsonl", "--out", "x.jsonl", "--temperature", "0"], "would repeat one greedy answer"),
])
def test_config_errors(args, message, capsys):
    with pytest.raises(SystemExit):
        main(["synth", "math", *args])
    assert message in capsys.readouterr().err


def test_synth_usage(capsys):
    assert main(["synth"]) == 0
    assert "math" in capsys.readouterr().out
    assert main(["synth", "nope"]) == 2


# --- kill -9 mid-run, then rerun -----------------------------------------------------------------

def _generated_source(path: Path, n: int) -> Path:
    # Problem k has gold k; the script answers right for sample 0 and wrong for sample 1 when k is
    # even, all wrong when k is odd: even k -> pair, odd k -> no_right_sample.
    path.write_text("".join(json.dumps({"question": f"Problem {k}: what is {k}?", "answer": f"#### {k}"}) + "\n"
                            for k in range(n)), encoding="utf-8")
    return path


def gen_reply(messages, index, body):
    k = int(messages[-1]["content"].split("Problem: Problem ")[1].split(":")[0])
    return f"\\boxed{{{k if (k % 2 == 0 and index == 0) else k + 1}}}"


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_kill_dash_nine_then_rerun_loses_and_duplicates_nothing(tmp_path):
    n = 24
    src = _generated_source(tmp_path / "gen.jsonl", n)
    out = tmp_path / "math.jsonl"
    cmd = [sys.executable, "-m", "j1.cli.main", "synth", "math", "--source", str(src), "--samples", "2",
           "--out", str(out), "--concurrency", "2", "--progress", "false"]
    env = {**os.environ, "OPENAI_API_KEY": "test"}
    with FakeOpenAIServer(gen_reply, latency=0.15) as server:
        proc = subprocess.Popen([*cmd, "--base-url", server.base_url], env=env, cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 120
        while len(_lines(out)) + len(_lines(tmp_path / "math.dropped.jsonl")) < 6:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.time() < deadline, "the run made no progress"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
        before = _lines(out) + _lines(tmp_path / "math.dropped.jsonl")
        done_before = {json.loads(line)["id"] for line in before if line.endswith("}")}
        assert 6 <= len(done_before) < n, "the kill came too late to test anything"
        asked_before = len(server.requests)
        subprocess.run([*cmd, "--base-url", server.base_url], env=env, cwd=REPO, check=True,
                       capture_output=True, timeout=300)
        asked_after = len(server.requests) - asked_before
    pairs = _lines(out)
    dropped = _lines(tmp_path / "math.dropped.jsonl")
    ids = [json.loads(line)["id"] for line in pairs + dropped]
    assert len(ids) == len(set(ids)) == n  # every problem exactly once
    assert asked_after == n - len(done_before)  # the rerun asked only for the unfinished ones
    assert len(pairs) == n // 2 and all(json.loads(d)["reason"] == "no_right_sample" for d in dropped)
    # every line written before the kill survives unchanged
    assert all(line in pairs + dropped for line in before if line.endswith("}"))

    # the same as an uninterrupted run (same ids, same chosen/rejected)
    with FakeOpenAIServer(gen_reply) as server:
        ref = tmp_path / "ref.jsonl"
        main(["synth", "math", "--source", str(src), "--samples", "2", "--out", str(ref), "--progress", "false",
              "--base-url", server.base_url])
    assert sorted(pairs) == sorted(_lines(ref))


# --- the embedded model -------------------------------------------------------------------------

def test_embedded_model_end_to_end(tmp_path, embedded_backend, monkeypatch):
    # the CLI as a user runs it, with the session's already loaded embedded model (saves a load)
    monkeypatch.setattr("j1.cli.synth_cmd.build_backend", lambda cfg: embedded_backend)
    out = tmp_path / "math.jsonl"
    assert main(["synth", "math", "--source", str(FIX / "gsm8k_tiny.jsonl"), "--limit", "2", "--samples", "2",
                 "--max_new_tokens", "12", "--out", str(out), "--progress", "false"]) == 0
    stats = json.loads((tmp_path / "math.stats.json").read_text())
    assert stats["done"] == 2 and stats["pairs"] + sum(stats["dropped"].values()) == 2
    assert sum(stats["samples"].values()) == 4
    assert 0 < stats["tokens"]["completion"] <= 2 * 2 * 12
    assert stats["runs"][-1]["model"] == "smollm2-135m"
