"""Thoughts by construction (``j1.data.rationales``): the pure parts as hand-worked tables, then ``j1 synth
thoughts`` on real GSM8K pairs, with a scripted teacher, and what the warm-up trains from them."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from j1.cli.main import main
from j1.data.mathcheck import final_answer, same_answer
from j1.data.rationales import (
    keeps_reference,
    math_reference,
    math_solved,
    mismatch,
    rationale,
    rewrite,
    terms,
    with_thoughts,
)
from j1.formats import get_format
from j1.schema import PairRecord, PlacedPair, read_pairs, read_train_rows

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"


@pytest.mark.parametrize("text, expected", [
    ("", []),
    ("the of and", []),  # function words only
    ("Horses chase mice; horses sleep.", ["horse", "chase", "mice", "sleep"]),  # once each, plural s dropped
    ("Cats and buses", ["cats", "buse"]),  # only past four letters: "cats" stays (as "bus" would)
    ("glass grass", ["glass", "grass"]),  # a double s is not a plural
    ("He paid $1,200.50 for 3 apples.", ["paid", "1200.50", "3", "apple"]),  # thousands comma dropped
    ("Café déjà vu", ["café", "déjà"]),  # unicode letters stay; two-letter words go
    ("x = y + 2", ["2"]),  # single letters are not terms
])
def test_terms(text, expected):
    assert terms(text) == expected


@pytest.mark.parametrize("text, expected", [
    (r"so $\boxed{\frac{1}{2}}$", r"\frac{1}{2}"),
    ("12*5=60\nThe answer is 1,060", "1060"),  # GSM8K's final line, comma dropped
    ("#### 72", "72"),
    ("The final answer is: 7.", "7"),
    (r"The answer is 3, so \boxed{4}", "4"),  # the box wins over the line
    (r"\boxed{}", None),  # an empty box is no answer, and no line follows
    ("The answer is blue", None),  # only numbers after "The answer is"
    ("", None),
])
def test_final_answer(text, expected):
    assert final_answer(text) == expected


@pytest.mark.parametrize("a, b, expected", [
    ("72", "72", True), ("1,000", "1000", True), ("$5", "5", True), ("5.0", "5", True),
    (r"\dfrac{1}{2}", r"\frac{1}{2}", True), (r"\frac{1}{2}", "0.5", True),  # math-verify decides these
    ("7", "8", False), ("x+1", "(", False),  # an unreadable answer is no match, never an error
])
def test_same_answer(a, b, expected):
    assert same_answer(a, b) is expected


def test_math_reference_both_orders_hand_worked():
    r = math_reference("3+4=7\nThe answer is 7", "The answer is 8", "7")
    assert r.reads == ("reference",) and r.supported
    # chosen shown as A: its fact comes first, and the conclusion names A; shown as B, the facts swap places
    assert r.thoughts["A"] == ("The reference answer is 7. Response A's final answer is 7, which matches it. "
                               "Response B's final answer is 8, which does not match it. So response A is better.")
    assert r.thoughts["B"] == ("The reference answer is 7. Response A's final answer is 8, which does not match it. "
                               "Response B's final answer is 7, which matches it. So response B is better.")


@pytest.mark.parametrize("chosen, rejected, reference, why", [
    ("The answer is 7", "The answer is 8", "7", "math: final answers against the reference"),
    ("The answer is 7", "no final line", "7", "math: final answers against the reference"),  # rejected has none
    ("The answer is 8", "The answer is 7", "7", "the chosen final answer does not match the reference"),
    ("The answer is 7", "The answer is 7.0", "7", "both final answers match the reference"),
    ("no final line", "The answer is 8", "7", "the chosen final answer does not match the reference"),
])
def test_math_reference_support(chosen, rejected, reference, why):
    r = math_reference(chosen, rejected, reference)
    assert r.why == why and r.supported is why.startswith("math:")


def test_math_reference_names_a_missing_answer():
    r = math_reference("The answer is 7", "I do not know.", "7")
    assert "Response B gives no final answer" not in r.thoughts["A"]  # the fact is "B's gives no final answer"
    assert "Response B's gives no final answer" in r.thoughts["A"]


def test_math_solved_hand_worked():
    r = math_solved("The answer is 12", "The answer is 10", "12")
    assert r.reads == () and r.thoughts["B"] == (
        "Response A's final answer is 10. Response B's final answer is 12. Solving the problem gives 12. "
        "So response B is better.")
    assert not math_solved("The answer is 12", "The answer is 12", "12").supported


def test_mismatch_hand_worked():
    # the first 6 words of the request and of each response, as the digest prompt quotes them; the chosen one
    # answers the request, the other was written for another request
    r = mismatch("Tom has 5 apples. How many apples does he have?", "Tom has 5 apples, so 5.",
                 "Boil the pasta for ten minutes,\nthen drain it.")
    assert r.thoughts["A"] == ('The request begins "Tom has 5 apples. How many". Response A begins "Tom has 5 apples, '
                               'so 5.", which answers it. Response B begins "Boil the pasta for ten minutes,", which '
                               'answers another request. So response A is better.')
    assert r.thoughts["B"] == ('The request begins "Tom has 5 apples. How many". Response A begins "Boil the pasta for '
                               'ten minutes,", which answers another request. Response B begins "Tom has 5 apples, '
                               'so 5.", which answers it. So response B is better.')
    assert r.reads == ()


@pytest.mark.parametrize("prompt, chosen, rejected, supported, quoted", [
    ("Tom has 5 apples.", "5 apples", "pasta", True, '"5 apples"'),
    ("Tom has 5 apples.", "pasta", "5 apples", True, '"pasta", which answers it'),  # known by construction
    ("Say </think> now", "</think> ok", "no", True, '"(/think) ok"'),  # a quote never closes the thought
    ("  \n ", "Yes.", "No.", False, None),  # nothing to quote of the request
])
def test_mismatch_support(prompt, chosen, rejected, supported, quoted):
    r = mismatch(prompt, chosen, rejected)
    assert r.supported is supported
    if quoted:
        assert quoted in r.thoughts["A"] and r.thoughts["A"].count("</think>") == 0


def test_rewrite_hand_worked():
    r = rewrite("Name two red fruits.", "Name two green fruits.", "Cherry and red apple.", "Kiwi and green apple.")
    assert r.thoughts["B"] == ("The request asks for red, where a different request would ask for green. "
                               "Response A uses green instead. Response B uses red. So response B is better.")
    assert not rewrite("Name red fruits.", "Name red fruits!", "a", "b").supported  # nothing changed


@pytest.mark.parametrize("kind, reference, meta, why", [
    ("math-mismatch", None, {}, "mismatch: how each response begins, and which answers the request"),
    ("math-mismatch", "7", {}, "math: final answers against the reference"),  # a reference decides first
    ("math", None, {"gold": "7"}, "math: final answers against the solved answer"),
    ("math", None, {}, "math pair without a reference or meta 'gold'"),
    ("chat", None, {}, "chat pair without meta 'noisy_prompt'"),
    ("chat", None, {"noisy_prompt": "How many pears does Tom have?"}, "chat: the request's changed terms in each response"),
    ("preference", None, {}, "no construction for kind 'preference'"),
])
def test_rationale_by_kind(kind, reference, meta, why):
    r = rationale("How many apples does Tom have?", "Tom has apples: the answer is 7", "Pasta: the answer is 8",
                  kind, reference=reference, meta=meta)
    assert r.why == why


def test_keeps_reference_share_is_seeded():
    ids = [f"p{i}" for i in range(400)]
    kept = [keeps_reference(i, 0.5, 0) for i in ids]
    assert kept == [keeps_reference(i, 0.5, 0) for i in ids]  # the same coin each time
    assert 160 < sum(kept) < 240  # about half of 400
    assert kept != [keeps_reference(i, 0.5, 1) for i in ids]  # another seed, another draw


def test_with_thoughts_keeps_the_pair_and_records_what_it_reads():
    p = PairRecord("p", "What is 3 + 4?", "3 + 4 = 7\nThe answer is 7", "The answer is 8", "math-mismatch", "s",
                   reference="7")
    out, _ = with_thoughts(p)
    assert (out.id, out.reference, out.thoughts["reads"]) == ("p", "7", ["reference"])
    dropped, why = with_thoughts(p, reference_share=0.0)  # without it, the mismatch construction
    assert dropped.reference is None and dropped.thoughts["reads"] == [] and why.startswith("mismatch")
    assert pickle.loads(pickle.dumps(out)) == out


def test_every_thought_ends_in_a_valid_pav_answer_naming_its_letter():
    fmt = get_format("pav")
    r = mismatch("Tom has 5 apples.", "5 apples", "pasta")
    for letter, thought in r.thoughts.items():
        parsed = fmt.parse(f"<think>{thought}</think>\n<answer>[[{letter}]]</answer>")
        assert parsed.valid and parsed.verdict.value == letter and f"response {letter} is better" in thought


def test_placed_pair_thought_follows_the_shown_letter_and_refuses_an_unseen_reference():
    thoughts = {"A": "first is better", "B": "second is better", "reads": ["reference"]}
    pair = PlacedPair("p", "q", "bad", "good", "B", reference="7", thoughts=thoughts)  # good is response B
    assert pair.thought("AB", ["reference"]) == "second is better"  # AB shows good second
    assert pair.thought("BA", ["reference"]) == "first is better"
    with pytest.raises(ValueError, match="quote the reference, which the judge is not shown; pass --judge_inputs"):
        pair.thought("AB", [])


@pytest.mark.skipif(not (SHARED / "gsm8k_train.jsonl").exists(), reason="needs ../shared/data")
def test_synth_thoughts_on_gsm8k_pairs_then_mix_keeps_them(tmp_path, capsys):
    pairs = tmp_path / "gsm8k.jsonl"
    assert main(["synth", "mismatch", "--source", str(SHARED / "gsm8k_train.jsonl"), "--pairs", "40",
                 "--out", str(pairs)]) == 0
    out = tmp_path / "gsm8k_t.jsonl"
    assert main(["synth", "thoughts", "--pairs", str(pairs), "--out", str(out), "--reference_share", "0.5"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    written = read_pairs(out)
    assert line.startswith(f"{len(written)} of 40 pairs with thoughts")
    run = json.loads((tmp_path / "gsm8k_t.run.json").read_text())
    assert run["with_thoughts"] == len(written) >= 36 and sum(run["constructions"].values()) == 40
    quoting = [p for p in written if p.thoughts["reads"] == ["reference"]]
    assert 0 < len(quoting) < len(written) and all(p.reference for p in quoting)
    assert all(p.reference is None for p in written if p not in quoting)  # the others lost it
    for p in quoting:  # each quotes the pair's own gold answer
        assert p.thoughts["A"].startswith(f"The reference answer is {p.reference}.")
    assert main(["synth", "mix", "--inputs", str(out), "--heldout_fraction", "0", "--out_dir",
                 str(tmp_path / "mix")]) == 0
    rows = read_train_rows(tmp_path / "mix" / "train.jsonl")
    assert all(r.thoughts is not None for r in rows) and len(rows) == 2 * len(written)


def test_synth_thoughts_teacher_kept_only_where_it_agrees(tmp_path, capsys):
    from tests.fake_openai import FakeOpenAIServer

    pairs = tmp_path / "pairs.jsonl"
    rows = [{"id": f"p{i}", "prompt": f"How many apples does Tom{i} have?", "chosen": "Tom has 5 apples.",
             "rejected": "Boil the pasta.", "kind": "chat-mismatch", "source": "s"} for i in range(3)]
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def reply(messages, index, body):
        text = messages[-1]["content"]
        chosen_first = text.index("Tom has 5 apples.") < text.index("Boil the pasta.")
        letter = "A" if chosen_first else "B"
        if "Tom2" in text and not chosen_first:  # the teacher gets one order of one pair wrong
            letter = "A"
        return f"<think>The apples answer is {letter}.</think>\n<answer>[[{letter}]]</answer>"

    with FakeOpenAIServer(reply) as server:
        out = tmp_path / "t.jsonl"
        assert main(["synth", "thoughts", "--pairs", str(pairs), "--out", str(out), "--teacher", server.base_url,
                     "--teacher_model", "scripted-judge"]) == 0
    said = capsys.readouterr().out
    assert "teacher: 2 pairs kept, 1 thoughts dropped for a verdict that disagrees" in said
    written = {p.id: p for p in read_pairs(out)}
    assert written["p0"].thoughts["A"] == "The apples answer is A." and written["p0"].thoughts["B"] == (
        "The apples answer is B.")
    assert written["p2"].thoughts["A"].startswith("The request begins")  # kept its constructed thoughts
    assert json.loads((tmp_path / "t.run.json").read_text())["teacher"] == {"asked": 6, "disagreed": 1, "kept": 2}


def test_warmup_rationale_targets_are_each_orders_thought_then_the_gold_verdict():
    from j1.train.data import build_rows
    from j1.train.warmup import sft_rows

    thoughts = {"A": "Tom's fact first. So response A is better.", "B": "Tom's fact second. So response B is better.",
                "reads": []}
    pair = PlacedPair("p", "How many apples?", "pasta", "5 apples", "B", thoughts=thoughts)
    rows, _ = build_rows([pair], "pav", prefill=None)
    targets = [r["completion"][0]["content"] for r in sft_rows(rows, 0, verdicts="rationale")]
    # AB shows the better response second (B), BA first (A)
    assert targets == ["<think>Tom's fact second. So response B is better.</think>\n<answer>[[B]]</answer>",
                       "<think>Tom's fact first. So response A is better.</think>\n<answer>[[A]]</answer>"]
    bare, _ = build_rows([PlacedPair("p", "q", "x", "y", "A")], "pav")
    with pytest.raises(ValueError, match="has no thoughts for what the judge is shown; add them with `j1 synth"):
        sft_rows(bare, 0, verdicts="rationale")
    # thoughts that quote a reference are no thoughts for a prompt that does not show it
    quoting = PlacedPair("p", "q", "x", "y", "A", reference="7", thoughts={**thoughts, "reads": ["reference"]})
    assert "thought" not in build_rows([quoting], "pav")[0][0]
    assert build_rows([quoting], "pav", inputs=["reference"])[0][0]["thought"] == thoughts["A"]  # AB shows x (better) as A


def test_synth_mismatch_writes_thoughts_beside_its_pairs(tmp_path):
    src = tmp_path / "q.jsonl"
    rows = [{"question": f"How many apples does Tom{i} pick on day {i}?", "answer": f"Tom{i} picks {i} apples.\n#### {i}"}
            for i in range(1, 5)]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "m.jsonl"
    assert main(["synth", "mismatch", "--source", str(src), "--pairs", "4", "--out", str(out)]) == 0
    pairs = read_pairs(out)
    assert len(pairs) == 4 and all(p.thoughts and p.thoughts["reads"] == ["reference"] for p in pairs)
    for p in pairs:  # the gold answer is the reference, and the thought holds each final answer against it
        assert p.thoughts["A"].startswith(f"The reference answer is {p.reference}. Response A's final answer is "
                                          f"{p.reference}, which matches it.")
