"""``j1 label``: the preference rule (hand-worked), a 20-row run against a scripted judge read back with
``datasets``, and a run cut short then resumed that neither loses nor repeats a judgment."""

from __future__ import annotations

import json

import pytest
from fake_openai import FakeOpenAIServer
from serve.serving import prefers_paris

from j1.cli.main import main
from j1.eval.scoring import read_judgments
from j1.label import LabelSpec, PairVotes, preference, run_label


@pytest.mark.parametrize("n, pairs, chosen, rejected, consistent, margin", [
    (2, [PairVotes(0, 1, "A", "A", ["A", "A"])], 0, 1, True, 1.0),
    (2, [PairVotes(0, 1, "B", "B", ["B", "B"])], 1, 0, True, 1.0),
    (2, [PairVotes(0, 1, "A", "B", ["A", "B"])], 0, 1, False, 0.0),          # a flip: equal rates, file order
    (2, [PairVotes(0, 1, "invalid", "B", ["invalid", "B"])], 1, 0, False, 1.0),  # one valid vote
    (2, [PairVotes(0, 1, "tie", "tie", ["tie", "tie"])], 0, 1, False, 0.0),
    # 3 responses: r2 beats both (rate 1), r0 beats r1 (r0 0.5, r1 0): chosen r2, rejected r1, whose pair agrees
    (3, [PairVotes(0, 1, "A", "A", ["A", "A"]), PairVotes(0, 2, "B", "B", ["B", "B"]),
         PairVotes(1, 2, "B", "B", ["B", "B"])], 2, 1, True, 1.0),
])
def test_preference(n, pairs, chosen, rejected, consistent, margin):
    got = preference(n, pairs)
    assert (got["chosen"], got["rejected"], got["consistent"], got["margin"]) == (chosen, rejected, consistent, margin)


def test_no_valid_vote_is_no_preference():
    assert preference(2, [PairVotes(0, 1, "invalid", "invalid", ["invalid", "invalid"])]) is None


def _rows(path, n=20):
    rows = []
    for i in range(n):
        if i % 5 == 4:  # three responses: every pair in both orders
            rows.append({"id": f"q{i}", "prompt": f"Capital of France? ({i})", "responses": ["Lyon.", "Paris.", "Nice."]})
        elif i % 5 == 3:  # no Paris: the scripted judge says A in both orders, a flip
            rows.append({"prompt": f"Q{i}", "response_a": "Rome.", "response_b": "Oslo."})
        else:
            rows.append({"prompt": f"Q{i}", "responses": [f"Lyon {i}.", f"Paris {i}."]})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return rows


def test_twenty_rows_make_a_trl_preference_file(tmp_path, capsys):
    from datasets import load_dataset

    data, out = tmp_path / "rows.jsonl", tmp_path / "run"
    _rows(data)
    with FakeOpenAIServer(prefers_paris) as upstream:
        rc = main(["label", "--data", str(data), "--out", str(out), "--base_url", upstream.base_url,
                   "--keep", "all", "--progress", "false"])
        assert rc == 0
        assert len(upstream.requests) == 16 * 2 + 4 * 3 * 2  # 16 pairs, 4 rows of 3 pairs; both orders
    counts = json.loads(capsys.readouterr().out)
    assert counts["written"] == 20 and counts["rows"] == 20
    ds = load_dataset("json", data_files=str(out / "preferences.jsonl"), split="train")
    assert {"prompt", "chosen", "rejected", "consistent", "margin", "verdicts", "margin_kind"} <= set(ds.column_names)
    assert len(ds) == 20
    by_id = {r["id"]: r for r in ds}
    assert by_id["1"]["chosen"] == "Paris 0." and by_id["1"]["consistent"] and by_id["1"]["margin"] == 1.0
    assert by_id["4"]["consistent"] is False and by_id["4"]["margin"] == 0.0  # the flip
    # Paris wins both its pairs (rate 1); Lyon and Nice flip against each other and lose to Paris (0.25 each):
    # of the equal lowest, the later (Nice) is rejected
    assert by_id["q4"]["chosen"] == "Paris." and by_id["q4"]["rejected"] == "Nice."
    run = json.loads((out / "run.json").read_text())
    assert run["command"] == "label" and run["labels"]["written"] == 20 and run["status"] == "complete"
    # --keep consistent drops the 4 flips; a resumed run judges nothing and rewrites the file
    with FakeOpenAIServer(prefers_paris) as upstream:
        assert main(["label", "--data", str(data), "--out", str(out), "--base_url", upstream.base_url,
                     "--resume", "--progress", "false"]) == 0
        assert upstream.requests == []
    assert json.loads(capsys.readouterr().out)["written"] == 16


