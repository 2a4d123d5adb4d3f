"""``j1 show RUN`` (issue 53): the examples a filter selects, printed for a person (prompt, responses side by
side, each order's verdict and thought); report.md's examples; ``j1 score`` on folders it cannot rescore."""

from __future__ import annotations

import json
import re

import pytest
from eval.test_results import eval_argv, judge_by_hash, pair_rows, write_rows
from fake_openai import FakeOpenAIServer

from j1.cli.main import main
from j1.eval.show import render, select, side_by_side
from j1.schema import ResultRecord, read_results

HEADER = re.compile(r"^━━━ \[(\d+)\] (\S+) · ", re.MULTILINE)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("show")
    data = write_rows(tmp / "pairs.jsonl", pair_rows(16))
    out = tmp / "run"
    with FakeOpenAIServer(judge_by_hash) as srv:
        assert main(eval_argv(srv, data, out)) == 0
    return out, read_results(out / "results.jsonl")


def shown_ids(text: str) -> list[str]:
    return [m[2] for m in HEADER.finditer(text)]


def test_flips_prints_the_flipped_pairs(run, capsys):
    out, records = run
    capsys.readouterr()
    assert main(["show", str(out), "--flips", "--limit", "0"]) == 0
    text = capsys.readouterr().out
    flipped = [r for r in records if r.flipped]
    assert flipped and shown_ids(text) == [r.id for r in flipped]  # all of them, in source order, nothing else
    for r in flipped:
        block = text[text.index(f"] {r.id} · "):].split("━━━ [", 1)[0]  # up to the next item
        ab, ba = r.judgments
        assert f"AB       shown A | B  →  {ab['verdict']}" in block and f"BA       shown B | A  →  {ba['verdict']}" in block
        assert f"thought: {ab['thought']}" in block and f"thought: {ba['thought']}" in block
        assert "FLIPPED with the order" in " ".join(block.split())
        assert r.prompt in block and r.responses[0]["text"] in block
    assert text.rstrip().endswith(f"{len(flipped)} of {len(flipped)} matching items shown ({len(records)} in the run)")


@pytest.mark.parametrize("flags, keep", [
    (["--wrong"], lambda r: r.consistent is False),
    (["--invalid"], lambda r: any(not j["valid"] for j in r.judgments)),
    (["--category", "hard"], lambda r: r.category == "hard"),
    (["--wrong", "--category", "easy"], lambda r: r.consistent is False and r.category == "easy"),
])
def test_filters_select_what_they_say(run, capsys, flags, keep):
    out, records = run
    capsys.readouterr()
    assert main(["show", str(out), *flags, "--limit", "0"]) == 0
    want = [r.id for r in records if keep(r)]
    assert want and shown_ids(capsys.readouterr().out) == want


def test_limit_and_width(run, capsys):
    out, records = run
    capsys.readouterr()
    assert main(["show", str(out), "--limit", "2", "--width", "60"]) == 0
    text = capsys.readouterr().out
    assert shown_ids(text) == [r.id for r in records[:2]]
    assert text.rstrip().endswith(f"2 of {len(records)} matching items shown ({len(records)} in the run) (--limit)")
    assert max(len(line) for line in text.splitlines()[:-1]) <= 60  # all but the closing count


def test_bad_asks_are_one_line(run, capsys, tmp_path):
    out, _ = run
    assert main(["show", str(out), "--category", "nope"]) == 2
    assert capsys.readouterr().err.strip() == ("j1 show: error: --category 'nope': the run has none; its categories "
                                               "are easy, hard")
    assert main(["show", str(tmp_path)]) == 2
    assert "results.jsonl not found" in capsys.readouterr().err


def record(**over) -> ResultRecord:
    base = dict(command="consistency", index=0, id="s1", category="consistency", source="f:1", prompt="Why?",
                responses=[{"name": "r0", "text": "Because."}, {"name": "r1", "text": "No idea."}], label=None,
                judgments=[{"slot": "AB", "order": "AB", "shown": ["r0", "r1"], "verdict": "A", "pick": "r0",
                            "scores": None, "votes": ["A"], "valid": True, "reason": None, "right": None,
                            "margin": None, "thought": "r0 explains", "line": 1}],
                pairs=[], accuracy=None, consistent=None, flipped=False, complete=True)
    return ResultRecord(**(base | over))


