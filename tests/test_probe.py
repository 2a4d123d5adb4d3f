"""``j1.probe`` and ``j1 probe``: the statistics on hand-worked tables, the forced texts, the log-odds
on a tiny random model (batching, LoRA adapters), and the command end to end."""

from __future__ import annotations

import json
import math

import pytest
from train.tiny import write_pairs

from j1.chat import render, with_prefill
from j1.cli.main import main
from j1.formats import get_format
from j1.pairs import shown
from j1.probe import (
    DEFAULT_THOUGHT,
    PairLogOdds,
    ProbeStats,
    answer_head,
    forced_texts,
    letter_ids,
    mean_se,
    pair_logodds,
    probe_rows,
    summarise,
    summarise_by_kind,
    target_letter,
    verdict_logodds,
)
from j1.train.data import Pair

# The prefill of the recipe's training run and of its eval: the probe must read this very context.
RECIPE_PREFILL = "<think>I compare both responses with the request.</think>\n<answer>[["


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tiny(tiny_model):
    from j1.probe import load_judge

    return load_judge(str(tiny_model))


# --- statistics ------------------------------------------------------------------------------------

# (label, ab, ba) -> (better in AB, better in BA, margin, first_shown). ab/ba are log-odds of the
# first-shown response. Label A: A is shown first in AB (better = ab) and second in BA (better = -ba);
# label B the other way round. margin = mean of the two; first_shown = (ab + ba) / 2.
PAIR_TABLE = [
    (("A", 2.0, 1.0), (2.0, -1.0, 0.5, 1.5)),  # prefers the first-shown response, a little more when it is A
    (("B", 2.0, 1.0), (-2.0, 1.0, -0.5, 1.5)),  # the same log-odds with B better: the margin changes sign
    (("A", 3.0, 3.0), (3.0, -3.0, 0.0, 3.0)),  # position only: no content margin
    (("A", 1.0, -1.0), (1.0, 1.0, 1.0, 0.0)),  # content only: A in both orders
    (("B", -1.0, 1.0), (1.0, 1.0, 1.0, 0.0)),  # content only: B in both orders
    (("B", 0.0, 0.0), (0.0, 0.0, 0.0, 0.0)),  # indifferent
]


@pytest.mark.parametrize(("pair", "expected"), PAIR_TABLE, ids=[str(p) for p, _ in PAIR_TABLE])
def test_pair_logodds_better_margin_and_position(pair, expected):
    label, ab, ba = pair
    p = PairLogOdds("p", label, ab, ba)
    assert (p.better("AB"), p.better("BA"), p.margin, p.first_shown) == pytest.approx(expected)


def test_pair_logodds_rejects_an_unknown_order():
    with pytest.raises(ValueError, match="order"):
        PairLogOdds("p", "A", 1.0, 1.0).better("BB")


@pytest.mark.parametrize(("values", "expected"), [
    ([5.0], (5.0, None)),  # one value: no spread to estimate an error from
    ([1.0, 3.0], (2.0, 1.0)),  # sd = sqrt(((1-2)^2 + (3-2)^2) / 1) = sqrt(2); se = sqrt(2) / sqrt(2) = 1
    ([0.0, 0.0, 0.0], (0.0, 0.0)),
    ([1.0, 2.0, 3.0, 4.0], (2.5, math.sqrt(5 / 12))),  # var = (2.25 + .25 + .25 + 2.25) / 3 = 5/3; se^2 = 5/3 / 4
    ([-1.0, 1.0], (0.0, 1.0)),
])
def test_mean_se(values, expected):
    mean, se = mean_se(values)
    assert mean == pytest.approx(expected[0])
    assert se == (None if expected[1] is None else pytest.approx(expected[1]))


def test_mean_se_of_nothing_raises():
    with pytest.raises(ValueError):
        mean_se([])


