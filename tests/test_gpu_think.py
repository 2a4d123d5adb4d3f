"""bench/gpu_think.py: the thinking judge's state that comes back from the GPU, and its evaluation here
(thought statistics by hand; the held-out groups; the table, run on the shipped judge)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("gpu_think", REPO / "bench" / "gpu_think.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


T = _module()
ANSWER = "</think>\n<answer>[[A]]</answer>"


@pytest.mark.parametrize("texts, expected", [
    # one fixed thought (j1-135m's prefill): 7 words, 1 distinct, all of them the commonest
    ([f"<think>I compare both responses with the request.{ANSWER}"] * 3,
     {"answers": 3, "thoughts": 3, "mean_words": 7.0, "distinct": 1, "top_share": 1.0}),
    # whitespace does not make a thought new; an unclosed thought and no thought are not read: (2 + 4) / 2 words
    (["<think>a  b" + ANSWER, "<think>a b" + ANSWER, "<think>never closed", "[[A]]", "<think>w x y z" + ANSWER],
     {"answers": 5, "thoughts": 3, "mean_words": 8 / 3, "distinct": 2, "top": "a b", "top_share": 2 / 3}),
    (["[[A]]"], {"answers": 1, "thoughts": 0, "mean_words": None, "distinct": 0, "top": None, "top_share": None}),
    (["<think>é ü" + ANSWER, "<think>" + ANSWER], {"thoughts": 2, "mean_words": 1.0, "distinct": 2, "top_share": 0.5}),
])
def test_thought_stats(texts, expected):
    got = T.thought_stats(texts)
    assert {k: got[k] for k in expected} == pytest.approx(expected)


def test_thought_stats_needs_answers():
    with pytest.raises(ValueError, match="no answers"):
        T.thought_stats([])


def test_eval_rows_are_the_shipped_heldout_pairs_by_group():
    rows = T.eval_rows(None)
    counts = {g: sum(r["category"] == g for r in rows) for g in ("GSM8K test", "MATH", "Alpaca")}
    assert counts == {"GSM8K test": 60, "MATH": 60, "Alpaca": 60} and len(rows) == 180
    assert {r["kind"] for r in rows if r["category"] == "Alpaca"} == {"chat-mismatch"}
    assert [r["category"] for r in T.eval_rows(2)] == ["GSM8K test"] * 2 + ["MATH"] * 2 + ["Alpaca"] * 2


def test_state_keeps_what_a_resume_and_the_evaluation_need(tmp_path):
    think = tmp_path / "think"
    for folder in ("train/final", "train/checkpoint-5", "train/checkpoint-12", "warmup"):
        (think / folder).mkdir(parents=True)
        for name in ("adapter_model.safetensors", "adapter_config.json", "judge.json", "tokenizer.json",
                     "chat_template.jinja"):
            (think / folder / name).write_text(name)
    for name in ("optimizer.pt", "trainer_state.json"):
        (think / "train" / "checkpoint-12" / name).write_text(name)
    for name in ("train/run.json", "train/log.jsonl", "warmup/warmup.json", "warmup/run.json"):
        (think / name).write_text("{}")
    state = T.state_tree(think, tmp_path / "state")
    kept = sorted(str(p.relative_to(state)) for p in state.rglob("*") if p.is_file())
    assert kept == sorted([
        "train/final/adapter_config.json", "train/final/adapter_model.safetensors", "train/final/judge.json",
        "train/checkpoint-12/adapter_config.json", "train/checkpoint-12/adapter_model.safetensors",
        "train/checkpoint-12/judge.json", "train/checkpoint-12/optimizer.pt", "train/checkpoint-12/trainer_state.json",
        "train/log.jsonl", "train/run.json", "warmup/run.json", "warmup/warmup.json"])  # the newest checkpoint only


def test_eval_reads_a_judge_folder_only(tmp_path, capsys):
    assert T.main(["eval", "--judge", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no judge.json" in err


@pytest.mark.slow
def test_evaluate_by_group_beside_j1_135m(tmp_path):
    """The whole evaluation on 1 pair a group, the shipped judge standing in for the returned one (two model
    loads and 12 judgments: ~1 minute on a loaded 2-core CPU)."""
    from j1.judging.judges import judge_folder

    result = T.evaluate({"returned": str(judge_folder("j1-135m")), "j1-135m": "j1-135m"}, tmp_path, 1)
    assert set(result["judges"]) == {"returned", "j1-135m"}
    for judge in result["judges"].values():
        assert set(judge["groups"]) == {"GSM8K test", "MATH", "Alpaca"}
        for g in judge["groups"].values():
            # both orders of one pair; j1-135m's prefill fixes its thought: one thought, 7 words
            assert g["n"] == 1 and g["thought"]["answers"] == 2
            assert g["thought"]["distinct"] == 1 and g["thought"]["mean_words"] == 7.0
    a, b = (result["judges"][n]["groups"] for n in ("returned", "j1-135m"))
    assert all(a[g]["consistent_accuracy"] == b[g]["consistent_accuracy"] for g in a)  # the same judge, greedy
    table = (tmp_path / "thinking.md").read_text()
    assert table.count("\n") == 2 + 6 and "| GSM8K test | returned | 1 |" in table
    assert json.loads((tmp_path / "thinking.json").read_text()) == result
