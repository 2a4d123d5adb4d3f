"""Honest reports (issue 26): consistent accuracy and invalid rate beside every headline accuracy, a
warning in words when the invalid rate passes 5% or the benchmark's rule rewards invalid output, the
invalid rate in the category plot, and no lone-dot scaling plot from one sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer

from j1.cli.main import main
from j1.eval.benchmarks import get_benchmark, load_items
from j1.eval.items import item_prompts
from j1.eval.report import category_panels, plot, render_markdown, report_warnings
from j1.formats import get_format

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "eval"


def first_shown_only_judge():
    """A scripted pav judge that answers only when the better response is shown first, and writes no
    verdict otherwise: per pair one order right, the other invalid."""
    items = load_items(get_benchmark("judgebench"), str(FIX / "judgebench.jsonl"))
    better_first = {}
    for it in items:
        label = it.pairs[0][2]
        for slot, messages in item_prompts(get_format("pav"), it):
            better_first[messages[-1]["content"]] = (slot, label) in {("AB", "A"), ("BA", "B")}

    def reply(messages, index, body):
        if better_first[messages[-1]["content"]]:
            return "<think>the first is right</think><answer>[[A]]</answer>"
        return "<think>hmm</think> I cannot tell."

    return reply


def test_judgebench_headline_cannot_hide_invalid_verdicts(tmp_path):
    out = tmp_path / "run"
    with FakeOpenAIServer(first_shown_only_judge()) as srv:
        assert main(["eval", "--benchmark", "judgebench", "--data", str(FIX / "judgebench.jsonl"), "--base-url",
                     srv.base_url, "--format", "pav", "--out", str(out), "--n_boot", "50", "--progress", "false"]) == 0
    o = json.loads((out / "metrics.json").read_text())["overall"]
    # 5 pairs, each right in one order (+1) and invalid in the other (0): JudgeBench's rule says right.
    assert (o["accuracy"], o["consistent_accuracy"], o["invalid_rate"]) == (1.0, 0.0, 0.5)
    report = (out / "report.md").read_text()
    assert "**accuracy 100.0** (the benchmark's rule) · consistent 0.0, invalid 50.0" in report
    assert "50.0% of the verdicts are invalid (no parseable verdict), above 5.0%" in report
    assert "JudgeBench's own accuracy counts an invalid verdict neither way" in report
    assert "its accuracy 100.0% overstates the judge; the consistent accuracy (right in both orders) is 0.0%" in report
    # one sample per prompt: said in words, no lone-dot plot
    assert "One sample per prompt: there is nothing to scale" in report and "k=1 |" not in report
    assert not (out / "scaling.png").exists() and "scaling.png" not in report
    assert (out / "categories.png").stat().st_size > 1000 and "![categories.png](categories.png)" in report


def _block(accuracy, consistent, invalid, flip=0.0):
    return {"n": 10, "accuracy": accuracy, "accuracy_ci": [0, 1], "consistent_accuracy": consistent,
            "consistent_accuracy_ci": [0, 1], "order_accuracy": {"AB": accuracy, "BA": accuracy},
            "flip_rate": flip, "tie_rate": 0.0, "invalid_rate": invalid}


def _metrics(benchmark, overall, categories=None, ks=("1",)):
    return {"benchmark": benchmark, "format": "pav", "model": "m", "n": 10, "overall": overall,
            "categories": categories or {"all": overall}, "scaling": {k: overall for k in ks}, "samples": 1}


@pytest.mark.parametrize("benchmark,invalid,expected", [
    ("generic", 0.0, []),
    ("generic", 0.05, []),  # 5% is the limit, not above it
    ("generic", 0.06, ["format"]),
    ("judgebench", 0.0, []),  # the rule rewards invalid output only when there is some
    ("judgebench", 0.01, ["rule"]),
    ("judgebench", 0.5, ["format", "rule"]),
    ("rmbench", 0.2, ["format"]),  # RM-Bench counts invalid as wrong: no rule warning
])
def test_report_warnings(benchmark, invalid, expected):
    found = report_warnings(_metrics(benchmark, _block(0.6, 0.3, invalid)))
    kinds = ["format" if "of the verdicts are invalid" in w else "rule" for w in found]
    assert kinds == expected


def test_every_headline_accuracy_has_consistent_and_invalid_beside_it():
    o = _block(0.7, 0.4, 0.1) | {"easy": 0.9, "normal": 0.7, "hard": 0.5}
    text = render_markdown(_metrics("rmbench", o), {"config": {}}, [])
    assert "**accuracy 70.0** (the benchmark's rule) · consistent 40.0, invalid 10.0" in text
    assert "RM-Bench levels: easy 90.0, normal 70.0, hard 50.0 (overall consistent 40.0, invalid 10.0)" in text
    o = _block(0.7, 0.4, 0.1) | {"sections": {"Chat": 0.8, "Safety": 0.6}}
    text = render_markdown(_metrics("rewardbench", o), {"config": {}}, [])
    assert "RewardBench sections: Chat 80.0, Safety 60.0 (score = their mean; overall consistent 40.0, invalid 10.0)" in text


def test_category_plot_shows_the_invalid_rate():
    # an all-invalid category: 0% consistent accuracy but a full invalid bar
    m = _metrics("generic", _block(0.5, 0.25, 0.5), {"math": _block(0.0, 0.0, 1.0), "chat": _block(1.0, 1.0, 0.0)})
    assert category_panels(m) == [("consistent accuracy (%)", [0.0, 100.0]), ("flip rate (%)", [0.0, 0.0]),
                                  ("invalid rate (%)", [100.0, 0.0])]
    pointwise = {c: b | {"flip_rate": None} for c, b in m["categories"].items()}
    assert [t for t, _ in category_panels(m | {"categories": pointwise})] == ["consistent accuracy (%)",
                                                                              "invalid rate (%)"]


def test_scaling_plot_only_with_two_or_more_k(tmp_path):
    m = _metrics("generic", _block(0.5, 0.25, 0.1), ks=("1", "2", "4"))
    assert plot(tmp_path, m) == ["scaling.png", "categories.png"] and (tmp_path / "scaling.png").exists()
    assert "| k=4 |" in render_markdown(m, {"config": {}}, [])
    # rescored with one sample: the old curve is removed, not left to mislead
    assert plot(tmp_path, _metrics("generic", _block(0.5, 0.25, 0.1))) == ["categories.png"]
    assert not (tmp_path / "scaling.png").exists()
