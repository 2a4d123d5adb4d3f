"""``j1 synth mismatch``: the pure parts as tables (cleaning, the length rule, the seeded draw, the
never-its-own-answer rule), then the real command on GSM8K train and its bad-input exits."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from j1.cli.main import main
from j1.data.mismatch import KIND, clean_solution, is_short, mismatch_indices, mismatch_pairs, select
from j1.data.sources import Problem
from j1.schema import read_pairs

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text, expected", [
    ("48/2 = <<48/2=24>>24 clips.\n#### 72", "48/2 = 24 clips.\nThe answer is 72"),
    ("a <<1+1=2>>2, b <<2*3=6>>6\n#### 6", "a 2, b 6\nThe answer is 6"),  # every annotation goes
    ("#### 1,000", "The answer is 1,000"),
    ("####7", "The answer is 7"),  # no space after the marks
    ("no final line", "no final line"),  # other sources pass through
    ("  padded\n#### 3  \n", "padded\nThe answer is 3"),
    ("", ""),
    ("café costs €3 <<3*1=3>>3\n#### 3", "café costs €3 3\nThe answer is 3"),
    ("x #### 5", "x #### 5"),  # only a line that starts with #### is the final answer
    ("<<unclosed 4", "<<unclosed 4"),
])
def test_clean_solution(text, expected):
    assert clean_solution(text) == expected


@pytest.mark.parametrize("prompt, answer, max_words, expected", [
    ("one two three", "a b c", 3, True),  # at the limit
    ("one two three four", "a b", 3, False),  # question too long
    ("one", "a b c d", 3, False),  # answer too long
    ("one", "x <<1+1=2>>2", 2, True),  # counted on the source text; an annotation glued to a word adds none
    ("one", None, 3, False),  # no gold answer: never a pair
    ("", "", 1, True),
])
def test_is_short(prompt, answer, max_words, expected):
    assert is_short(Problem("i", prompt, "f:1", answer), max_words) is expected


def _problems(n: int, answer=lambda i: f"step {i}\n#### {i}") -> list[Problem]:
    return [Problem(f"id{i}", f"question {i}?", f"f:{i + 1}", answer(i)) for i in range(n)]


def test_select_is_seeded_and_takes_short_ones_only():
    ps = _problems(10) + [Problem("long", "a " * 50, "f:11", "x")]
    a, b = select(ps, 5, 10, random.Random(3)), select(ps, 5, 10, random.Random(3))
    assert [p.id for p in a] == [p.id for p in b] and len(a) == 5 and "long" not in {p.id for p in a}
    assert [p.id for p in select(ps, 10, 10, random.Random(4))] != [p.id for p in select(ps, 10, 10, random.Random(5))]


@pytest.mark.parametrize("n, available", [(6, 5), (2, 1), (1, 1)])
def test_select_fails_when_too_few_are_short(n, available):
    with pytest.raises(ValueError, match="--max_words"):
        select(_problems(available), n, 30, random.Random(0))


@pytest.mark.parametrize("answers", [
    ["a", "b"],
    ["a", "b", "c", "d", "e"],
    ["a", "a", "b"],  # a duplicate answer is never the rejected one
    ["a", "a", "a", "b", "b"],
    ["b", "a", "a", "a"],  # one different answer is enough for all
    [f"s{i % 7}" for i in range(50)],
])
@pytest.mark.parametrize("seed", range(20))
def test_mismatch_indices_never_pick_the_same_answer(answers, seed):
    picked = mismatch_indices(answers, random.Random(seed))
    assert len(picked) == len(answers)
    assert all(j != i and answers[j] != answers[i] for i, j in enumerate(picked))


def test_mismatch_indices_spread_over_the_others():
    # 4 items, 4000 draws for item 0: each of the 3 others is drawn about a third of the time.
    counts = {1: 0, 2: 0, 3: 0}
    rng = random.Random(0)
    for _ in range(1000):
        for i, j in enumerate(mismatch_indices(["a", "b", "c", "d"], rng)):
            if i == 0:
                counts[j] += 1
    assert all(250 < c < 420 for c in counts.values()), counts


@pytest.mark.parametrize("answers", [["a"], [], ["a", "a"], ["c", "c", "c"]])
def test_mismatch_indices_fail_without_another_answer(answers):
    with pytest.raises(ValueError):
        mismatch_indices(answers, random.Random(0))


def test_mismatch_pairs_records():
    ps = _problems(8)
    recs = mismatch_pairs(ps, pairs=6, max_words=30, seed=1, source="src.jsonl")
    by_id = {p.id: p for p in ps}
    assert len(recs) == 6 and len({r.id for r in recs}) == 6
    for r in recs:
        own, other = by_id[r.id], by_id[r.meta["rejected_from"]]
        assert (r.kind, r.source, r.prompt, r.meta["seed"]) == (KIND, "src.jsonl", own.prompt, 1)
        assert r.chosen == clean_solution(own.answer) and r.rejected == clean_solution(other.answer)
        assert other.id != own.id and r.rejected != r.chosen
    assert recs == mismatch_pairs(ps, pairs=6, max_words=30, seed=1, source="src.jsonl")
    assert recs != mismatch_pairs(ps, pairs=6, max_words=30, seed=2, source="src.jsonl")


def _script_selection(path: Path, n: int, max_words: int = 30, seed: int = 0) -> list[str]:
    """The question draw of the research script behind the recipe (make_dev_pairs.py, now this command)."""
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    short = [r for r in rows if len(r["question"].split()) <= max_words and len(r["answer"].split()) <= max_words]
    random.Random(seed).shuffle(short)
    return [r["question"] for r in short[:n]]


def test_cli_on_gsm8k_train(shared_data, tmp_path):
    source = shared_data / "gsm8k_train.jsonl"
    out = tmp_path / "mismatch.jsonl"
    argv = [sys.executable, "-m", "j1.cli.main", "synth", "mismatch", "--source", str(source), "--out", str(out),
            "--pairs", "60", "--seed", "0"]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "60 mismatch pairs" in done.stdout
    pairs = read_pairs(out)
    assert [p.prompt for p in pairs] == _script_selection(source, 60)  # the recipe's questions, in its order
    golds = {p.prompt: p.chosen for p in pairs}
    for p in pairs:
        assert p.kind == KIND and p.source == "gsm8k_train.jsonl"
        assert "<<" not in p.chosen and "####" not in p.chosen and p.chosen.splitlines()[-1].startswith("The answer is ")
        assert p.rejected != p.chosen and p.rejected in golds.values()
    run = json.loads((tmp_path / "mismatch.run.json").read_text())
    assert run["command"] == "j1 synth mismatch" and run["pairs"] == 60 and run["config"]["max_words"] == 30
    first = out.read_bytes()
    assert subprocess.run(argv, cwd=REPO, capture_output=True, timeout=300).returncode == 0
    assert out.read_bytes() == first  # seeded: the same file again

    # The chain's next step: j1 synth mix splits the file by prompt.
    assert main(["synth", "mix", "--inputs", str(out), "--out_dir", str(tmp_path / "data"),
                 "--heldout_fraction", "0.2"]) == 0
    held = [json.loads(line) for line in (tmp_path / "data" / "heldout.jsonl").open()]
    train = [json.loads(line) for line in (tmp_path / "data" / "train.jsonl").open()]
    assert len(held) == 2 * 12 and len(train) == 2 * 48
    assert not {r["prompt"] for r in held} & {r["prompt"] for r in train}


@pytest.mark.parametrize("rows, extra, message", [
    ([{"instruction": "hi"}], [], "no problem field"),  # not a math source
    ([{"question": "q1", "answer": "a\n#### 1"}, {"question": "q2", "answer": "b\n#### 2"}], ["--pairs", "3"],
     "only 2 of 2 questions"),
    ([{"question": "q1", "answer": "same"}, {"question": "q2", "answer": "same"}], ["--pairs", "2"],
     "same answer"),
    ([{"question": 5, "answer": "a"}], [], "must be str"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, rows, extra, message):
    src = tmp_path / "src.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code = main(["synth", "mismatch", "--source", str(src), "--out", str(tmp_path / "o.jsonl"), *extra])
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert code == 2 and len(errors) == 1 and errors[0].startswith("j1 synth mismatch: error:") and message in errors[0]
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("argv", [["--out", "o.jsonl"], ["--source", "s.jsonl", "--out", "o.json"],
                                  ["--source", "s.jsonl", "--out", "o.jsonl", "--pairs", "1"],
                                  ["--source", "s.jsonl", "--out", "o.jsonl", "--max_words", "0"]])
def test_bad_flags_exit_2(argv):
    with pytest.raises(SystemExit) as done:
        main(["synth", "mismatch", *argv])
    assert done.value.code == 2


def test_math_pairs_keep_the_final_answer_as_their_reference():
    from j1.data.mismatch import final_answer

    # GSM8K's "#### x" (commas dropped), MATH's last box, and an instruction's output (none)
    assert [final_answer(t) for t in ("so 3\n#### 1,200", r"hence $\boxed{(3, -1)}$", "Bright and warm.")] == \
        ["1200", "(3, -1)", None]
    ps = [Problem(str(i), f"q{i}", "f", f"s{i}\n#### {i}") for i in range(3)]
    pairs = mismatch_pairs(ps, pairs=3, max_words=5, seed=0, source="x")
    assert all(p.reference == p.id for p in pairs)  # question i's final answer is i


@pytest.mark.parametrize("text, expected", [
    ("48/2 = <<48/2=24>>24 clips.\n#### 72", "48/2 = 24 clips.\nThe answer is $\\boxed{72}$."),
    ("#### 1,000  ", "The answer is $\\boxed{1000}$."),  # a number as its reference reads it
    ("####7", "The answer is $\\boxed{7}$."),
    ("no final line", "no final line"),  # nothing to box
    ("x #### 5", "x #### 5"),
])
def test_clean_solution_boxed(text, expected):
    from j1.data.mathcheck import final_answer

    out = clean_solution(text, boxed=True)
    assert out == expected
    assert final_answer(out) == final_answer(clean_solution(text))  # the same final answer, in MATH's form


def test_boxed_share_boxes_a_seeded_share_of_questions_and_keeps_the_draw():
    ps = _problems(40)
    plain = mismatch_pairs(ps, pairs=40, max_words=30, seed=1, source="x")
    half = mismatch_pairs(ps, pairs=40, max_words=30, seed=1, source="x", boxed_share=0.5)
    every = mismatch_pairs(ps, pairs=40, max_words=30, seed=1, source="x", boxed_share=1.0)
    assert [(p.id, p.meta["rejected_from"], p.reference) for p in plain] == \
        [(p.id, p.meta["rejected_from"], p.reference) for p in half]  # same pairs, same references
    boxed = {p.id for p in half if "\\boxed" in p.chosen}
    assert 10 <= len(boxed) <= 30 and all("\\boxed" in p.chosen for p in every)
    for p in half:  # a question's answer reads the same as chosen and as rejected
        assert ("\\boxed" in p.rejected) == (p.meta["rejected_from"] in boxed)
    assert half == mismatch_pairs(ps, pairs=40, max_words=30, seed=1, source="x", boxed_share=0.5)
