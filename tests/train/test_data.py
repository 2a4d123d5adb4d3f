"""Training rows: reading pair files, units per formulation, length filter, row errors."""

from __future__ import annotations

import json

import pytest

from j1.formats import get_format
from j1.schema import RowError
from j1.train.data import Pair, build_rows, load_pairs, prompt_tokens, unit_rows
from j1.train.warmup import random_target, sft_rows

PAIR = Pair("p1", "Q?", "right", "wrong", "A")
GOOD = {"id": "ok", "prompt": "q", "chosen": "c", "rejected": "r", "kind": "k", "source": "s"}


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "formulation,orders,formats",
    [
        ("pav", ["AB", "BA"], ["pav", "pav"]),
        ("pas", ["AB", "BA"], ["pas", "pas"]),
        ("pavs", ["AB", "BA"], ["pavs", "pavs"]),
        ("pos", ["A", "B"], ["pos", "pos"]),
        ("multitask", ["AB", "BA", "A", "B"], ["pas", "pas", "pos", "pos"]),
    ],
)
def test_unit_rows(formulation, orders, formats):
    rows = unit_rows(PAIR, formulation)
    assert [r["order"] for r in rows] == orders and [r["judge_format"] for r in rows] == formats
    assert all(r["pair_id"] == "p1" and r["label"] == "A" for r in rows)
    first = rows[0]["prompt"][-1]["content"]
    if formulation != "pos":  # AB shows "right" first, BA shows "wrong" first
        assert first.index("right") < first.index("wrong")
        second = rows[1]["prompt"][-1]["content"]
        assert second.index("wrong") < second.index("right")


def test_unit_rows_use_the_judge_template():
    from j1.formats import get_format

    full, compact = unit_rows(PAIR, "pav"), unit_rows(PAIR, "pav", "compact")
    assert compact[0]["prompt"] == get_format("pav", "compact").render(PAIR.prompt, PAIR.response_a, PAIR.response_b)
    assert compact[0]["prompt"] != full[0]["prompt"]
    assert [(r["order"], r["judge_format"]) for r in compact] == [(r["order"], r["judge_format"]) for r in full]


def test_unit_rows_end_with_the_prefill(embedded_backend):
    head = "<think>t</think>\n<answer>[["
    rows, plain = unit_rows(PAIR, "multitask", "compact", head), unit_rows(PAIR, "multitask", "compact")
    assert [r["prompt"] for r in rows] == [[*p["prompt"], {"role": "assistant", "content": head}] for p in plain]
    # the length filter counts the open prefill, not a closed message plus a new assistant header
    tok = embedded_backend.tokenizer
    extra = len(tok(head, add_special_tokens=False).input_ids)
    assert prompt_tokens(tok, rows[0]["prompt"]) == prompt_tokens(tok, plain[0]["prompt"]) + extra


def test_pair_record_file_places_chosen_by_seeded_coin(tmp_path):
    rows = [{"id": f"x{i}", "prompt": "q", "chosen": "good", "rejected": "bad", "kind": "k", "source": "s"}
            for i in range(40)]
    pairs = load_pairs(_write(tmp_path / "p.jsonl", rows), pair_seed=3)
    for p in pairs:
        assert (p.response_a if p.label == "A" else p.response_b) == "good"
    labels = [p.label for p in pairs]
    assert 10 < labels.count("A") < 30  # both placements occur (a coin per pair)
    assert [p.label for p in load_pairs(tmp_path / "p.jsonl", pair_seed=3)] == labels  # reproducible
    assert [p.label for p in load_pairs(tmp_path / "p.jsonl", pair_seed=4)] != labels


def _mix(pid="m1", order="AB", label="B", **kw):
    shown = label if order == "AB" else {"A": "B", "B": "A"}[label]
    return {"pair_id": pid, "order": order, "prompt": "q", "response_a": "x", "response_b": "y", "label": label,
            "label_shown": shown, "kind": "chat", "source": "s", **kw}


def test_mix_rows(tmp_path):
    (pair,) = load_pairs(_write(tmp_path / "m.jsonl", [_mix(), _mix(order="BA")]))
    assert pair == Pair("m1", "q", "x", "y", "B", "chat")


