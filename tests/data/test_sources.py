"""Source loading and schema detection: GSM8K, MATH, Alpaca, seed tasks, Arena-Hard, WildChat, overrides, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from j1.data.sources import (
    chat_prompt,
    detect_math_fields,
    load_chat_prompts,
    load_math_problems,
    pair_id,
    source_name,
)
from j1.schema import RowError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "data"


def _write(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_gsm8k_fixture_detected():
    problems = load_math_problems(str(FIX / "gsm8k_tiny.jsonl"))
    assert len(problems) == 5
    assert problems[0].prompt.startswith("Tom has 3 apples")
    assert problems[1].answer.endswith("#### 3,000")
    assert problems[0].where.endswith("gsm8k_tiny.jsonl:1")


def test_math_solution_field_detected():
    problems = load_math_problems(str(FIX / "math_tiny.jsonl"))
    assert [p.answer.count("\\boxed") for p in problems] == [1, 1]


@pytest.mark.parametrize("row,expected", [
    ({"question": "q", "answer": "#### 1"}, ("question", "answer")),
    ({"problem": "p", "solution": "s", "answer": "a"}, ("problem", "answer")),  # short answer preferred
    ({"problem": "p", "solution": "s"}, ("problem", "solution")),
    ({"problem": "p", "final_answer": "3"}, ("problem", "final_answer")),
    ({"instruction": "i", "input": "", "output": "o"}, ("instruction", "output")),  # Alpaca
    ({"question": "q", "instruction": "i", "output": "o", "answer": "a"}, ("question", "answer")),
])
def test_detect_math_fields(row, expected):
    assert detect_math_fields(row, "f:1") == expected


def test_detect_math_fields_names_the_fix():
    with pytest.raises(RowError, match=r"f:3: no problem field .*--prompt-field"):
        detect_math_fields({"text": "x", "answer": "1"}, "f:3")
    with pytest.raises(RowError, match=r"f:3: no answer field .*--answer-field"):
        detect_math_fields({"question": "x"}, "f:3")


def test_math_field_overrides_and_numeric_answers(tmp_path):
    src = _write(tmp_path / "custom.jsonl", [{"q": "1+1?", "gold": 2}, {"q": "2+2?", "gold": "4"}])
    problems = load_math_problems(str(src), prompt_field="q", answer_field="gold")
    assert [(p.prompt, p.answer) for p in problems] == [("1+1?", "2"), ("2+2?", "4")]


def test_alpaca_input_is_part_of_the_question(tmp_path):
    # Without its input, "Sort these names." is not the question its output answers.
    src = _write(tmp_path / "alpaca.jsonl", [{"instruction": "Sort these names.", "input": "Bo, Al", "output": "Al, Bo"},
                                             {"instruction": "Say hi.", "input": "  ", "output": "Hi!"}])
    for problems in (load_math_problems(str(src)),
                     load_math_problems(str(src), prompt_field="instruction", answer_field="output")):
        assert [(p.prompt, p.answer) for p in problems] == [("Sort these names.\n\nBo, Al", "Al, Bo"), ("Say hi.", "Hi!")]
        assert problems[0].id == pair_id("alpaca.jsonl", "Sort these names.\n\nBo, Al")
    with pytest.raises(RowError, match=r"bad\.jsonl:1: field 'input' must be str"):
        load_math_problems(str(_write(tmp_path / "bad.jsonl", [{"instruction": "i", "input": 3, "output": "o"}])))


def test_math_missing_answer_names_file_line_and_field():
    with pytest.raises(RowError, match=r"math_bad\.jsonl:2: missing field 'answer'"):
        load_math_problems(str(FIX / "math_bad.jsonl"))


def test_unreadable_row_names_file_and_line(tmp_path):
    src = tmp_path / "broken.jsonl"
    src.write_text('{"question": "a", "answer": "#### 1"}\n{"question": \n', encoding="utf-8")
    with pytest.raises(RowError, match=r"broken\.jsonl:2: not valid JSON"):
        load_math_problems(str(src))


def test_limit_and_dedup(tmp_path):
    rows = [{"question": "same", "answer": "#### 1"}] * 3 + [{"question": f"q{i}", "answer": "#### 1"} for i in range(5)]
    src = _write(tmp_path / "dups.jsonl", rows)
    assert [p.prompt for p in load_math_problems(str(src))] == ["same", "q0", "q1", "q2", "q3", "q4"]
    assert [p.prompt for p in load_math_problems(str(src), limit=2)] == ["same", "q0"]


@pytest.mark.parametrize("row,expected", [
    ({"instruction": "Do it.", "input": ""}, "Do it."),
    ({"instruction": "Sum.", "input": "1, 2"}, "Sum.\n\n1, 2"),
    ({"instruction": "Antonyms?", "instances": [{"input": "hot", "output": "cold"}]}, "Antonyms?\n\nhot"),  # seed tasks
    ({"uid": "x", "prompt": "Use ABC notation."}, "Use ABC notation."),  # Arena-Hard
    ({"prompt": ["first turn", "second"]}, "first turn"),
    ({"conversation": [{"role": "user", "content": "héllo ✓"}, {"role": "assistant", "content": "hi"}]}, "héllo ✓"),
    ({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}, "u"),
    ({"conversations": [{"from": "human", "value": "v"}]}, "v"),
    ({"question": "q?"}, "q?"),
])
def test_chat_prompt_schemas(row, expected):
    assert chat_prompt(row, "f:1") == expected


def test_chat_prompt_override_and_errors():
    assert chat_prompt({"body": "text"}, "f:1", prompt_field="body") == "text"
    with pytest.raises(RowError, match=r"f:1: missing field 'body'"):
        chat_prompt({"text": "x"}, "f:1", prompt_field="body")
    with pytest.raises(RowError, match=r"f:2: no prompt field"):
        chat_prompt({"other": "x"}, "f:2")
    with pytest.raises(RowError, match=r"f:4: field 'conversation' has no user turn"):
        chat_prompt({"conversation": [{"role": "assistant", "content": "x"}]}, "f:4")


def test_chat_bad_type_names_file_line_and_field():
    with pytest.raises(RowError, match=r"chat_bad\.jsonl:2: field 'instruction' must be str"):
        load_chat_prompts(str(FIX / "chat_bad.jsonl"))


def test_real_chat_sources(shared_data):
    alpaca = load_chat_prompts(str(shared_data / "alpaca_en_demo_llamafactory.json"), limit=50)
    seeds = load_chat_prompts(str(shared_data / "alpaca_seed_tasks.jsonl"), limit=50)
    arena = load_chat_prompts(str(shared_data / "arena_hard_v0.1_questions.jsonl"), limit=50)
    assert len(alpaca) == len(seeds) == len(arena) == 50
    assert alpaca[0].prompt == "Describe a process of making crepes."
    assert arena[0].prompt.startswith("Use ABC notation")


def test_real_math_sources(shared_data):
    gsm = load_math_problems(str(shared_data / "gsm8k_train.jsonl"), limit=3)
    hendrycks = load_math_problems(str(shared_data / "math_train.jsonl"), limit=3)
    assert all("####" in p.answer for p in gsm)
    assert all("\\boxed" not in p.answer for p in hendrycks)  # the short `answer` field wins


def test_hf_id_offline_fails_clearly(hub_offline):
    with pytest.raises(FileNotFoundError, match="neither a local file nor a loadable Hugging Face dataset"):
        load_math_problems("no-such-owner/no-such-dataset-j1")


def test_ids_are_deterministic_and_source_scoped():
    assert pair_id("a.jsonl", "x") == pair_id("a.jsonl", "x")
    assert pair_id("a.jsonl", "x") != pair_id("b.jsonl", "x")
    assert pair_id("a.jsonl", "x") != pair_id("a.jsonl", "y")
    assert len(pair_id("a", "x")) == 16
    assert source_name(str(FIX / "gsm8k_tiny.jsonl")) == "gsm8k_tiny.jsonl"


def test_chat_prompts_over_max_words_are_skipped(tmp_path, caplog):
    # WildChat-style pasted documents: a request of 6 words and one of 2,000; --max-prompt-words 1000
    rows = [{"conversation": [{"role": "user", "content": "Write a haiku about the sea."}]},
            {"conversation": [{"role": "user", "content": "Summarise: " + "word " * 2000}]},
            {"instruction": "Name three primes."}]
    path = _write(tmp_path / "chat.jsonl", rows)
    with caplog.at_level("WARNING"):
        kept = load_chat_prompts(str(path), max_words=1000)
    assert [p.prompt for p in kept] == ["Write a haiku about the sea.", "Name three primes."]
    assert "1 prompts over 1000 words skipped" in caplog.text
    assert len(load_chat_prompts(str(path))) == 3  # unset: all kept
    assert [p.prompt for p in load_chat_prompts(str(path), max_words=1000, limit=1)] == ["Write a haiku about the sea."]
    with pytest.raises(RowError, match=r"only empty prompts or prompts over 2 words \(--max-prompt-words\)"):
        load_chat_prompts(str(path), max_words=2)