def test_summarise_hand_worked():
    """Three pairs (rows 1, 2, 4 of PAIR_TABLE): margins 0.5, -0.5, 1.0; first-shown 1.5, 1.5, 0.
    margin: mean 1/3; deviations 1/6, -5/6, 2/3 -> squares sum 7/6, var 7/12, se sqrt(7/36).
    acc: 1, 0, 1 -> 2/3; deviations 1/3, -2/3, 1/3 -> squares sum 2/3, var 1/3, se sqrt(1/9) = 1/3.
    bias: mean 1.0; deviations .5, .5, -1 -> squares sum 1.5, var .75, se sqrt(.25) = .5."""
    pairs = [PairLogOdds("p1", "A", 2.0, 1.0), PairLogOdds("p2", "B", 2.0, 1.0), PairLogOdds("p3", "A", 1.0, -1.0)]
    s = summarise(pairs)
    assert s.pairs == 3
    assert s.content_margin == pytest.approx(1 / 3)
    assert s.content_margin_se == pytest.approx(math.sqrt(7 / 36))
    assert s.content_acc == pytest.approx(2 / 3)
    assert s.content_acc_se == pytest.approx(1 / 3)
    assert s.position_bias == pytest.approx(1.0)
    assert s.position_bias_se == pytest.approx(0.5)


@pytest.mark.parametrize(("pairs", "acc"), [
    ([PairLogOdds("p", "A", 3.0, 3.0)], 0.0),  # a zero margin is not a right answer
    ([PairLogOdds("p", "A", 1.0, 0.9)], 1.0),  # margin 0.05 > 0
    ([PairLogOdds("p", "B", 1.0, 0.9)], 0.0),  # margin -0.05
    ([PairLogOdds("p", "A", 1.0, -1.0), PairLogOdds("q", "B", 1.0, -1.0)], 0.5),
])
def test_content_accuracy_counts_positive_margins(pairs, acc):
    assert summarise(pairs).content_acc == pytest.approx(acc)


def test_summarise_one_pair_has_no_standard_errors():
    s = summarise([PairLogOdds("p", "B", -1.0, 1.0)])
    assert s == ProbeStats(1, 1.0, None, 1.0, None, 0.0, None)
    assert json.loads(json.dumps(s.as_dict()))["content_margin_se"] is None


def test_summarise_of_no_pairs_raises():
    with pytest.raises(ValueError, match="at least one pair"):
        summarise([])


def test_summarise_by_kind_splits_and_sorts():
    pairs = [PairLogOdds("p1", "A", 1.0, -1.0, "math"), PairLogOdds("p2", "A", 3.0, 3.0, "chat"),
             PairLogOdds("p3", "B", -1.0, 1.0, "math")]
    by_kind = summarise_by_kind(pairs)
    assert list(by_kind) == ["chat", "math"]
    assert (by_kind["chat"].pairs, by_kind["chat"].content_margin, by_kind["chat"].position_bias) == (1, 0.0, 3.0)
    assert (by_kind["math"].pairs, by_kind["math"].content_margin, by_kind["math"].content_acc) == (2, 1.0, 1.0)


# --- forced texts ------------------------------------------------------------------------------------

PAIRS = [Pair("p1", "What is 2 + 3?", "It is 5", "It is 6", "A", "math"),
         Pair("p2", "Capital of France?", "Lyon", "Paris", "B", "chat")]


def test_probe_rows_show_both_orders_with_the_forced_answer_start():
    rows = probe_rows(PAIRS, template="compact")
    assert [(r.pair.pair_id, r.order) for r in rows] == [("p1", "AB"), ("p1", "BA"), ("p2", "AB"), ("p2", "BA")]
    fmt = get_format("pav", "compact")
    for r in rows:
        assert r.messages[-1] == {"role": "assistant", "content": answer_head(DEFAULT_THOUGHT)}
        assert r.messages[:-1] == fmt.render(r.pair.prompt, *shown(r.pair.response_a, r.pair.response_b, r.order))
    assert [target_letter(r) for r in rows] == ["A", "B", "B", "A"]