def test_cut_short_then_resumed_loses_and_repeats_nothing(tmp_path):
    data, out = tmp_path / "rows.jsonl", tmp_path / "run"
    _rows(data)
    with FakeOpenAIServer(prefers_paris) as upstream:
        first = run_label(LabelSpec(data=str(data), out=str(out), base_url=upstream.base_url, limit=7, progress=False))
        asked_first = len(upstream.requests)
        # a crash mid-append leaves a torn last line: it is dropped and that prompt asked again
        with (out / "judgments.jsonl").open("a") as fh:
            fh.write('{"schema_version": 1, "item": "9"')
        with pytest.raises(FileExistsError, match="--resume"):
            run_label(LabelSpec(data=str(data), out=str(out), base_url=upstream.base_url, progress=False))
        second = run_label(LabelSpec(data=str(data), out=str(out), base_url=upstream.base_url, resume=True,
                                     progress=False))
        asked = len(upstream.requests)
    assert first["rows"] == 7 and second["rows"] == 20
    assert asked_first == (6 * 2 + 1 * 3 * 2) and asked == 16 * 2 + 4 * 3 * 2  # each prompt asked once
    records = read_judgments(out / "judgments.jsonl")  # raises on a prompt judged twice
    assert len(records) == 20 and all(r.complete(True) for r in records.values())
    assert sum(1 for line in (out / "judgments.jsonl").read_text().splitlines() if line) == 16 * 2 + 4 * 3 * 2
    prefs = [json.loads(line) for line in (out / "preferences.jsonl").read_text().splitlines()]
    assert len(prefs) == second["written"] == 16 and len({p["id"] for p in prefs}) == 16


def test_judge_label_from_python():
    from j1 import load_judge

    rows = [{"prompt": "Capital?", "responses": ["Lyon.", "Paris."]},
            {"prompt": "Capital?", "response_a": "Rome.", "response_b": "Oslo."}]
    with FakeOpenAIServer(prefers_paris) as upstream, load_judge(base_url=upstream.base_url) as judge:
        kept = judge.label(rows)
        every = judge.label(rows, keep="all")
        with pytest.raises(ValueError, match="row 0: field 'responses' has 1"):
            judge.label([{"prompt": "p", "responses": ["x"]}])
        with pytest.raises(ValueError, match="keep 'some'"):
            judge.label(rows, keep="some")
    assert [(r["chosen"], r["rejected"], r["consistent"]) for r in kept] == [("Paris.", "Lyon.", True)]
    assert len(every) == 2 and every[1]["margin"] == 0.0 and every[1]["id"] == "1"


