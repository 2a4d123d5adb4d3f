"""math-verify wrapper: hand tables, then real gold answers from ../shared/data (GSM8K and MATH train)."""

from __future__ import annotations

import json
import random

import pytest

from j1.data.mathcheck import NO_ANSWER, RIGHT, WRONG, check_answer, gsm8k_final, last_boxed, parse_gold

# (gold as a dataset writes it, a completion, expected status)
CASES = [
    # one half in its usual spellings
    ("#### 0.5", r"so \boxed{\frac{1}{2}}", RIGHT),
    ("#### 0.5", r"\boxed{1/2}", RIGHT),
    ("#### 0.5", r"\boxed{0.5}", RIGHT),
    (r"\frac{1}{2}", r"\boxed{0.5}", RIGHT),
    (r"\frac{1}{2}", r"\boxed{\dfrac{1}{2}}", RIGHT),
    ("1/2", r"\boxed{\frac12}", RIGHT),
    (r"\frac{1}{2}", r"\boxed{0.25}", WRONG),
    # thousands separators: GSM8K writes "#### 1,000"
    ("#### 1,000", r"\boxed{1000}", RIGHT),
    ("#### 1000", r"\boxed{1,000}", RIGHT),
    ("#### 1,000", r"\boxed{1{,}000}", RIGHT),
    ("#### 1,000", r"\boxed{100}", WRONG),
    ("#### 1,000", r"\boxed{10,000}", WRONG),
    # the LAST box counts; an earlier wrong box does not matter and vice versa
    ("#### 7", r"first \boxed{6}, corrected: \boxed{7}", RIGHT),
    ("#### 7", r"first \boxed{7}, then \boxed{6}", WRONG),
    # no box: no answer, even if the right number is in the text (math-verify's free-text
    # fallback would take the last number, "5" here)
    ("#### 7", "3 + 4 = 7 apples, and 5 bags", NO_ANSWER),
    ("#### 7", r"\boxed{}", NO_ANSWER),
    ("#### 7", r"\boxed{7", NO_ANSWER),  # never closed
    ("#### 7", "", NO_ANSWER),
    # MATH-style answers
    (r"\boxed{(2,2)}", r"\boxed{(2, 2)}", RIGHT),
    (r"(2,2)", r"\boxed{(2,3)}", WRONG),
    (r"x^2+1", r"\boxed{1+x^2}", RIGHT),
    (r"\sqrt{2}", r"\boxed{\sqrt 2}", RIGHT),
    (r"\sqrt{2}", r"\boxed{2}", WRONG),
    ("#### -3", r"\boxed{-3}", RIGHT),
    ("#### -3", r"\boxed{3}", WRONG),
    # unicode around the box does not matter
    ("#### 12", "Réponse : \\boxed{12} ✓", RIGHT),
]


@pytest.mark.parametrize("gold,completion,expected", CASES)
def test_check_answer_table(gold, completion, expected):
    assert check_answer(parse_gold(gold), completion).status == expected


@pytest.mark.parametrize("text,expected", [
    (r"\boxed{1}", "1"),
    (r"a \boxed{\frac{1}{2}} b", r"\frac{1}{2}"),
    (r"\boxed{1} \boxed{2}", "2"),
    (r"\fbox{3}", "3"),
    (r"\boxed{\text{{x}}}", r"\text{{x}}"),
    (r"\boxed{unclosed", None),
    ("none", None),
])
def test_last_boxed(text, expected):
    assert last_boxed(text) == expected


@pytest.mark.parametrize("answer,expected", [
    ("work\n#### 72", "72"), ("#### 1,234,567", "1234567"), ("#### 3.5", "3.5"), ("no marker", None),
    ("a #### 1 #### 2", "2"),
])
def test_gsm8k_final(answer, expected):
    assert gsm8k_final(answer) == expected


def test_unparseable_gold_raises():
    with pytest.raises(ValueError, match="cannot parse the gold"):
        parse_gold("")


def _numeric_forms(value: float) -> list[str]:
    """Other ways to write a number: plain, with thousands commas, as a decimal, as a fraction over 2."""
    forms = [repr(value) if value != int(value) else str(int(value)), f"{value}"]
    if value == int(value):
        forms += [f"{int(value):,}", f"\\frac{{{int(value) * 2}}}{{2}}"]
    return forms


def _sample(path, n, seed=0):
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    return random.Random(seed).sample(rows, n)


def _check_gsm8k(rows):
    for row in rows:
        gold = parse_gold(row["answer"])  # the whole "reasoning ... #### x" text
        value = float(gold.text)
        for form in _numeric_forms(value):
            assert check_answer(gold, f"\\boxed{{{form}}}").status == RIGHT, (row["answer"][-20:], form)
        for wrong in (value + 1, value * 10 + 3, -value - 1):
            assert check_answer(gold, f"\\boxed{{{wrong:g}}}").status == WRONG, (gold.text, wrong)


def _check_math(rows):
    for row in rows:
        for field_ in ("answer", "solution"):  # the answer field, and the boxed solution it came from
            gold = parse_gold(row[field_])
            answer = row["answer"]
            assert check_answer(gold, f"The answer is $\\boxed{{{answer}}}$.").status == RIGHT, answer
            assert check_answer(gold, f"\\boxed{{ {answer} }}").status == RIGHT, answer
            # a wrong answer: the gold plus one (an expression, a number or a tuple + 1 all differ)
            assert check_answer(gold, f"\\boxed{{{answer}+1}}").status != RIGHT, answer


def test_real_gsm8k_golds_verify_against_other_forms(shared_data):
    _check_gsm8k(_sample(shared_data / "gsm8k_train.jsonl", 40))


def test_real_math_golds_verify_against_themselves(shared_data):
    _check_math(_sample(shared_data / "math_train.jsonl", 40))


@pytest.mark.slow
def test_real_golds_many(shared_data):
    _check_gsm8k(_sample(shared_data / "gsm8k_train.jsonl", 1000, seed=1))
    _check_math(_sample(shared_data / "math_train.jsonl", 1000, seed=1))