def test_wrong_needs_labels():
    with pytest.raises(ValueError, match="--wrong: this j1 consistency run has no labels"):
        select([record()], wrong=True)
    assert select([record(), record(id="s2", flipped=True)], flips=True)[0].id == "s2"


def test_render_puts_the_responses_side_by_side():
    lines = side_by_side([("A", "one two three four"), ("B", "five")], 23)
    assert lines == ["A          │ B", "─          │ ─", "one two    │ five", "three four │"]
    text = render(record(prompt=None, responses=[{"name": "r0", "text": None}, {"name": "r1", "text": None}]),
                  width=80)
    assert "(text not kept: the run used --no_texts)" in text and "no label" in text
    assert "r0 | r1  →  A (r0)" in text and "thought: r0 explains" in text


def test_report_lists_flips_and_wrong_verdicts_per_category(run):
    out, records = run
    report = (out / "report.md").read_text()
    examples = report[report.index("## Examples"):]
    for category in ("easy", "hard"):
        section = examples.split(f"### {category}\n", 1)[1].split("###", 1)[0]
        members = [r for r in records if r.category == category]
        flips = [r.id for r in members if r.flipped][:3]
        wrong = [r.id for r in members if r.consistent is False and not r.flipped][:3]
        assert re.findall(r"^- flip `(\S+)`", section, re.MULTILINE) == flips
        assert re.findall(r"^- wrong `(\S+)`", section, re.MULTILINE) == wrong
    assert f"j1 show {out} --flips" in examples


def test_score_names_a_folder_it_cannot_rescore(tmp_path, capsys):
    from serve.serving import prefers_paris

    rows = write_rows(tmp_path / "rows.jsonl", [{"prompt": "Capital of France?", "responses": ["Lyon.", "Paris."]}])
    with FakeOpenAIServer(prefers_paris) as srv:
        assert main(["label", "--data", str(rows), "--out", str(tmp_path / "lab"), "--base_url", srv.base_url,
                     "--progress", "false"]) == 0
        assert main(["attack", "--data", str(tmp_path / "pairs.jsonl"), "--out", str(tmp_path / "atk"), "--base_url",
                     srv.base_url, "--progress", "false", "--n_boot", "50"]) == 2  # no such file: checked below
    capsys.readouterr()
    assert main(["score", str(tmp_path / "lab")]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"j1 score: error: {tmp_path / 'lab' / 'run.json'}: a j1 label run; j1 score rescores "
                                "j1 attack, consistency, eval runs (j1 label --resume rewrites preferences.jsonl and "
                                "results.jsonl from the judgments)"]
    run = json.loads((tmp_path / "lab" / "run.json").read_text())
    (tmp_path / "lab" / "run.json").write_text(json.dumps(run | {"command": "eval"}))
    assert main(["score", str(tmp_path / "lab")]) == 2
    assert capsys.readouterr().err.strip().endswith("field 'config.benchmark' missing; j1 score cannot rescore this "
                                                    "j1 eval run")


def test_score_rescores_an_attack_run(tmp_path, capsys):
    from serve.serving import prefers_paris

    # The judge picks the response that names Paris, else the one shown first: fooled on r2 in order BA.
    data = write_rows(tmp_path / "pairs.jsonl", [{"id": "r1", "prompt": "Capital of France?", "chosen": "Paris.",
                                                  "rejected": "Lyon."},
                                                 {"id": "r2", "prompt": "2+2?", "chosen": "4", "rejected": "5"}])
    out = tmp_path / "atk"
    with FakeOpenAIServer(prefers_paris) as srv:
        assert main(["attack", "--data", str(data), "--out", str(out), "--base_url", srv.base_url, "--progress",
                     "false", "--n_boot", "50"]) == 0
    before = json.loads((out / "report.json").read_text())
    (out / "report.json").unlink()
    capsys.readouterr()
    assert main(["score", str(out), "--n_boot", "50"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert json.loads((out / "report.json").read_text()) == before
    assert printed["benchmark"] == "attack" and printed["overall"] == before["overall"]
    examples = (out / "report.md").read_text().split("## Examples", 1)[1]
    assert "- flip `r2:control` (judgments.jsonl:" in examples and "r1:" not in examples
