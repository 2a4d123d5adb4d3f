"""``j1 eval`` / ``j1 score`` against a scripted OpenAI-compatible server on loopback: artefacts,
resume after a crash (in-process and a real subprocess killed with SIGKILL), per-prompt errors,
rescoring, and config errors."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from fake_openai import FakeOpenAIServer

from j1.cli.main import main
from j1.eval.benchmarks import get_benchmark, load_items
from j1.eval.items import item_prompts
from j1.eval.scoring import read_judgments
from j1.formats import get_format

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "eval"
METRIC_KEYS = {"accuracy", "accuracy_ci", "consistent_accuracy", "consistent_accuracy_ci", "order_accuracy",
               "flip_rate", "tie_rate", "invalid_rate", "n"}


def scripted(messages, index, body):
    """A deterministic judge: the answer depends on the prompt text and the sample index only, so
    a resumed run sees exactly the answers an uninterrupted one does."""
    text = messages[-1]["content"]
    h = hashlib.sha256(f"{text}|{index}".encode()).digest()[0]
    if "<score>number</score>" in text:  # pointwise
        return "garbage" if h % 5 == 0 else f"<think>ok</think><score>{h % 11}</score>"
    return ["<think>a</think><answer>[[A]]</answer>", "<think>b</think><answer>[[B]]</answer>",
            "<think>c</think><answer>[[A]]</answer>", "no verdict"][h % 4]


def eval_args(server, out, *extra, bench="judgebench", data=None, fmt="pav"):
    data = data or str(FIX / "judgebench.jsonl")
    return ["eval", "--benchmark", bench, "--data", str(data), "--base-url", server.base_url, "--format", fmt,
            "--out", str(out), "--n_boot", "200", "--progress", "false", *extra]


def prompt_keys(bench, data, fmt, **kw):
    """Rendered prompt text -> (item id, slot), to tell which judgment a server request asked for."""
    items = load_items(get_benchmark(bench), str(data), **kw)
    return {m[-1]["content"]: (it.id, slot) for it in items for slot, m in item_prompts(get_format(fmt), it)}


def test_eval_artefacts_and_metrics_keys(tmp_path):
    out = tmp_path / "run"
    with FakeOpenAIServer(scripted) as srv:
        assert main(eval_args(srv, out, "--samples", "4", "--temperature", "1")) == 0
        # 5 pairs x 2 orders, each one request with n=4 (no per-sample requests)
        assert len(srv.requests) == 10 and {r["n"] for r in srv.requests} == {4}
    m = json.loads((out / "metrics.json").read_text())
    assert list(m)[:7] == ["benchmark", "format", "model", "n", "overall", "categories", "scaling"]
    assert (m["benchmark"], m["format"], m["model"], m["n"]) == ("judgebench", "pav", "scripted-judge", 5)
    assert METRIC_KEYS <= set(m["overall"]) and set(m["overall"]["order_accuracy"]) == {"AB", "BA"}
    assert set(m["categories"]) == {"knowledge", "math", "coding", "reasoning"}
    assert list(m["scaling"]) == ["1", "2", "4"]
    assert all(METRIC_KEYS <= set(b) for b in m["scaling"].values())
    lines = (out / "judgments.jsonl").read_text().splitlines()
    assert len(lines) == 10
    first = json.loads(lines[0])
    assert len(first["texts"]) == 4 and first["schema_version"] == 1 and first["error"] is None
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "complete" and run["config"]["benchmark"] == "judgebench" and "versions" in run
    report = (out / "report.md").read_text()
    assert "## Per category" in report and "| knowledge |" in report and "k=4" in report
    assert (out / "scaling.png").stat().st_size > 1000 and (out / "categories.png").stat().st_size > 1000


def test_score_recomputes_metrics_without_a_model(tmp_path, capsys):
    out = tmp_path / "run"
    with FakeOpenAIServer(scripted) as srv:
        main(eval_args(srv, out, "--samples", "2", "--temperature", "1"))
    before = json.loads((out / "metrics.json").read_text())
    (out / "metrics.json").unlink()
    (out / "report.md").unlink()
    assert main(["score", str(out)]) == 0  # no server, no model
    assert json.loads((out / "metrics.json").read_text()) == before
    assert (out / "report.md").exists()
    assert main(["score", str(tmp_path / "missing")]) == 2
    assert "not found" in capsys.readouterr().err


def test_pointwise_rmbench_six_prompts_per_item(tmp_path):
    out = tmp_path / "rm"
    with FakeOpenAIServer(scripted) as srv:
        main(eval_args(srv, out, bench="rmbench", data=FIX / "rmbench.json", fmt="pos"))
        assert len(srv.requests) == 3 * 6  # each of the 6 responses scored once
    m = json.loads((out / "metrics.json").read_text())
    assert m["n"] == 3 and {"easy", "normal", "hard"} <= set(m["overall"])
    assert m["overall"]["order_accuracy"] is None and m["overall"]["flip_rate"] is None
    assert set(m["categories"]) == {"chat", "code", "safety"}


def test_pairwise_rmbench_eighteen_prompts_per_item(tmp_path):
    with FakeOpenAIServer(scripted) as srv:
        main(eval_args(srv, tmp_path / "rm", "--limit", "1", bench="rmbench", data=FIX / "rmbench.json"))
        assert len(srv.requests) == 18  # 9 pairs x 2 orders


def test_rewardbench_fixture_run_has_sections(tmp_path):
    with FakeOpenAIServer(scripted) as srv:
        main(eval_args(srv, tmp_path / "rb", bench="rewardbench", data=FIX / "rewardbench.jsonl"))
    m = json.loads((tmp_path / "rb" / "metrics.json").read_text())
    assert set(m["overall"]["sections"]) == {"Chat", "Chat Hard", "Safety", "Reasoning"}
    assert m["overall"]["accuracy"] == pytest.approx(sum(m["overall"]["sections"].values()) / 4)


class Crash(Exception):
    pass


def test_resume_after_crash_never_reasks_a_recorded_judgment(tmp_path, monkeypatch, capsys):
    from j1.eval import runner

    data = FIX / "generic.jsonl"
    keys = prompt_keys("generic", data, "pav")
    with FakeOpenAIServer(scripted) as srv:
        ref = tmp_path / "ref"
        main(eval_args(srv, ref, bench="generic", data=data, fmt="pav"))
        srv.requests.clear()

        # Crash after the 3rd judged prompt is written (of 6).
        out = tmp_path / "run"
        real = runner.judgment_line
        calls = {"n": 0}

        def crashing(*a, **k):
            calls["n"] += 1
            if calls["n"] > 3:
                raise Crash()
            return real(*a, **k)

        monkeypatch.setattr(runner, "judgment_line", crashing)
        with pytest.raises(Crash):
            main(eval_args(srv, out, "--concurrency", "1", bench="generic", data=data, fmt="pav"))
        monkeypatch.setattr(runner, "judgment_line", real)
        recorded = {(r.id, s) for r in read_judgments(out / "judgments.jsonl").values() for s in r.slots}
        assert len(recorded) == 3 and not (out / "metrics.json").exists()

        assert main(eval_args(srv, out, bench="generic", data=data, fmt="pav")) == 2
        assert "pass --resume" in capsys.readouterr().err
    # The resumed run talks to a server of its own (--base-url may change between attempts): a request the
    # crashed run had in flight, cancelled but still landing on the first server, is not counted as asked.
    with FakeOpenAIServer(scripted) as srv:
        main(eval_args(srv, out, "--resume", bench="generic", data=data, fmt="pav"))
        asked = [keys[r["messages"][-1]["content"]] for r in srv.requests]
        assert len(asked) == 3 and not set(asked) & recorded  # only the missing three
    assert json.loads((out / "metrics.json").read_text()) == json.loads((ref / "metrics.json").read_text())


def test_resume_refuses_other_settings(tmp_path, capsys):
    with FakeOpenAIServer(scripted) as srv:
        main(eval_args(srv, tmp_path / "r"))
        assert main(eval_args(srv, tmp_path / "r", "--resume", fmt="pas")) == 2
    assert "--format was 'pav', now 'pas'" in capsys.readouterr().err
    with FakeOpenAIServer(scripted) as srv:
        assert main(eval_args(srv, tmp_path / "r", "--resume", "--template", "compact")) == 2
    assert "--template was 'full', now 'compact'" in capsys.readouterr().err


def test_assistant_prefill_is_sent_and_read_with_the_answer(tmp_path, capsys):
    """--assistant_prefill: every prompt ends in the partial answer, the server continues it, and the
    judgment (and its verdict) is the prefill plus the continuation."""
    head = "<think>fixed</think><answer>[["
    with FakeOpenAIServer(lambda messages, index, body: "B]]</answer>") as srv:
        assert main(eval_args(srv, tmp_path / "r", "--assistant_prefill", head)) == 0
        assert all(r["messages"][-1] == {"role": "assistant", "content": head} for r in srv.requests)
        assert all(r["continue_final_message"] for r in srv.requests)
        # the same prefill resumes; another is refused
        assert main(eval_args(srv, tmp_path / "r", "--resume", "--assistant_prefill", head)) == 0
        assert main(eval_args(srv, tmp_path / "r", "--resume")) == 2
    assert "--assistant_prefill was '<think>fixed</think><answer>[[', now None" in capsys.readouterr().err
    records = read_judgments(tmp_path / "r" / "judgments.jsonl")
    assert {t for r in records.values() for line in r.slots.values() for t in line["texts"]} == {head + "B]]</answer>"}
    m = json.loads((tmp_path / "r" / "metrics.json").read_text())["overall"]
    assert m["invalid_rate"] == 0 and m["flip_rate"] == 1.0  # always "B", in both orders


def test_bad_data_is_one_clear_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "p", "chosen": "c"}\n')
    with FakeOpenAIServer(scripted) as srv:
        assert main(eval_args(srv, tmp_path / "r", bench="generic", data=bad)) == 2
    assert f"j1 eval: error: {bad}:1: missing field 'rejected'" in capsys.readouterr().err


def test_subprocess_killed_with_sigkill_then_resumed(tmp_path):
    """A real ``j1 eval`` process killed mid-run (SIGKILL, no clean-up) and resumed gives the
    metrics of an uninterrupted run, and no recorded judgment is asked again."""
    data = REPO.parent / "shared" / "data" / "judgebench_dev.jsonl"
    if not data.exists():
        pytest.skip("shared data not found")
    limit = ["--limit", "30"]
    keys = prompt_keys("judgebench", data, "pav", limit=30)
    with FakeOpenAIServer(scripted, latency=0.1) as srv:
        ref = tmp_path / "ref"
        main(eval_args(srv, ref, *limit, data=data, fmt="pav"))
        srv.requests.clear()

        out = tmp_path / "run"
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "j1.cli.main", *eval_args(srv, out, *limit, "--concurrency", "2", data=data)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        judgments = out / "judgments.jsonl"
        deadline = time.time() + 120
        while time.time() < deadline:
            if judgments.exists() and judgments.read_text().count("\n") >= 12:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        recorded = {(r.id, s) for r in read_judgments(judgments).values() for s in r.slots}
        assert 12 <= len(recorded) < 60, "the kill should land mid-run"
        asked_before = len(srv.requests)

        main(eval_args(srv, out, *limit, "--resume", data=data))
        asked_after = [keys[r["messages"][-1]["content"]] for r in srv.requests[asked_before:]]
        assert not set(asked_after) & recorded
        assert len(asked_after) == len(set(asked_after)) == 60 - len(recorded)
    final = read_judgments(judgments)  # raises on a slot judged twice
    assert sum(len(r.slots) for r in final.values()) == 60
    assert json.loads((out / "metrics.json").read_text()) == json.loads((ref / "metrics.json").read_text())


def test_torn_last_line_is_dropped_and_rejudged(tmp_path):
    with FakeOpenAIServer(scripted) as srv:
        out = tmp_path / "r"
        main(eval_args(srv, out))
        ref = json.loads((out / "metrics.json").read_text())
        path = out / "judgments.jsonl"
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # a crash mid-append
        assert main(["score", str(out)]) == 0  # tolerated; the torn item is just incomplete
        assert json.loads((out / "metrics.json").read_text())["incomplete"] == 1
        srv.requests.clear()
        main(eval_args(srv, out, "--resume"))
        assert len(srv.requests) == 1
    assert json.loads((out / "metrics.json").read_text()) == ref


def test_failed_prompts_are_kept_and_retried_on_resume(tmp_path):
    # HTTP 400 is not retried: both orders of one item fail for good, until the server is fixed.
    keys = prompt_keys("judgebench", FIX / "judgebench.jsonl", "pav")
    broken = min(item for item, _ in keys.values())
    with FakeOpenAIServer(scripted, fail_when=lambda body: keys[body["messages"][-1]["content"]][0] == broken,
                          fail_status=400) as srv:
        out = tmp_path / "r"
        main(eval_args(srv, out, "--concurrency", "1", "--max-error-rate", "0.5"))
        m = json.loads((out / "metrics.json").read_text())
        assert m["errors"] == 2 and m["n"] == 5
        errs = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
        errs = [e for e in errs if e["error"]]
        assert len(errs) == 2 and "HTTP 400" in errs[0]["error"] and errs[0]["texts"] == []
        assert {e["item"] for e in errs} == {broken}
        # failed prompts count as invalid verdicts
        assert m["overall"]["invalid_rate"] >= 2 / 10
        srv.fail_when = None
        srv.requests.clear()
        main(eval_args(srv, out, "--resume"))
        assert sorted(keys[r["messages"][-1]["content"]] for r in srv.requests) == [(broken, "AB"), (broken, "BA")]
        assert json.loads((out / "metrics.json").read_text())["errors"] == 0


def test_too_many_errors_fail_the_run(tmp_path, capsys):
    with FakeOpenAIServer(scripted, fail_first=100, fail_status=400) as srv:
        assert main(eval_args(srv, tmp_path / "r", "--max-error-rate", "0.1")) == 1
    assert "prompts failed for good" in capsys.readouterr().err
    assert not (tmp_path / "r" / "metrics.json").exists()


@pytest.mark.parametrize("args,message", [
    (["--benchmark", "nope"], "--benchmark 'nope': unknown; choose one of"),
    (["--benchmark", "generic", "--format", "xyz"], "is not a judge format"),
    (["--benchmark", "generic", "--limit", "0"], "--limit 0"),
    (["--benchmark", "generic", "--ties", "maybe"], "--ties 'maybe'"),
])
def test_config_errors(tmp_path, capsys, args, message):
    base = ["eval", "--data", str(FIX / "generic.jsonl"), "--out", str(tmp_path / "o")]
    with pytest.raises(SystemExit) as exc:
        main(base + args)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_example_configs_parse():
    from j1.cli.common import parse
    from j1.eval.spec import EvalSpec

    paths = sorted((REPO / "configs" / "eval").rglob("*.yaml"))
    assert len(paths) == 5
    for p in paths:
        judge = (yaml.safe_load(p.read_text()) or {}).get("judge")
        # A judge another config trains: its manifest is read at parse time, a shipped judge stands in.
        extra = ["--judge", "j1-135m"] if judge and not (REPO / judge).exists() else []
        cfg = parse(EvalSpec, ["--config", str(p), *extra], prog="j1 eval")
        assert cfg.benchmark and cfg.out


def test_resuming_a_finished_run_judges_nothing_and_loads_no_model(tmp_path, monkeypatch):
    import j1.cli.common

    with FakeOpenAIServer(scripted) as srv:
        main(eval_args(srv, tmp_path / "r"))
        ref = json.loads((tmp_path / "r" / "metrics.json").read_text())

    def no_backend(cfg):
        raise AssertionError("a finished run needs no backend")

    monkeypatch.setattr(j1.cli.common, "build_backend", no_backend)
    with FakeOpenAIServer(scripted) as srv2:  # another server: the old one is gone
        main(eval_args(srv2, tmp_path / "r", "--resume"))
        assert srv2.requests == []
    assert json.loads((tmp_path / "r" / "metrics.json").read_text()) == ref
