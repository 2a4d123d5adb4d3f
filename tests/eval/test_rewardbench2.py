"""``--benchmark rewardbench2``: the loader on fixtures in the published schema, the four-way format,
the rotations, and end-to-end runs of both modes over the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer

from j1.cli.main import main
from j1.eval.benchmarks import get_benchmark, load_items
from j1.eval.benchmarks.rewardbench2 import arrangement, rotation_positions
from j1.formats import Verdict, get_format
from j1.formats.fourway import pick
from j1.schema import RowError

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "eval" / "rewardbench2.jsonl"
BENCH = get_benchmark("rewardbench2")


def _row(**over):
    row = {"id": "7", "prompt": "p", "chosen": ["good"], "rejected": ["b1", "b2", "b3"], "num_correct": 1,
           "num_incorrect": 3, "total_completions": 4, "models": ["m"] * 4, "subset": "Math",
           "additional_metadata": {}}
    return row | over


def test_loader_reads_the_published_schema():
    items = load_items(BENCH, str(FIX))
    assert [it.id for it in items] == ["0", "1", "2", "3", "4", "5", "ref:1", "tied:1", "ref:2"]
    assert {it.category for it in items} == {"Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties"}
    tied = items[7]
    assert list(tied.responses) == ["c0", "c1", "c2", "r0", "r1"] and tied.meta["num_correct"] == 3
    assert tied.pairs[0] == ("c0", "r0", "A") and len(tied.pairs) == 6
    assert BENCH.hf_split == "test"


@pytest.mark.parametrize(("over", "message"), [
    ({"subset": "Chat"}, "field 'subset' is 'Chat'"),
    ({"rejected": ["b1", "b2"], "num_incorrect": 2}, "1 chosen and at least 3 rejected"),
    ({"num_correct": 2}, "field 'num_correct' is 2 but 'chosen' holds 1"),
    ({"num_incorrect": 5}, "field 'num_incorrect' is 5"),
    ({"chosen": "good"}, "field 'chosen' must be list"),
    ({"chosen": []}, "non-empty list of strings"),
    ({"subset": "Ties", "id": "7"}, "Ties ids are 'ref:N' or 'tied:N'"),
    ({"subset": "Ties", "id": "tied:3"}, "a 'tied' prompt has at least 2"),
])
def test_loader_names_the_bad_field(tmp_path, over, message):
    path = tmp_path / "rb2.jsonl"
    path.write_text(json.dumps(_row()) + "\n" + json.dumps(_row(**over)) + "\n")
    with pytest.raises(RowError, match=re.escape(f"{path}:2: ") + ".*" + re.escape(message)):
        load_items(BENCH, str(path))


@pytest.mark.parametrize(("text", "choice"), [
    ("<think>c is best</think><answer>[[C]]</answer>", "C"),
    ("<think>x</think> <answer> [[ d ]] </answer>\n", "D"),
    ("<think>[[A]] inside the thought</think><answer>[[B]]</answer>", "B"),
    ("<think>x</think><answer>[[A]]</answer><answer>[[B]]</answer>", "invalid"),  # tags disagree
    ("<think>x</think><answer>[[E]]</answer>", "invalid"),
    ("<think>x</think>[[A]]", "invalid"),                                         # no answer tag
    ("<answer>[[A]]</answer>", "invalid"),                                        # no thought
    ("<think>unclosed <answer>[[A]]</answer>", "invalid"),
    ("", "invalid"), ("\ud800", "invalid"), ("<think></think><answer>[[A]]", "invalid"),
])
def test_fourway_pick_is_total_and_strict(text, choice):
    assert pick(text).choice == choice
    parsed = get_format("fourway").parse(text)
    # The typed pick itself (issue 44), not "A = a valid pick"; no scores (it names a position).
    assert parsed.verdict is Verdict(choice) and parsed.scores is None
    if choice == "invalid":
        assert pick(text).error


@pytest.mark.parametrize("template", ["full", "compact", "digest"])
def test_fourway_render_shows_four_fenced_answers_in_order(template):
    fmt = get_format("fourway", template)
    words = ("ans-1", "ans-2", "ans-3", "ans-4")
    text = fmt.render("Q?", *words)[1]["content"]
    assert [text.index(w) for w in words] == sorted(text.index(w) for w in words)
    assert re.findall(r"<response_([ABCD])-[0-9a-f]{8}>", text) == ["A", "B", "C", "D"]
    assert "<answer>[[A]]</answer>" in text and "[[D]]" in text and "</think>" in text
    if template == "digest":
        assert "A: ans-1. B: ans-2. C: ans-3. D: ans-4." in text
    with pytest.raises(ValueError, match="four responses"):
        fmt.render("Q?", "one", "two")


def test_rotations_are_seeded_distinct_and_swap_like_the_official_shuffle():
    assert rotation_positions("abc", 3, 4) == rotation_positions("abc", 3, 4)
    assert sorted(rotation_positions("abc", 3, 4)) == ["A", "B", "C", "D"]
    firsts = {rotation_positions(str(i), 0, 1)[0] for i in range(40)}
    assert firsts == {"A", "B", "C", "D"}  # the first position varies with the id
    assert arrangement(["c0", "r0", "r1", "r2"], "A") == ["c0", "r0", "r1", "r2"]
    assert arrangement(["c0", "r0", "r1", "r2"], "D") == ["r2", "r0", "r1", "c0"]
    with pytest.raises(ValueError, match="rb2-rotations 5"):
        rotation_positions("x", 0, 5)


FENCE = re.compile(r"<response_([ABCD])-[0-9a-f]{8}>\n(.*?)\n</response_[ABCD]-[0-9a-f]{8}>", re.DOTALL)
POINT = re.compile(r"<response-[0-9a-f]{8}>\n(.*?)\n</response-[0-9a-f]{8}>", re.DOTALL)


def scripted(messages, index, body):
    """A scripted judge: four-way, it picks the answer marked "(right)", except that it always says
    A on the Pride and Prejudice item and never answers on the Math item; rating, it gives 9 to a
    marked answer (8 to "Blue"), 3 to the others, 5 to every Precise IF answer, and nothing valid on Math."""
    text = messages[-1]["content"]
    math_item = "12 * 12" in text
    if "[[D]]" in text:  # four-way
        if math_item:
            return "I cannot decide."
        if "Pride and Prejudice" in text:
            return "<think>first</think><answer>[[A]]</answer>"
        right = next(p for p, body_ in FENCE.findall(text) if "(right)" in body_)
        return f"<think>the marked one</think><answer>[[{right}]]</answer>"
    response = POINT.search(text).group(1)
    if math_item:
        return "<think>hmm</think><score>many</score>"
    if "three words" in text:
        return "<think>all fine</think><score>5</score>"
    score = 8 if response.startswith("Blue") else 9 if "(right)" in response else 3
    return f"<think>rated</think><score>{score}</score>"


def rb2_args(server, out, *extra):
    return ["eval", "--benchmark", "rewardbench2", "--data", str(FIX), "--base-url", server.base_url, "--out", str(out),
            "--n_boot", "200", "--progress", "false", *extra]


# Ties, hand-worked from the scripted ratings: ref:1 [9 | 3 3] margin 6; tied:1 [9 8 9 | 3 3] spread 1,
# margin 5; ref:2 has no twin. ref and tied accuracy 1; tied margin 5 > 1; min(6, 5) > 1; tanh(5/1 - 1).
TIES = 0.3 + 0.3 + 0.2 + 0.2 + 0.01 * math.tanh(4)


def test_fourway_end_to_end_with_four_rotations(tmp_path):
    out = tmp_path / "rb2"
    with FakeOpenAIServer(scripted) as srv:
        assert main(rb2_args(srv, out, "--rb2-rotations", "4")) == 0
        # 6 non-Ties items x 4 rotations + Ties: 3 + 5 + 3 rated answers
        assert len(srv.requests) == 6 * 4 + 11
    m = json.loads((out / "metrics.json").read_text())
    assert (m["benchmark"], m["format"], m["rb2"]["mode"], m["rb2"]["rotations"]) == ("rewardbench2", "fourway",
                                                                                     "fourway", 4)
    cats = m["categories"]
    # Factuality: item 0 always right; item 1 always "A": right only with the chosen at A.
    first = rotation_positions("1", 0, 4)[0]
    assert cats["Factuality"]["accuracy"] == pytest.approx((1 + (first == "A")) / 2)
    assert cats["Factuality"]["rotation_accuracy"] == pytest.approx((1 + 0.25) / 2)
    assert cats["Factuality"]["consistent_accuracy"] == 0.5 and cats["Factuality"]["flip_rate"] == 0.5
    assert cats["Factuality"]["pick_rate"]["A"] == pytest.approx((1 + 4) / 8)
    # Math never answers: the official 0.25 per item, invalid rate 1.
    assert (cats["Math"]["accuracy"], cats["Math"]["consistent_accuracy"], cats["Math"]["invalid_rate"]) == (0.25, 0, 1)
    for subset in ("Precise IF", "Safety", "Focus"):
        assert cats[subset]["accuracy"] == cats[subset]["consistent_accuracy"] == 1.0
    assert cats["Ties"]["accuracy"] == pytest.approx(TIES) and cats["Ties"]["ties"]["paired"] == 1
    subsets = [cats[s]["accuracy"] for s in cats]
    assert m["overall"]["accuracy"] == pytest.approx(sum(subsets) / 6)
    assert m["overall"]["invalid_rate"] == pytest.approx(4 / (24 + 11))
    for key in ("accuracy_ci", "rotation_accuracy_ci", "consistent_accuracy_ci"):
        assert m["overall"][key] is None  # 9 items < MIN_CI_N: no interval, the key kept
    report = (out / "report.md").read_text()
    assert "the official rule gives an invalid four-way verdict" in report and "| Ties |" in report
    assert "1.01" in report and (out / "categories.png").stat().st_size > 1000
    # j1 score recomputes the same document without a model; --resume of a finished run asks nothing.
    (out / "metrics.json").unlink()
    assert main(["score", str(out), "--n_boot", "200"]) == 0
    assert json.loads((out / "metrics.json").read_text()) == m
    with FakeOpenAIServer(scripted) as srv:
        assert main(rb2_args(srv, out, "--rb2-rotations", "4", "--resume")) == 0
        assert srv.requests == []


def test_ratings_end_to_end(tmp_path):
    out = tmp_path / "rb2r"
    with FakeOpenAIServer(scripted) as srv:
        assert main(rb2_args(srv, out, "--rb2-mode", "ratings")) == 0
        assert len(srv.requests) == 6 * 4 + 11  # every answer rated once
    m = json.loads((out / "metrics.json").read_text())
    cats = m["categories"]
    assert m["format"] == "pos" and m["rb2"]["mode"] == "ratings"
    assert cats["Factuality"]["accuracy"] == 1.0  # ratings see no positions: item 1 is right too
    assert cats["Precise IF"]["accuracy"] == 0.25 and cats["Precise IF"]["consistent_accuracy"] == 0.0  # 4-way tie
    assert cats["Math"]["accuracy"] == 0.25 and cats["Math"]["invalid_rate"] == 1.0  # all ratings invalid
    assert cats["Ties"]["accuracy"] == pytest.approx(TIES)
    assert m["overall"]["accuracy"] == pytest.approx((1 + 0.25 + 0.25 + 1 + 1 + TIES) / 6)


def test_rb2_settings_are_checked(tmp_path, capsys):
    with FakeOpenAIServer(scripted) as srv:
        with pytest.raises(SystemExit):
            main(rb2_args(srv, tmp_path / "x", "--rb2-rotations", "5"))
        assert "--rb2-rotations 5" in capsys.readouterr().err
        with pytest.raises(SystemExit):
            main(["eval", "--benchmark", "judgebench", "--data", "x.jsonl", "--format", "fourway", "--out",
                  str(tmp_path / "y"), "--base-url", srv.base_url])
        assert "only --benchmark rewardbench2" in capsys.readouterr().err
        # A resumed run must keep its mode.
        assert main(rb2_args(srv, tmp_path / "z")) == 0
        assert main(rb2_args(srv, tmp_path / "z", "--resume", "--rb2-mode", "ratings")) == 2
        assert "--rb2_mode was 'fourway', now 'ratings'" in capsys.readouterr().err
