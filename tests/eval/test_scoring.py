"""judgments.jsonl -> metrics: grouping per item, parsing raw texts, the first-k scaling curve."""

from __future__ import annotations

import json

import pytest

from j1.eval.scoring import compute_metrics, read_judgments
from j1.formats import get_format
from j1.schema import RowError


def v(x):
    return f"<think>t</think><answer>[[{x}]]</answer>"


def s(n):
    return f"<think>t</think><score>{n}</score>"


def line(item, slot, texts, pairs=(("A", "B", "A"),), category="c", error=None):
    return {"schema_version": 1, "item": item, "category": category, "pairs": [list(p) for p in pairs],
            "slot": slot, "texts": texts, "finish_reasons": ["stop"] * len(texts),
            "completion_tokens": [1] * len(texts), "error": error}


def write(path, lines):
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def score(path, fmt="pav", samples=4, scheme="mean"):
    return compute_metrics(get_format(fmt), read_judgments(path), benchmark="b", scheme=scheme, model="m",
                           samples=samples, n_boot=50)


def test_scaling_uses_the_first_k_samples(tmp_path):
    # Label A. AB texts (shown = original positions): A, B, B, B.
    # BA texts are in shown positions (shown A = original B): B, B, garbage, A -> original A, A, invalid, B.
    #   k=1: AB A (right), BA A (right)                 -> acc 1,  consistent 1, no flip
    #   k=2: AB {A, B} = tie, BA {A, A} = A             -> acc .5, consistent 0, 1 tie of 2 verdicts, flip (tie vs A)
    #   k=4: AB {A, B, B, B} = B, BA {A, A, B} = A      -> acc .5, consistent 0, flip
    path = write(tmp_path / "j.jsonl", [
        line("x", "AB", [v("A"), v("B"), v("B"), v("B")]),
        line("x", "BA", [v("B"), v("B"), "garbage", v("A")]),
    ])
    m = score(path)
    sc = m["scaling"]
    assert list(sc) == ["1", "2", "4"]
    assert (sc["1"]["accuracy"], sc["1"]["consistent_accuracy"], sc["1"]["flip_rate"]) == (1.0, 1.0, 0.0)
    assert (sc["2"]["accuracy"], sc["2"]["consistent_accuracy"], sc["2"]["tie_rate"], sc["2"]["flip_rate"]) == \
        (0.5, 0.0, 0.5, 1.0)
    assert (sc["4"]["accuracy"], sc["4"]["order_accuracy"], sc["4"]["flip_rate"]) == \
        (0.5, {"AB": 0.0, "BA": 1.0}, 1.0)
    assert m["overall"] == sc["4"]  # the full run is the k = N point
    assert m["n"] == 1 and m["errors"] == 0 and m["incomplete"] == 0


def test_pointwise_mean_score_over_valid_samples(tmp_path):
    # Label A. Response A samples: 7, garbage; response B samples: 9, 3.
    #   k=1: 7 vs 9 -> B (wrong)
    #   k=2: mean(7) = 7 (garbage ignored) vs mean(9, 3) = 6 -> A (right)
    path = write(tmp_path / "j.jsonl", [line("x", "A", [s(7), "garbage"]), line("x", "B", [s(9), s(3)])])
    m = score(path, fmt="pos", samples=2)
    assert m["scaling"]["1"]["accuracy"] == 0.0 and m["scaling"]["2"]["accuracy"] == 1.0
    assert m["overall"]["order_accuracy"] is None and m["overall"]["flip_rate"] is None


def test_pointwise_invalid_score_makes_the_verdict_invalid(tmp_path):
    path = write(tmp_path / "j.jsonl", [line("x", "A", ["nope"]), line("x", "B", [s(2)])])
    m = score(path, fmt="pos", samples=1)
    assert m["overall"]["accuracy"] == 0.0 and m["overall"]["invalid_rate"] == 1.0


def test_incomplete_items_are_left_out_with_a_count(tmp_path):
    path = write(tmp_path / "j.jsonl", [line("x", "AB", [v("A")]), line("x", "BA", [v("B")]), line("y", "AB", [v("A")])])
    m = score(path, samples=1)
    assert m["n"] == 1 and m["incomplete"] == 1


def test_error_line_counts_as_invalid_and_a_later_line_replaces_it(tmp_path):
    lines = [line("x", "AB", [], error="HTTP 500"), line("x", "BA", [v("B")])]
    m = score(write(tmp_path / "j.jsonl", lines), samples=1)
    assert m["errors"] == 1 and m["overall"]["invalid_rate"] == 0.5 and m["overall"]["accuracy"] == 0.5
    m = score(write(tmp_path / "j2.jsonl", lines + [line("x", "AB", [v("A")])]), samples=1)
    assert m["errors"] == 0 and m["overall"]["accuracy"] == 1.0


def test_rmbench_items_from_lines(tmp_path):
    pairs = [(f"c{i}", f"r{j}", "A") for i in range(3) for j in range(3)]
    # Pointwise scores: chosen 7, 5, 9; rejected 6, 5, 8 (the hand-made row of test_metrics): accuracy 5/9
    scores = {"c0": 7, "c1": 5, "c2": 9, "r0": 6, "r1": 5, "r2": 8}
    path = write(tmp_path / "j.jsonl", [line("p", n, [s(x)], pairs=pairs, category="chat") for n, x in scores.items()])
    m = score(path, fmt="pos", samples=1, scheme="rmbench")
    assert m["overall"]["accuracy"] == pytest.approx(5 / 9)
    assert m["categories"]["chat"]["hard"] == pytest.approx(1 / 3)


def test_no_complete_item_raises(tmp_path):
    with pytest.raises(ValueError, match="no fully judged items"):
        score(write(tmp_path / "j.jsonl", [line("x", "AB", [v("A")])]), samples=1)


@pytest.mark.parametrize("bad,message", [
    ({"slot": "AB"}, "missing field 'item'"),
    ({**line("x", "AB", [v("A")]), "texts": "A"}, "field 'texts' must be list"),
    ({**line("x", "AB", [v("A")]), "texts": []}, "'texts' is empty but 'error' is not set"),
])
def test_malformed_judgment_line(tmp_path, bad, message):
    path = write(tmp_path / "j.jsonl", [line("x", "BA", [v("A")]), bad])
    with pytest.raises(RowError, match=rf"j.jsonl:2: .*{message}"):
        read_judgments(path)


def test_a_slot_judged_twice_is_an_error(tmp_path):
    path = write(tmp_path / "j.jsonl", [line("x", "AB", [v("A")]), line("x", "AB", [v("B")])])
    with pytest.raises(RowError, match="already judged"):
        read_judgments(path)


def test_inconsistent_item_metadata(tmp_path):
    path = write(tmp_path / "j.jsonl", [line("x", "AB", [v("A")]), line("x", "BA", [v("A")], category="other")])
    with pytest.raises(RowError, match="different 'pairs'/'category'"):
        read_judgments(path)
