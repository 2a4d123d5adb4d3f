"""Commands that score pairs or single responses refuse a four-way format in one line, exit 2, before
any model loads (issue 44): ``j1 reward``, ``j1 serve``, ``j1 judge``, ``j1 consistency``."""

from __future__ import annotations

import json
import re

import pytest

from j1.cli.main import main

LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


@pytest.fixture
def no_model(monkeypatch):
    import transformers

    def refuse(*args, **kwargs):
        raise AssertionError("a refused format reached a model load")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)


def _one_line(argv, capsys) -> str:
    try:
        rc = main(argv)
    except SystemExit as done:
        rc = done.code
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip() and not LOG_LINE.match(line)]
    assert len(lines) == 1, err
    return lines[0]


def test_reward_refuses_fourway_on_a_two_response_file(tmp_path, capsys):
    # The case: [[D]] in order BA, label B, was rewarded 1.0 as a correct pick.
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    rows = [{"pair_id": "p", "order": o, "label": "B", "completion": f"<think>x</think><answer>[[{v}]]</answer>"}
            for o, v in (("AB", "B"), ("BA", "D"))]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    line = _one_line(["reward", "--format", "fourway", "--input", str(src), "--output", str(out)], capsys)
    assert line == ("j1 reward: error: format 'fourway' shows 4 responses per prompt; the J1 rewards can score "
                    "only formats that show 1 or 2 (pas, pav, pavs or pos)")
    assert not out.exists()


@pytest.mark.parametrize(("argv", "who"), [
    (["serve", "--format", "fourway", "--model", "smollm2-135m"], "j1 serve"),
    (["judge", "--format", "fourway", "--model", "smollm2-135m", "--prompt", "p", "--response-a", "a",
      "--response-b", "b"], "j1 judge"),
    (["consistency", "--format", "fourway", "--model", "smollm2-135m", "--out", "{tmp}"], "j1 consistency"),
])
def test_judging_commands_refuse_fourway(argv, who, tmp_path, capsys, no_model):
    line = _one_line([a.format(tmp=tmp_path / "run") for a in argv], capsys)
    assert line == (f"{who}: error: format 'fourway' shows 4 responses per prompt; {who} can score only formats "
                    "that show 1 or 2 (pas, pav, pavs or pos)")