@pytest.mark.parametrize(
    "rows,msg",
    [
        ([GOOD, {"id": "a", "prompt": "q", "chosen": "c"}], "p.jsonl:2: missing field 'rejected'"),
        ([GOOD, {"id": "a", "prompt": 3, "chosen": "c", "rejected": "r", "kind": "k", "source": "s"}],
         "p.jsonl:2: field 'prompt' must be a string"),
        ([_mix(), _mix(order="XY")], "p.jsonl:2: field 'order' must be AB or BA"),
        ([_mix(), _mix(order="BA", label_shown="B")], "p.jsonl:2: field 'label_shown'"),
        ([_mix()], "pair 'm1' has only order"),
        ([_mix(), _mix()], "appears twice in order AB"),
        ([_mix(), _mix(order="BA", prompt="other")], "disagree"),
    ],
)
def test_bad_rows_name_file_line_and_field(tmp_path, rows, msg):
    with pytest.raises(RowError, match=msg):
        load_pairs(_write(tmp_path / "p.jsonl", rows))


def test_empty_file(tmp_path):
    with pytest.raises(RowError, match="no pairs"):
        load_pairs(_write(tmp_path / "p.jsonl", []))


class _CharTokenizer:
    """One token per character: enough to test the length filter without a model."""

    def apply_chat_template(self, messages, add_generation_prompt, tokenize):
        return "".join(m["content"] for m in messages)

    def __call__(self, text, add_special_tokens=False):
        return type("Enc", (), {"input_ids": list(text)})()


def test_length_filter_drops_whole_units():
    from j1.train.data import unit_rows

    long = Pair("p2", "Q?", "x" * 5000, "y", "A")
    cap_from = "vllm_max_model_length 2064 - max_completion_length 64"
    rows, counts = build_rows([PAIR, long], "pav", tokenizer=_CharTokenizer(), max_prompt_tokens=2000,
                              cap_from=cap_from)
    assert [r["pair_id"] for r in rows] == ["p1", "p1"]

    def chars(row):  # one token per character
        return sum(len(m["content"]) for m in row["prompt"])

    # Both orders of p2 hold the same characters: the tie names the later order, BA.
    assert counts == {"pairs": 2, "units": 1, "dropped_long_units": 1, "prompt_token_limit": 2000,
                      "prompt_limit_from": cap_from, "longest_prompt_tokens": max(map(chars, rows)),
                      "longest_dropped": {"pair_id": "p2", "order": "BA", "tokens": chars(unit_rows(long, "pav")[1])}}
    with pytest.raises(ValueError, match="no training rows left.*every prompt is over vllm_max_model_length"):
        build_rows([long], "pav", tokenizer=_CharTokenizer(), max_prompt_tokens=2000, cap_from=cap_from)


@pytest.mark.parametrize("args, expected", [
    # the engine's context less the completion budget, or max_prompt_tokens, whichever is lower
    ((None, 8192, "vllm_max_model_length", 4096), (4096, "vllm_max_model_length 8192 - max_completion_length 4096")),
    ((5000, 8192, "vllm_max_model_length", 4096), (4096, "vllm_max_model_length 8192 - max_completion_length 4096")),
    ((3000, 8192, "vllm_max_model_length", 4096), (3000, "max_prompt_tokens 3000")),
    ((3000, None, None, 4096), (3000, "max_prompt_tokens 3000")),
    ((None, None, None, 4096), (None, None)),
    ((None, 4097, "the model's max_position_embeddings", 4096),
     (1, "the model's max_position_embeddings 4097 - max_completion_length 4096")),
])
def test_prompt_cap(args, expected):
    from j1.train.data import prompt_cap

    assert prompt_cap(*args) == expected


@pytest.mark.parametrize("use_vllm, vllm_len, model_len, expected", [
    (True, 8192, 131072, (8192, "vllm_max_model_length")),
    (True, None, 131072, (131072, "the model's max_position_embeddings")),  # vLLM infers it from the config
    (False, 8192, 2048, (2048, "the model's max_position_embeddings")),  # transformers generation
    (False, None, None, (None, None)),
])
def test_engine_context(use_vllm, vllm_len, model_len, expected):
    from j1.train.data import engine_context

    assert engine_context(use_vllm, vllm_len, model_len) == expected


