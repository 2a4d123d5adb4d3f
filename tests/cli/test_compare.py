"""``j1 compare DIR1 DIR2 …``: finished runs side by side, judges by benchmark."""

from __future__ import annotations

import json

import pytest

from j1.cli.main import main
from j1.eval.report_extra import compare_row, compare_table


def _metrics(model, bench, **overall):
    block = {"accuracy": None, "consistent_accuracy": None, "flip_rate": None, "invalid_rate": None} | overall
    return {"benchmark": bench, "format": "pav", "model": model, "n": 10, "overall": block}


def _write(path, metrics):
    path.mkdir(parents=True)
    (path / "metrics.json").write_text(json.dumps(metrics))
    return str(path)


def test_table_puts_judges_in_rows_and_benchmarks_in_columns(tmp_path, capsys):
    runs = [
        _write(tmp_path / "a", _metrics("base", "judgebench", accuracy=0.5, consistent_accuracy=0.25,
                                        consistent_accuracy_ci=[0.1, 0.4], flip_rate=0.75, invalid_rate=0.1)),
        _write(tmp_path / "b", _metrics("j1", "judgebench", accuracy=0.6, consistent_accuracy=0.4, flip_rate=0.2,
                                        invalid_rate=0.0)),
        _write(tmp_path / "c", _metrics("j1", "consistency", ipi=0.125, tov_rate=0.05, flip_rate=0.125,
                                        invalid_rate=0.0)),
    ]
    assert main(["compare", *runs, "--out", str(tmp_path / "t.md")]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    # A benchmark's columns that none of its runs has are left out (no accuracy for consistency, no IPI for eval).
    assert lines[0] == ("| judge | judgebench n | judgebench accuracy | judgebench consistent | judgebench flip | "
                        "judgebench invalid | consistency n | consistency flip | consistency invalid | "
                        "consistency IPI | consistency TOV rate |")
    assert lines[2] == "| base | 10 | 50.0 | 25.0 [10.0, 40.0] | 75.0 | 10.0 | – | – | – | – | – |"
    assert lines[3] == "| j1 | 10 | 60.0 | 40.0 | 20.0 | 0.0 | 10 | 12.5 | 0.0 | 12.5 | 5.0 |"
    assert (tmp_path / "t.md").read_text() == out


def test_json_rows(tmp_path, capsys):
    run = _write(tmp_path / "a", _metrics("j1", "rewardbench2", accuracy=0.3, invalid_rate=0.5))
    assert main(["compare", run, "--json", "true"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == [compare_row(tmp_path / "a", json.loads((tmp_path / "a" / "metrics.json").read_text()))]
    assert rows[0]["accuracy"] == 0.3 and rows[0]["ipi"] is None


@pytest.mark.parametrize(("content", "message"), [
    (None, "metrics.json not found"), ("{", "not valid JSON"), ("[]", "field 'overall' missing"),
])
def test_bad_run_folders_are_one_clear_line(tmp_path, capsys, content, message):
    folder = tmp_path / "r"
    folder.mkdir()
    if content is not None:
        (folder / "metrics.json").write_text(content)
    assert main(["compare", str(folder)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_two_runs_of_one_model_on_one_benchmark_are_two_rows_named_by_folder():
    rows = [compare_row("runs/x", _metrics("j1", "b", accuracy=0.1)),
            compare_row("runs/y", _metrics("j1", "b", accuracy=0.9))]
    table = compare_table(rows)
    assert "| j1 (x) | 10 | 10.0 |" in table and "| j1 (y) | 10 | 90.0 |" in table
