"""Benchmarks that carry reference inputs use them (issue 54): MT-Bench's reference-guided categories, PPE
correctness's gold answer and RewardBench 2 Precise IF's constraint; ``--use_reference`` follows each
benchmark's official rule unless given."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from j1.eval.benchmarks import get_benchmark, load_items
from j1.eval.items import item_prompts, keep_inputs
from j1.formats import get_format

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "eval"


def _conversation(turns: list[str], replies: list[str]) -> list[dict]:
    out = []
    for user, reply in zip(turns, replies, strict=True):
        out += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
    return out


def _row(qid: int, turn: int) -> dict:
    turns = [f"question {qid} turn 1", f"question {qid} turn 2"]
    return {"question_id": qid, "model_a": "m1", "model_b": "m2", "winner": "model_a", "judge": "expert", "turn": turn,
            "conversation_a": _conversation(turns, ["a1", "a2"]), "conversation_b": _conversation(turns, ["b1", "b2"])}


# Reference answers in FastChat's reference_answer/gpt-4.jsonl form (our own texts), for the questions that have
# them: one each of reasoning (101), math (111, 120) and coding (121, 130).
REFERENCES = {qid: [f"ref {qid} turn 1", f"ref {qid} turn 2"] for qid in (101, 111, 120, 121, 130)}

# The hand-worked table: question id and turn -> the MT-Bench category (ids 81-160, ten per category in the order
# writing, roleplay, reasoning, math, coding, extraction, stem, humanities) and the reference the official judge
# reads: math, reasoning and coding only (FastChat's NEED_REF_CATS), both reference turns for a turn-2 judgment.
TABLE = [
    (81, 1, "writing", None),
    (90, 2, "writing", None),
    (91, 1, "roleplay", None),
    (101, 1, "reasoning", "ref 101 turn 1"),
    (101, 2, "reasoning", "[Reply to turn 1]\nref 101 turn 1\n\n[Reply to turn 2]\nref 101 turn 2"),
    (111, 1, "math", "ref 111 turn 1"),
    (120, 2, "math", "[Reply to turn 1]\nref 120 turn 1\n\n[Reply to turn 2]\nref 120 turn 2"),
    (121, 1, "coding", "ref 121 turn 1"),
    (130, 1, "coding", "ref 130 turn 1"),
    (131, 1, "extraction", None),
    (145, 2, "stem", None),
    (160, 1, "humanities", None),
]


@pytest.fixture
def mtbench(tmp_path) -> tuple[Path, Path]:
    data = tmp_path / "mtbench_human.jsonl"
    data.write_text("".join(json.dumps(_row(q, t)) + "\n" for q, t, _, _ in TABLE))
    refs = tmp_path / "gpt-4.jsonl"
    refs.write_text("".join(json.dumps({"question_id": q, "model_id": "gpt-4", "choices": [{"index": 0, "turns": t}]})
                            + "\n" for q, t in REFERENCES.items()))
    return data, refs


def _reference_fence(messages) -> str | None:
    found = re.search(r"<reference-(\w{8})>\n(.*?)\n</reference-\1>", messages[1]["content"], re.S)
    return found.group(2) if found else None


def test_mtbench_reference_guided_categories_send_the_reference(mtbench):
    data, refs = mtbench
    items = load_items(get_benchmark("mtbench_human"), str(data), references=str(refs))
    assert [(it.meta["mt_category"], it.reference) for it in items] == [(c, r) for _, _, c, r in TABLE]
    fmt = get_format("pav")
    for it, (_, _, _, reference) in zip(items, TABLE, strict=True):
        prompts = item_prompts(fmt, it)
        assert [_reference_fence(m) for _, m in prompts] == [reference, reference]  # both orders
    # without references (--use_reference false) nothing is sent
    bare = keep_inputs(load_items(get_benchmark("mtbench_human"), str(data)), ())
    assert all(_reference_fence(m) is None for it in bare for _, m in item_prompts(fmt, it))


def test_mtbench_a_missing_reference_is_named(mtbench, tmp_path):
    from j1.schema import RowError

    data, _ = mtbench
    partial = tmp_path / "partial.jsonl"
    partial.write_text(json.dumps({"question_id": 101, "choices": [{"turns": ["r"]}]}) + "\n")
    # 101 has its first turn only: its turn-2 judgment (the table's fifth row) is the first to need more
    with pytest.raises(RowError, match=r"mtbench_human.jsonl:5: question 101 \(reasoning\) is graded against a "
                                       r"reference answer, and --references has none for turn 2"):
        load_items(get_benchmark("mtbench_human"), str(data), references=str(partial))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question_id": 101, "choices": [{"turns": "r"}]}) + "\n")
    with pytest.raises(RowError, match=f"{bad}:1: field 'choices'"):
        load_items(get_benchmark("mtbench_human"), str(data), references=str(bad))


def test_use_reference_follows_the_official_judge_unless_given(mtbench, tmp_path):
    from j1.eval.spec import EvalSpec

    data, refs = mtbench
    common = dict(data=str(data), out=str(tmp_path / "o"))
    assert EvalSpec(benchmark="mtbench_human", references=str(refs), **common).use_reference is True
    assert EvalSpec(benchmark="ppe", **common).use_reference is False
    assert EvalSpec(benchmark="generic", **common).use_reference is False
    assert EvalSpec(benchmark="mtbench_human", use_reference=False, **common).use_reference is False
    with pytest.raises(ValueError, match="pass --references FILE"):
        EvalSpec(benchmark="mtbench_human", **common)
    with pytest.raises(ValueError, match="reads no reference file"):
        EvalSpec(benchmark="ppe", references=str(refs), **common)


def test_eval_dry_run_counts_what_is_sent(mtbench, capsys, tmp_path):
    from j1.cli.main import main

    data, refs = mtbench
    out = ["--out", str(tmp_path / "never"), "--dry_run"]
    assert main(["eval", "--benchmark", "mtbench_human", "--data", str(data), "--references", str(refs), *out]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["inputs"] == {"reference": 6}  # the six math, reasoning and coding rows of TABLE
    assert main(["eval", "--benchmark", "mtbench_human", "--data", str(data), "--use_reference", "false", *out]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"] == {}


def test_ppe_correctness_keeps_the_gold_answer(tmp_path):
    row = json.loads((FIX / "ppe_math_correctness.jsonl").read_text().splitlines()[0])
    path = tmp_path / "ppe_math_correctness.jsonl"
    path.write_text(json.dumps({**row, "answer": "42"}) + "\n" + json.dumps({**row, "question_id": "m9"}) + "\n")
    items = load_items(get_benchmark("ppe"), str(path))
    assert {it.id.split(":")[0]: it.reference for it in items} == {"m1": "42", "m9": None}
    gpqa = tmp_path / "ppe_gpqa.jsonl"
    gpqa.write_text(json.dumps({**row, "correct_choice": "B"}) + "\n")
    assert {it.reference for it in load_items(get_benchmark("ppe"), str(gpqa))} == {"B"}


def test_rewardbench2_precise_if_carries_its_constraint_as_criteria(tmp_path):
    rows = [json.loads(x) for x in (FIX / "rewardbench2.jsonl").read_text().splitlines()]
    precise = next(r for r in rows if r["subset"] == "Precise IF")
    factual = next(r for r in rows if r["subset"] == "Factuality")
    path = tmp_path / "rb2.jsonl"
    meta = {"constraint": "Answer in exactly three words."}
    path.write_text(json.dumps({**precise, "additional_metadata": meta}) + "\n"
                    + json.dumps({**factual, "additional_metadata": meta}) + "\n")
    items = load_items(get_benchmark("rewardbench2"), str(path))
    assert [(it.category, it.criteria) for it in items] == [("Precise IF", "Answer in exactly three words."),
                                                             ("Factuality", None)]