def test_sigkilled_mid_run_then_resumed_loses_and_repeats_nothing(tmp_path):
    """A `j1 label` subprocess SIGKILLed once 10 of its 56 judge prompts are on disk, then resumed."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(repo / "src")}
    data, out = tmp_path / "rows.jsonl", tmp_path / "run"
    _rows(data)
    judgments = out / "judgments.jsonl"
    with FakeOpenAIServer(prefers_paris, latency=0.05) as upstream:
        argv = ["label", "--data", str(data), "--out", str(out), "--base_url", upstream.base_url, "--concurrency",
                "1", "--progress", "false", "--keep", "all"]
        proc = subprocess.Popen([sys.executable, "-m", "j1.cli.main", *argv], cwd=repo, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.time() + 120
            while not (judgments.exists() and len(judgments.read_text().splitlines()) >= 10):
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
                assert time.time() < deadline, "the run made no progress"
                time.sleep(0.01)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            proc.stderr.close()
        done_before = len([line for line in judgments.read_text().splitlines() if line.endswith("}")])
        assert 10 <= done_before < 56 and not (out / "preferences.jsonl").exists()
        asked_before = len(upstream.requests)
        assert main([*argv, "--resume"]) == 0
        asked_after = len(upstream.requests) - asked_before
    assert asked_after == 56 - done_before  # only the prompts without a line were asked again
    records = read_judgments(judgments)  # raises on a prompt judged twice
    assert len(records) == 20 and all(r.complete(True) for r in records.values())
    prefs = [json.loads(line) for line in (out / "preferences.jsonl").read_text().splitlines()]
    assert sorted(p["id"] for p in prefs) == sorted({str(r["id"]) if "id" in r else str(k + 1)
                                                     for k, r in enumerate(_rows(data))})


def test_a_local_pav_judge_gives_logodds_margins(tmp_path, monkeypatch):
    """4 rows on the shipped judge (its manifest prefill leaves only the verdict to write; 6 new tokens close
    the answer): the margin is the verdict log-odds j1 probe reads, the vote margin stays beside it. (The
    20-row dataset test above uses the scripted judge: 20 rows here take a minute and a half on 2 CPUs.)"""
    from datasets import load_dataset

    rows = [{"prompt": f"What is {i}+{i}?", "responses": [f"{2 * i}", f"{2 * i + 1}"]} for i in range(4)]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    spec = LabelSpec(model="j1-135m", data=str(data), out=str(tmp_path / "run"), keep="all", max_new_tokens=6,
                     progress=False)
    assert spec.margin == "logodds"  # auto, for a local pav judge
    import j1.judging.judges

    loads = []
    real_load = j1.judging.judges.load_model
    monkeypatch.setattr(j1.judging.judges, "load_model", lambda *a, **k: loads.append(a) or real_load(*a, **k))
    counts = run_label(spec)
    assert counts["written"] == 4
    assert len(loads) == 1  # one judge for the verdicts and the log-odds
    ds = load_dataset("json", data_files=str(tmp_path / "run" / "preferences.jsonl"), split="train")
    assert set(ds["margin_kind"]) == {"logodds"} and all(abs(m) < 50 for m in ds["margin"])
    assert all(v in (-1.0, 0.0, 1.0) for v in ds["vote_margin"])  # one greedy sample per order


@pytest.mark.parametrize("kwargs, message", [
    (dict(margin="logodds", base_url="http://127.0.0.1:1/v1"), "--margin logodds reads a local pav judge"),
    (dict(margin="sometimes"), "--margin 'sometimes'"),
    (dict(keep="some"), "--keep 'some'"),
    (dict(format="pos"), "j1 label"),
])
def test_bad_settings_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LabelSpec(data="x.jsonl", out="o", **kwargs)


def test_served_judge_margin_is_votes():
    assert LabelSpec(data="x.jsonl", out="o", base_url="http://127.0.0.1:1/v1").margin == "votes"


def test_rows_criteria_and_reference_reach_the_judge(tmp_path, capsys):
    """A row's own criteria (text or a rubric) and reference, else --criteria for every row, in both orders of
    every pair; results.jsonl shows them; the API's label() sends them too."""
    import re

    from j1 import load_judge

    def inputs(request) -> tuple[str | None, str | None]:
        text = request["messages"][-1]["content"]
        got = [re.search(rf"<{n}-(\w{{8}})>\n(.*?)\n</{n}-\1>", text, re.S) for n in ("criteria", "reference")]
        return tuple(m.group(2) if m else None for m in got)

    data, out = tmp_path / "rows.jsonl", tmp_path / "run"
    data.write_text(json.dumps({"id": "a", "prompt": "Capital?", "responses": ["Lyon.", "Paris."], "reference": "Paris"})
                    + "\n" + json.dumps({"id": "b", "prompt": "Capital?", "response_a": "Rome.", "response_b": "Paris.",
                                         "criteria": {"criteria": "Only the city.", "levels": {10: "Right city."}}})
                    + "\n")
    with FakeOpenAIServer(prefers_paris) as upstream:
        assert main(["label", "--data", str(data), "--out", str(out), "--base_url", upstream.base_url,
                     "--criteria", "Name the capital.", "--progress", "false"]) == 0
        got = sorted(inputs(r) for r in upstream.requests)
    capsys.readouterr()
    assert got == [("Name the capital.", "Paris")] * 2 + [("Only the city.\nScore levels (0-10):\n10: Right city.",
                                                           None)] * 2
    results = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["criteria"], r["reference"]) for r in results] == [("Name the capital.", "Paris"),
                                                                  (got[-1][0], None)]
    with FakeOpenAIServer(prefers_paris) as upstream, load_judge(base_url=upstream.base_url) as judge:
        judge.label([{"prompt": "Capital?", "responses": ["Lyon.", "Paris."], "reference": "Paris"}])
        assert {inputs(r) for r in upstream.requests} == {(None, "Paris")}