def test_default_forced_text_is_the_recipe_prefill(tiny):
    """The probe reads the distribution that `--assistant_prefill` with the recipe's prefill trains and evaluates."""
    _, tok = tiny
    assert answer_head(DEFAULT_THOUGHT) == RECIPE_PREFILL
    rows = probe_rows(PAIRS[:1], template="digest")
    fmt = get_format("pav", "digest")
    expected = render(tok, with_prefill(fmt.render(PAIRS[0].prompt, "It is 5", "It is 6"), RECIPE_PREFILL))
    assert forced_texts(tok, rows)[0] == expected
    assert expected.endswith("<|im_start|>assistant\n" + RECIPE_PREFILL)


def test_quote_thought_quotes_the_parts_as_shown():
    ab, ba = probe_rows(PAIRS[:1], quote_words=2)
    assert ab.messages[-1]["content"] == "<think>Request: What is. A: It is. B: It is.</think>\n<answer>[["
    rows = probe_rows(PAIRS[1:], quote_words=1)
    assert [r.messages[-1]["content"].split("</think>")[0] for r in rows] == [
        "<think>Request: Capital. A: Lyon. B: Paris.", "<think>Request: Capital. A: Paris. B: Lyon."]


def test_a_custom_thought_is_used_verbatim():
    (row, _) = probe_rows(PAIRS[:1], thought="Both, carefully.")
    assert row.messages[-1]["content"] == "<think>Both, carefully.</think>\n<answer>[["


def test_pair_logodds_gathers_rows_per_pair():
    rows = probe_rows(PAIRS)
    got = pair_logodds(rows, [1.0, 2.0, 3.0, 4.0])
    assert got == [PairLogOdds("p1", "A", 1.0, 2.0, "math"), PairLogOdds("p2", "B", 3.0, 4.0, "chat")]


@pytest.mark.parametrize(("pick", "n_values", "error"), [
    ([0, 1, 2, 3], 3, "4 rows but 3"),
    ([0, 1, 2], 3, "no row in order BA"),
    ([0, 1, 0, 1], 4, "twice in order AB"),
])
def test_pair_logodds_rejects_incomplete_rows(pick, n_values, error):
    rows = probe_rows(PAIRS)
    with pytest.raises(ValueError, match=error):
        pair_logodds([rows[i] for i in pick], [0.0] * n_values)


# --- model -------------------------------------------------------------------------------------------


def test_letter_ids(tiny):
    _, tok = tiny
    assert letter_ids(tok, "<answer>[[") == (tok.convert_tokens_to_ids("A"), tok.convert_tokens_to_ids("B"))
    with pytest.raises(ValueError, match="one token"):
        letter_ids(tok, "the answer is ")  # " A" is one token: the letter would merge with the space


def test_verdict_logodds_do_not_depend_on_the_batch(tiny):
    """Rows of different lengths, padded in batches of 3 or alone, and by hand with no padding."""
    import torch

    model, tok = tiny
    texts = forced_texts(tok, probe_rows(PAIRS + [Pair("p3", "Spell 'cat' backwards, please, slowly.", "tac", "cta", "A")]))
    alone = verdict_logodds(model, tok, texts, batch_size=1)
    batched = verdict_logodds(model, tok, texts, batch_size=3)
    assert batched == pytest.approx(alone, abs=1e-5)
    a, b = letter_ids(tok, texts[0])
    with torch.no_grad():
        logp = model(**tok(texts[4], return_tensors="pt", add_special_tokens=False)).logits[0, -1].log_softmax(-1)
    assert alone[4] == pytest.approx((logp[a] - logp[b]).item(), abs=1e-5)
    assert len(set(round(x, 6) for x in alone)) > 1  # a random model still reads different texts differently
    # Right padding: the rows of a batch end at different columns, and each is read at its own.
    tok.padding_side = "right"
    try:
        assert verdict_logodds(model, tok, texts, batch_size=3) == pytest.approx(alone, abs=1e-5)
    finally:
        tok.padding_side = "left"


