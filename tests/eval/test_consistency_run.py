"""``j1 consistency`` end to end over the scripted OpenAI-compatible server: every pair in both
orders, the measures on a scripted judge whose verdicts are known, resume after a crash, and the
shipped response sets."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer

from j1.cli.main import main
from j1.eval.consistency_run import load_response_sets
from j1.eval.scoring import read_judgments
from j1.eval.spec import SHIPPED_SETS
from j1.schema import RowError

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "eval" / "consistency.jsonl"
QUALITY = re.compile(r"<response(?:_[AB])?-[0-9a-f]{8}>\n\[q=(\d+)\]")


def scripted(messages, index, body):
    """p-order: the higher [q=N] wins; p-first: always the first shown; p-cycle: rock-paper-scissors
    (q beats q' when q - q' = 1 mod 3) and no verdict when q=9 is shown. Pointwise: the score is q,
    none for q=9."""
    text = messages[-1]["content"]
    qs = [int(q) for q in QUALITY.findall(text)]
    if "<score>number</score>" in text:
        return "garbage" if qs[0] == 9 else f"<think>q</think><score>{qs[0]}</score>"
    a, b = qs
    if "Pick one." in text:
        win = "A"
    elif "Rock, paper" in text:
        if 9 in (a, b):
            return "no verdict"
        win = "A" if (a - b) % 3 == 1 else "B"
    else:
        win = "A" if a > b else "B"
    return f"<think>q</think><answer>[[{win}]]</answer>"


def cons_args(server, out, *extra, fmt="pav"):
    return ["consistency", "--data", str(FIX), "--responses", "4", "--base-url", server.base_url, "--format", fmt,
            "--out", str(out), "--n_boot", "200", "--progress", "false", *extra]


def test_pairwise_measures_end_to_end(tmp_path):
    out = tmp_path / "c"
    with FakeOpenAIServer(scripted) as srv:
        assert main(cons_args(srv, out)) == 0
        assert len(srv.requests) == 3 * 12  # K(K-1) ordered pairs per prompt
    m = json.loads((out / "metrics.json").read_text())
    per = {p["id"]: p for p in m["per_prompt"]}
    # p-order: a strict order, nothing violated. p-first: every pair flips, one violation per pair (6).
    # p-cycle: the 3-cycle costs 2, the 6 invalid verdicts (pairs with q=9) 1 each: TOV 8; 3 of 6 pairs
    # unstable; the one determined triple is intransitive.
    assert (per["p-order"]["ipi"], per["p-order"]["tov"]) == (0.0, 0)
    assert (per["p-first"]["ipi"], per["p-first"]["tov"]) == (1.0, 6)
    assert (per["p-cycle"]["ipi"], per["p-cycle"]["tov"], per["p-cycle"]["intransitive"]) == (0.5, 8, 1)
    o = m["overall"]
    assert o["ipi"] == pytest.approx(0.5) and o["tov"] == pytest.approx(14 / 3)
    assert (o["intransitive_triples"], o["determined_triples"]) == (1, 5)  # 4 (p-order) + 0 + 1
    assert o["invalid_rate"] == pytest.approx((0 + 0 + 0.5) / 3)
    # flip: both orders valid but not mirror images: 6 of p-first's pairs, of 6 + 6 + 3 valid pairs.
    assert o["flip_rate"] == pytest.approx(6 / 15)
    assert (m["benchmark"], m["format"], m["responses"], m["n"]) == ("consistency", "pav", 4, 3)
    report = (out / "report.md").read_text()
    assert "IPI" in report and "| p-cycle |" in report and (out / "prompts.png").stat().st_size > 1000
    run = json.loads((out / "run.json").read_text())
    assert run["command"] == "consistency" and run["status"] == "complete" and "git" in run
    (out / "metrics.json").unlink()
    assert main(["score", str(out), "--n_boot", "200"]) == 0  # rescored from the judgments, no model
    assert json.loads((out / "metrics.json").read_text()) == m


def test_pointwise_is_transitive_by_construction(tmp_path):
    with FakeOpenAIServer(scripted) as srv:
        assert main(cons_args(srv, tmp_path / "p", fmt="pos")) == 0
        assert len(srv.requests) == 3 * 4  # one score per response
    per = {p["id"]: p for p in json.loads((tmp_path / "p" / "metrics.json").read_text())["per_prompt"]}
    assert all(per[k]["tov"] == 0 and per[k]["ipi"] == 0 for k in ("p-order", "p-first"))
    # p-cycle scores 0, 1, 2 and one invalid: the invalid response's 3 pairs are unstable, 6 verdicts invalid.
    assert (per["p-cycle"]["ipi"], per["p-cycle"]["tov"], per["p-cycle"]["intransitive"]) == (0.5, 6, 0)


class Crash(Exception):
    pass


def test_resume_after_crash_asks_only_the_missing_prompts(tmp_path, monkeypatch, capsys):
    from j1.eval import runner

    with FakeOpenAIServer(scripted) as srv:
        main(cons_args(srv, tmp_path / "ref"))
        out = tmp_path / "run"
        real, calls = runner.judgment_line, {"n": 0}

        def crashing(*a, **k):
            calls["n"] += 1
            if calls["n"] > 10:
                raise Crash()
            return real(*a, **k)

        monkeypatch.setattr(runner, "judgment_line", crashing)
        with pytest.raises(Crash):
            main(cons_args(srv, out, "--concurrency", "1"))
        monkeypatch.setattr(runner, "judgment_line", real)
        assert sum(len(r.slots) for r in read_judgments(out / "judgments.jsonl").values()) == 10
        srv.requests.clear()
        assert main(cons_args(srv, out)) == 2 and "pass --resume" in capsys.readouterr().err
        assert main(cons_args(srv, out, "--resume", "--responses", "3")) == 2
        assert "--responses was 4, now 3" in capsys.readouterr().err
        assert main(cons_args(srv, out, "--resume")) == 0
        assert len(srv.requests) == 36 - 10
    ref = json.loads((tmp_path / "ref" / "metrics.json").read_text())
    assert json.loads((out / "metrics.json").read_text()) == ref


def test_sampler_model_draws_the_responses_once(tmp_path):
    def reply(messages, index, body):
        if messages[0]["role"] == "user" and len(messages) == 1:  # the sampler: a plain question
            return f"[q={index}] sampled answer {index}"
        return scripted(messages, index, body)

    out = tmp_path / "s"
    with FakeOpenAIServer(reply) as srv:
        assert main(cons_args(srv, out, "--sampler-model", "sampler", "--limit", "1")) == 0
        sampled = [r for r in srv.requests if r["model"] == "sampler"]
        assert len(sampled) == 1 and sampled[0]["n"] == 4
    saved = [json.loads(line) for line in (out / "responses.jsonl").read_text().splitlines()]
    assert saved[0]["responses"] == [f"[q={i}] sampled answer {i}" for i in range(4)]
    # p-order's judge on q = 0..3: a strict order.
    assert json.loads((out / "metrics.json").read_text())["per_prompt"][0]["tov"] == 0


def test_bad_data_is_one_clear_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "prompt": "p", "responses": ["x", "y", "z", "w"]}\n'
                   '{"id": "b", "prompt": "p", "responses": ["x", "y"]}\n')
    with FakeOpenAIServer(scripted) as srv:
        assert main(["consistency", "--data", str(bad), "--responses", "4", "--base-url", srv.base_url,
                     "--out", str(tmp_path / "o"), "--progress", "false"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2: field 'responses' has 2 responses; --responses 4 needs at least 4" in err
    assert "Traceback" not in err


def test_shipped_response_sets():
    sets = load_response_sets(SHIPPED_SETS, 6)
    assert len(sets) == 24 and all(len(s.responses) == 6 and len(set(s.responses)) == 6 for s in sets)
    rows = [json.loads(line) for line in SHIPPED_SETS.read_text().splitlines()]
    assert all(sorted(k.split(":")[0] for k in r["kinds"]) == ["cut", "gold", "other", "other", "other",
                                                               "wrong_final"] for r in rows)
    with pytest.raises(RowError, match="needs at least 7"):
        load_response_sets(SHIPPED_SETS, 7)
