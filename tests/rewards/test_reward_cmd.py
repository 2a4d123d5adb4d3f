"""``j1 reward`` end to end through the CLI entry point."""

from __future__ import annotations

import json

import pytest

from j1.cli.main import main

A = "<think>t</think><answer>[[A]]</answer>"
B = "<think>t</think><answer>[[B]]</answer>"


def _rows(spec):
    return [{"pair_id": pid, "order": o, "label": lab, "completion": c, "extra": k}
            for k, (pid, o, lab, c) in enumerate(spec)]


def _run(tmp_path, rows, *flags):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    rc = main(["reward", "--input", str(src), "--output", str(out), *flags])
    return rc, [json.loads(line) for line in out.read_text().splitlines()]


SPEC = [("p", "AB", "A", A), ("p", "AB", "A", B), ("p", "BA", "A", B), ("p", "BA", "A", B), ("q", "AB", "B", B)]


def test_reward_cli_expected(tmp_path):
    rc, out = _run(tmp_path, _rows(SPEC), "--format", "pav")
    assert rc == 0
    # p: AB correctness [1, 0]; BA says B = original A -> [1, 1]. expected consistency:
    # AB: c x mean(BA) = [1, 0]; BA: c x mean(AB) = [0.5, 0.5]. q has no BA rows: consistency null.
    assert [r["rewards"] for r in out] == [
        {"correctness": 1.0, "consistency": 1.0, "total": 2.0},
        {"correctness": 0.0, "consistency": 0.0, "total": 0.0},
        {"correctness": 1.0, "consistency": 0.5, "total": 1.5},
        {"correctness": 1.0, "consistency": 0.5, "total": 1.5},
        {"correctness": 1.0, "consistency": None, "total": 1.0},
    ]
    assert [r["extra"] for r in out] == [0, 1, 2, 3, 4]  # input fields kept


def test_reward_cli_index(tmp_path):
    _, out = _run(tmp_path, _rows(SPEC), "--format", "pav", "--consistency", "index")
    # AB0&BA0 = 1x1, AB1&BA1 = 0x1 -> [1, 0]; BA [1x1, 1x0] = [1, 0]
    assert [r["rewards"]["consistency"] for r in out] == [1.0, 0.0, 1.0, 0.0, None]


def test_reward_cli_pos(tmp_path):
    spec = [("p", "A", "A", "<think>t</think><score>9</score>"), ("p", "B", "A", "<think>t</think><score>3</score>")]
    _, out = _run(tmp_path, _rows(spec), "--format", "pos")
    assert [r["rewards"] for r in out] == [{"correctness": 1.0, "consistency": None, "total": 1.0}] * 2


@pytest.mark.parametrize(
    "row,msg",
    [
        ({"pair_id": "p", "order": "AB", "label": "A"}, "in.jsonl:2: missing field 'completion'"),
        ({"pair_id": "p", "order": "AB", "label": "C", "completion": A}, "in.jsonl:2: label 'C'"),
        ({"pair_id": "p", "order": "A", "label": "A", "completion": A}, "in.jsonl:2: order 'A' is not valid"),
    ],
)
def test_reward_cli_bad_rows(tmp_path, row, msg, capsys):
    good = {"pair_id": "p", "order": "AB", "label": "A", "completion": A}
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in [good, row]), encoding="utf-8")
    assert main(["reward", "--input", str(src), "--output", str(tmp_path / "out.jsonl"), "--format", "pav"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("j1 reward: error: ") and msg in line
    assert not (tmp_path / "out.jsonl").exists()


def test_reward_cli_needs_input(capsys):
    with pytest.raises(SystemExit):
        main(["reward", "--format", "pav"])
    assert "--input" in capsys.readouterr().err