@pytest.mark.parametrize("fmt", ["pav", "pas", "pavs", "pos"])
def test_warmup_targets_parse_and_are_balanced(fmt):
    import random

    rng = random.Random(0)
    parsed = [get_format(fmt).parse(random_target(fmt, rng)) for _ in range(200)]
    assert all(p.valid for p in parsed)
    assert all(len(p.thought.split()) <= 12 for p in parsed)  # short thoughts
    if fmt != "pos":
        share_a = sum(p.verdict.value == "A" for p in parsed) / len(parsed)
        assert 0.4 < share_a < 0.6  # label-free and no position bias taught


def test_sft_rows_are_seeded_prompt_completion():
    rows = unit_rows(PAIR, "multitask")
    a, b = sft_rows(rows, 1), sft_rows(rows, 1)
    assert a == b and a[0]["prompt"] == rows[0]["prompt"]
    assert a[0]["completion"][0]["role"] == "assistant"
    assert get_format("pos").parse(a[3]["completion"][0]["content"]).valid


@pytest.mark.parametrize("fmt,answers", [
    ("pav", ["<answer>[[A]]</answer>", "<answer>[[B]]</answer>"]),  # p1's chosen is A: shown first, then second
])
def test_gold_targets_name_the_better_response_as_shown(fmt, answers):
    rows = unit_rows(PAIR, fmt)
    out = sft_rows(rows * 10, 3, verdicts="gold")
    assert [o["completion"][0]["content"].split("\n", 1)[1] for o in out] == answers * 10


@pytest.mark.parametrize("fmt", ["pas", "pavs"])
def test_gold_scores_rank_the_better_response_first(fmt):
    for o, r in zip(sft_rows(unit_rows(PAIR, fmt) * 20, 4, verdicts="gold"), unit_rows(PAIR, fmt) * 20, strict=True):
        parsed = get_format(fmt).parse(o["completion"][0]["content"])
        better = "A" if r["order"] == "AB" else "B"
        assert parsed.valid and parsed.scores[better] > parsed.scores["B" if better == "A" else "A"]


def test_prefilled_rows_train_the_rest_of_the_answer_only():
    from j1.models import load_tokenizer, resolve_model

    tok = load_tokenizer(resolve_model(None))
    prefill = "<think>I compare both.</think>\n<answer>[["
    rows = unit_rows(PAIR, "pav", prefill=prefill)
    out = sft_rows(rows, 0, verdicts="gold", tokenizer=tok)
    # the prompt is the text a judge continues (the prefill left open); the target is the letter and tags
    assert all(o["prompt"].endswith(prefill) and "<|im_start|>user" in o["prompt"] for o in out)
    assert [o["completion"] for o in out] == ["A]]</answer>", "B]]</answer>"]
    # a prefill that does not start the format's answer is refused, naming the flag
    with pytest.raises(ValueError, match="--assistant_prefill"):
        sft_rows(unit_rows(PAIR, "pav", prefill="<think>x</think>\n<score>"), 0, tokenizer=tok)


def test_rows_show_the_inputs_a_recipe_names_where_a_pair_has_them():
    """--judge_inputs reference: a pair with a reference shows it in both orders; one without shows none; an input
    no pair has is refused (the manifest would say the judge read what it never saw)."""
    with_ref = Pair("p1", "Q?", "right", "wrong", "A", reference="right", criteria="Be exact.")
    rows, counts = build_rows([with_ref, PAIR], "pav", inputs=["reference"])
    texts = [r["prompt"][-1]["content"] for r in rows]
    assert ["<reference-" in t for t in texts] == [True, True, False, False]
    assert not any("<criteria-" in t for t in texts)  # not named: not shown
    assert counts["inputs"] == {"reference": 1}
    plain, counts = build_rows([with_ref], "pav")
    assert "<reference-" not in plain[0]["prompt"][-1]["content"] and "inputs" not in counts
    with pytest.raises(ValueError, match="--judge_inputs criteria: no training pair has a criteria"):
        build_rows([PAIR], "pav", inputs=["criteria"])


def test_mix_rows_carry_the_inputs(tmp_path):
    from j1.schema import PairRecord, both_orders

    rows = both_orders(PairRecord("p", "q", "c", "r", "math", "s", reference="4"), 0)
    path = _write(tmp_path / "mix.jsonl", [{**r.__dict__} | {"criteria": None} for r in rows])
    (pair,) = load_pairs(path)
    assert pair.reference == "4" and pair.criteria is None
