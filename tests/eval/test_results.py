"""results.jsonl (issue 53): one line per item in the source's order, mapped back to the source row, read
by j1.schema, pandas and ``datasets``; the same after a crash and ``--resume``; written by j1 attack,
j1 consistency and j1 label too; ``j1 show`` prints it and report.md lists flips and wrong verdicts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer

from j1.cli.main import main
from j1.schema import ResultRecord, RowError, read_results

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "eval"


def judge_by_hash(messages, index, body):
    """A deterministic judge whose verdict depends on the prompt text and sample index only: right, wrong,
    a tie or no verdict, so some pairs flip, some are invalid."""
    text = messages[-1]["content"]
    if hashlib.sha256(text.encode()).digest()[0] % 4 == 0:
        return "I will not say."  # every sample of this prompt: an invalid verdict
    h = hashlib.sha256(f"{text}|{index}".encode()).digest()[0]
    return ["<think>picks A</think><answer>[[A]]</answer>", "<think>picks B</think><answer>[[B]]</answer>",
            "<think>again A</think><answer>[[A]]</answer>"][h % 3]


def pair_rows(n: int = 12) -> list[dict]:
    """Plain pair rows; every third has no id (its id is then a hash of the content)."""
    rows = []
    for i in range(n):
        row = {"prompt": f"What is {i} + {i}?", "chosen": f"{2 * i}", "rejected": f"{2 * i + 1}",
               "category": ["easy", "hard"][i % 2]}
        if i % 3:
            row["id"] = f"q{i}"
        rows.append(row)
    return rows


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def eval_argv(server, data, out, *extra):
    return ["eval", "--benchmark", "generic", "--data", str(data), "--base-url", server.base_url, "--out", str(out),
            "--n_boot", "50", "--progress", "false", *extra]


@pytest.fixture
def pair_run(tmp_path):
    """A j1 eval run on 12 plain pairs, 2 samples per prompt."""
    rows = pair_rows()
    data = write_rows(tmp_path / "pairs.jsonl", rows)
    out = tmp_path / "run"
    with FakeOpenAIServer(judge_by_hash) as srv:
        assert main(eval_argv(srv, data, out, "--samples", "2", "--temperature", "1")) == 0
    return rows, data, out


def test_every_record_maps_back_to_its_source_row(pair_run):
    rows, data, out = pair_run
    records = read_results(out / "results.jsonl")
    assert len(records) == len(rows)
    judgments = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    for i, (row, rec) in enumerate(zip(rows, records, strict=True)):
        assert (rec.index, rec.source, rec.command) == (i, f"{data}:{i + 1}", "eval")
        assert rec.id == row.get("id", rec.id) and rec.category == row["category"] and rec.prompt == row["prompt"]
        assert rec.responses == [{"name": "A", "text": row["chosen"]}, {"name": "B", "text": row["rejected"]}]
        assert rec.label == "A" and rec.complete
        assert [j["slot"] for j in rec.judgments] == ["AB", "BA"]
        assert [j["shown"] for j in rec.judgments] == [["A", "B"], ["B", "A"]]
        for j in rec.judgments:
            line = judgments[j["line"] - 1]  # the pointer leads to this item's own judged prompt
            assert (line["item"], line["slot"]) == (rec.id, j["slot"]) and len(j["votes"]) == 2
            assert j["valid"] == (j["verdict"] != "invalid")
            assert j["right"] == (j["verdict"] == "A")  # label A: the chosen response, shown first in AB
            assert (j["reason"] is None) == j["valid"]
            assert j["pick"] == {"A": "A", "B": "B"}.get(j["verdict"])
        (pair,) = rec.pairs
        ab, ba = (j["verdict"] for j in rec.judgments)
        assert pair["right"] == rec.consistent == (ab == ba == "A")
        assert pair["flipped"] == rec.flipped == (None if "invalid" in (ab, ba) else ab != ba)
        assert rec.accuracy == ((ab == "A") + (ba == "A")) / 2  # the mean rule: right share of the orders


def test_records_agree_with_the_metrics(pair_run):
    _, _, out = pair_run
    records = read_results(out / "results.jsonl")
    o = json.loads((out / "metrics.json").read_text())["overall"]
    n = len(records)
    assert sum(r.accuracy for r in records) / n == pytest.approx(o["accuracy"])
    assert sum(r.consistent for r in records) / n == pytest.approx(o["consistent_accuracy"])
    verdicts = [j["verdict"] for r in records for j in r.judgments]
    assert verdicts.count("invalid") / len(verdicts) == pytest.approx(o["invalid_rate"])
    counted = [r.flipped for r in records if r.flipped is not None]
    assert sum(counted) / len(counted) == pytest.approx(o["flip_rate"])
    assert 0 < o["invalid_rate"] and 0 < o["flip_rate"] < 1  # the judge gives every kind of answer


def test_pandas_and_datasets_read_it(pair_run):
    import pandas as pd
    from datasets import load_dataset

    rows, _, out = pair_run
    frame = pd.read_json(out / "results.jsonl", lines=True)
    assert list(frame["index"]) == list(range(len(rows))) and list(frame["prompt"]) == [r["prompt"] for r in rows]
    assert {"id", "category", "label", "judgments", "pairs", "accuracy", "consistent", "flipped"} <= set(frame.columns)
    orders = pd.json_normalize(frame.to_dict("records"), "judgments", ["id"])
    assert len(orders) == 2 * len(rows) and set(orders["order"]) == {"AB", "BA"}
    ds = load_dataset("json", data_files=str(out / "results.jsonl"), split="train")
    assert len(ds) == len(rows) and ds[0]["judgments"][0]["slot"] == "AB"
    assert ds["id"] == list(frame["id"])


def test_no_texts_keeps_the_ids_only(tmp_path):
    data = write_rows(tmp_path / "pairs.jsonl", pair_rows(4))
    with FakeOpenAIServer(judge_by_hash) as srv:
        assert main(eval_argv(srv, data, tmp_path / "run", "--no_texts")) == 0
    for rec in read_results(tmp_path / "run" / "results.jsonl"):
        assert rec.prompt is None and [r["text"] for r in rec.responses] == [None, None]
        assert [r["name"] for r in rec.responses] == ["A", "B"] and rec.id and rec.source
        assert all(j["thought"] is None and j["line"] for j in rec.judgments)


def test_a_crashed_then_resumed_run_writes_the_same_records(tmp_path, monkeypatch):
    from j1.eval import runner

    data = write_rows(tmp_path / "pairs.jsonl", pair_rows(6))
    with FakeOpenAIServer(judge_by_hash) as srv:
        assert main(eval_argv(srv, data, tmp_path / "ref")) == 0
        real, calls = runner.judgment_line, {"n": 0}

        def crashing(*a, **k):
            calls["n"] += 1
            if calls["n"] > 5:
                raise KeyboardInterrupt
            return real(*a, **k)

        monkeypatch.setattr(runner, "judgment_line", crashing)
        with pytest.raises(KeyboardInterrupt):
            main(eval_argv(srv, data, tmp_path / "run", "--concurrency", "1"))
        monkeypatch.setattr(runner, "judgment_line", real)
        assert not (tmp_path / "run" / "results.jsonl").exists()  # written when the run ends, not before
        assert main(eval_argv(srv, data, tmp_path / "run", "--resume")) == 0

    def without_lines(path):
        recs = [json.loads(x) for x in path.read_text().splitlines()]
        for r in recs:
            for j in r["judgments"]:
                j.pop("line")  # the resumed run's judgments.jsonl holds its lines in another order
        return recs

    assert without_lines(tmp_path / "run" / "results.jsonl") == without_lines(tmp_path / "ref" / "results.jsonl")
    lines = [json.loads(x) for x in (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()]
    for rec in read_results(tmp_path / "run" / "results.jsonl"):
        for j in rec.judgments:
            assert (lines[j["line"] - 1]["item"], lines[j["line"] - 1]["slot"]) == (rec.id, j["slot"])


def test_pointwise_and_multi_pair_items(tmp_path):
    def scores(messages, index, body):
        text = messages[-1]["content"]
        return "no score" if "Celsius (212" in text else f"<think>t</think><score>{len(text) % 10}</score>"

    with FakeOpenAIServer(scores) as srv:
        assert main(["eval", "--benchmark", "rmbench", "--data", str(FIX / "rmbench.json"), "--format", "pos",
                     "--base-url", srv.base_url, "--out", str(tmp_path / "rm"), "--progress", "false"]) == 0
    m = json.loads((tmp_path / "rm" / "metrics.json").read_text())
    records = read_results(tmp_path / "rm" / "results.jsonl")
    assert [r.id for r in records] == ["chat:1", "code:1", "safety-refuse:7"]
    rec = records[0]
    assert [j["slot"] for j in rec.judgments] == ["c0", "c1", "c2", "r0", "r1", "r2"]  # each response alone
    assert all(j["order"] is None and j["right"] is None for j in rec.judgments)
    assert not rec.judgments[1]["valid"] and rec.judgments[1]["scores"] == {"c1": None}
    assert len(rec.pairs) == 9 and rec.flipped is None
    for p in rec.pairs:  # the pair's margin is its first response's score minus its second's
        s = {j["slot"]: j["scores"][j["slot"]] for j in rec.judgments}
        if s[p["first"]] is not None:
            assert p["margin"] == s[p["first"]] - s[p["second"]]
            assert p["right"] == (p["verdict"] == "A") == (p["margin"] > 0)
        else:
            assert p["verdict"] == "invalid" and p["right"] is False
    # RM-Bench's rule: the mean over the 3x3 matrix; domains weigh equally, as the metrics do
    assert sum(r.accuracy for r in records) / 3 == pytest.approx(m["overall"]["accuracy"])


def test_rewardbench2_records_show_each_rotation(tmp_path):
    from eval.test_rewardbench2 import rb2_args, scripted

    with FakeOpenAIServer(scripted) as srv:
        assert main(rb2_args(srv, tmp_path / "rb2", "--rb2-rotations", "2")) == 0
    records = {r.id: r for r in read_results(tmp_path / "rb2" / "results.jsonl")}
    fourway = [r for r in records.values() if r.category != "Ties"]
    for r in fourway:
        assert len(r.judgments) == 2 and all(len(j["shown"]) == 4 for j in r.judgments) and r.pairs == []
        for j in r.judgments:
            assert j["right"] == (j["pick"] == "c0")  # right when the chosen answer is picked
    math = next(r for r in fourway if r.category == "Math")
    assert math.accuracy == 0.25 and not any(j["valid"] for j in math.judgments)  # the official 0.25
    ties = [r for r in records.values() if r.category == "Ties"]
    assert ties and all(r.accuracy is None and all(j["order"] is None for j in r.judgments) for r in ties)


def test_attack_consistency_and_label_write_records(tmp_path):
    from serve.serving import prefers_paris

    rows = [{"id": "r1", "prompt": "Capital of France?", "chosen": "Paris.", "rejected": "Lyon."},
            {"id": "r2", "prompt": "2+2?", "chosen": "4", "rejected": "5"}]
    data = write_rows(tmp_path / "rows.jsonl", rows)
    sets = write_rows(tmp_path / "sets.jsonl", [{"id": "s1", "prompt": "Capital of France?",
                                                 "responses": ["Lyon.", "Paris.", "Nice."]}])
    common = ["--progress", "false", "--n_boot", "50"]
    with FakeOpenAIServer(prefers_paris) as srv:
        url = ["--base_url", srv.base_url]
        assert main(["attack", "--data", str(data), "--out", str(tmp_path / "atk"), *url, *common]) == 0
        assert main(["consistency", "--data", str(sets), "--responses", "3", "--out", str(tmp_path / "cons"), *url,
                     *common]) == 0
        assert main(["label", "--data", str(sets), "--out", str(tmp_path / "lab"), *url, "--keep", "all",
                     "--progress", "false"]) == 0
    attack = read_results(tmp_path / "atk" / "results.jsonl")
    assert len(attack) == 2 * 16 and {r.command for r in attack} == {"attack"}
    assert [r.outcome["row"] for r in attack] == ["r1"] * 16 + ["r2"] * 16  # rows in file order, attacks within
    assert attack[-1].outcome["attack"] == "control" and attack[-1].responses[1]["text"] == "5"
    assert all(r.source == f"{data}:{1 + (r.outcome['row'] == 'r2')}" for r in attack)
    # the judge prefers Paris: right on r1's control in both orders (label A: the reference)
    control = next(r for r in attack if r.id == "r1:control")
    assert control.consistent is True and all(j["pick"] == "A" for j in control.judgments)
    (cons,) = read_results(tmp_path / "cons" / "results.jsonl")
    assert cons.label is None and all(j["right"] is None for j in cons.judgments) and len(cons.pairs) == 3
    assert set(cons.outcome) >= {"ipi", "tov", "intransitive"} and cons.accuracy is None
    (lab,) = read_results(tmp_path / "lab" / "results.jsonl")
    assert lab.outcome["chosen"] == "r1" and lab.outcome["written"] is True and lab.command == "label"
    assert all(p["pick"] in ("r0", "r1", "r2", None) for p in lab.judgments)


def test_the_reader_names_a_bad_line(tmp_path):
    good = ResultRecord(command="eval", index=0, id="x", category="c", source=None, prompt="p",
                        responses=[{"name": "A", "text": "a"}], label="A", judgments=[], pairs=[], accuracy=None,
                        consistent=None, flipped=None, complete=False)
    from j1.runs.atomic import dumps

    path = tmp_path / "results.jsonl"
    path.write_text(dumps(good) + "\n")
    assert read_results(path) == [good]
    bad = json.loads(dumps(good)) | {"judgments": [{"slot": "AB"}]}
    path.write_text(dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(RowError, match=r"results.jsonl:2: field 'judgments\[0\]' has no 'shown'"):
        read_results(path)
    path.write_text(json.dumps(json.loads(dumps(good)) | {"index": True}) + "\n")
    with pytest.raises(RowError, match=r":1: field 'index' must be int, got bool"):
        read_results(path)


def test_dry_run_sizes_the_run_and_writes_nothing(tmp_path, capsys, no_model_no_hub):
    out = tmp_path / "run"
    assert main(["eval", "--benchmark", "rmbench", "--data", str(FIX / "rmbench.json"), "--samples", "4",
                 "--temperature", "1", "--max_new_tokens", "100", "--out", str(out), "--dry_run"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert not out.exists()
    # 3 items x 9 pairs x 2 orders; 4 samples each, at most 100 tokens a sample
    assert (plan["items"], plan["prompts"], plan["completions"], plan["most_completion_tokens"]) == (3, 54, 216, 21600)
    assert plan["categories"] == {"chat": 1, "code": 1, "safety": 1}
    assert plan["prompt_tokens_estimate"] == round(plan["prompt_characters"] / 4) > 54 * 100