def test_an_adapter_is_applied_on_its_base(tiny_model, tmp_path):
    """A LoRA adapter with random (non-zero) weights probes like the same adapter merged into a full
    folder, and unlike its base; the base comes from adapter_config.json."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from j1.models import load_tokenizer
    from j1.probe import load_judge

    torch.manual_seed(1)
    base = AutoModelForCausalLM.from_pretrained(tiny_model)
    peft = get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    peft.save_pretrained(tmp_path / "adapter")
    merged = peft.merge_and_unload()
    merged.save_pretrained(tmp_path / "merged")
    load_tokenizer(str(tiny_model)).save_pretrained(tmp_path / "merged")
    texts = forced_texts(load_tokenizer(str(tiny_model)), probe_rows(PAIRS))
    read = {name: verdict_logodds(*load_judge(str(path)), texts)
            for name, path in [("adapter", tmp_path / "adapter"), ("merged", tmp_path / "merged"), ("base", tiny_model)]}
    assert read["adapter"] == pytest.approx(read["merged"], abs=1e-4)
    assert max(abs(x - y) for x, y in zip(read["adapter"], read["base"], strict=True)) > 1e-3


# --- the command -------------------------------------------------------------------------------------


def test_probe_cli_end_to_end(tiny_model, tmp_path, capsys):
    pairs = write_pairs(tmp_path / "pairs.jsonl")
    out = tmp_path / "probe.json"
    rc = main(["probe", "--model", str(tiny_model), "--data", str(pairs), "--template", "compact",
               "--batch_size", "3", "--limit", "6", "--out", str(out), "--no_progress"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["model"] == str(tiny_model) and summary["thought"] == DEFAULT_THOUGHT
    assert summary["all"]["pairs"] == 6 and list(summary["by_kind"]) == ["test"]
    assert set(summary["all"]) == {"pairs", "content_margin", "content_margin_se", "content_acc", "content_acc_se",
                                   "position_bias", "position_bias_se"}
    saved = json.loads(out.read_text())
    assert {k: v for k, v in saved.items() if k != "pairs"} == summary
    per_pair = [PairLogOdds(p["pair_id"], p["label"], p["logodds_ab"], p["logodds_ba"], p["kind"]) for p in saved["pairs"]]
    assert [p.pair_id for p in per_pair] == [f"p{i}" for i in range(6)]
    assert summarise(per_pair).as_dict() == pytest.approx(summary["all"])


def test_probe_cli_bad_data_file_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "p0", "prompt": "q", "chosen": "a", "kind": "k", "source": "s"}) + "\n")
    assert main(["probe", "--data", str(bad), "--no_progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("j1 probe: error: ") and len(err.strip().splitlines()) == 1
    assert f"{bad}:1" in err and "rejected" in err


def test_probe_cli_missing_data_file_is_exit_2(tmp_path, capsys):
    assert main(["probe", "--data", str(tmp_path / "nope.jsonl"), "--no_progress"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv", [
    [],  # no --data
    ["--data", "x.jsonl", "--thought", "Hm.", "--quote_words", "8"],
    ["--data", "x.jsonl", "--batch_size", "0"],
    ["--data", "x.jsonl", "--limit", "0"],
    ["--data", "x.jsonl", "--quote_words", "-1"],
    ["--data", "x.jsonl", "--out", "probe.txt"],
    ["--data", "x.jsonl", "--template", "nope"],
])
def test_probe_cli_rejects_bad_options(argv, capsys):
    with pytest.raises(SystemExit) as done:
        main(["probe", *argv])
    assert done.value.code == 2
    assert "error:" in capsys.readouterr().err
