"""``j1.probe.runner`` and ``j1 probe``: the statistics on hand-worked tables (verdict log-odds and pointwise
expected scores), the forced texts, the readings on a tiny random model (batching, LoRA adapters), and
the command end to end (pav on the tiny model, pos on the tiny model with a manifest and on the
embedded base)."""

from __future__ import annotations

import json
import math

import pytest
from train.tiny import write_pairs

from j1.cli.main import main
from j1.formats import get_format
from j1.judging.chat import render, with_prefill
from j1.pairs import shown
from j1.probe.runner import (
    DEFAULT_POINT_THOUGHT,
    DEFAULT_THOUGHT,
    expected_scores,
    forced_texts,
    letter_ids,
    next_token_ids,
    pair_logodds,
    pair_scores,
    probe_rows,
    score_rows,
    target_letter,
    verdict_logodds,
)
from j1.probe.spec import ProbeSpec
from j1.probe.stats import (
    DIGITS,
    PairLogOdds,
    PairScores,
    ProbeStats,
    ScoreStats,
    expected_score,
    mean_se,
    summarise,
    summarise_by_kind,
    summarise_scores,
)
from j1.probe.texts import PROBE_FORMATS, answer_head, thought_of_prefill
from j1.train.data import Pair

# The prefill of the recipe's training run and of its eval: the probe must read this very context.
RECIPE_PREFILL = "<think>I compare both responses with the request.</think>\n<answer>[["
# The pointwise recipe's (results/train/configs/pos_j1_135m.yaml).
POS_RECIPE_PREFILL = "<think>I check the response against the request.</think>\n<score>"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tiny(tiny_model):
    from j1.probe.runner import probe_model

    return probe_model(str(tiny_model))


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


NEG = -math.inf


# log p(digit) for the digits 0-9 -> expected score: the probabilities renormalised over the ten digits,
# then sum(d * p_d). A digit at -inf has probability 0.
EXPECTED_SCORE_TABLE = [
    ([0.0] * 10, 4.5),  # uniform: (0 + 1 + ... + 9) / 10 = 45 / 10
    ([5.0] * 10, 4.5),  # the same shifted: renormalising removes any common offset
    ([NEG] * 7 + [0.0] + [NEG] * 2, 7.0),  # all on 7
    ([NEG, NEG, math.log(0.5), NEG, math.log(0.5)] + [NEG] * 5, 3.0),  # half on 2, half on 4
    ([math.log(0.1), math.log(0.3)] + [NEG] * 8, 0.75),  # 0.1 on 0, 0.3 on 1: renormalised 0.25, 0.75 -> 0.75
    ([0.0] + [NEG] * 8 + [1.0], 9 * math.e / (1 + math.e)),  # weights 1 (on 0) and e (on 9): 9e / (1 + e) = 6.58
    ([-1000.0] + [NEG] * 8 + [-999.0], 9 * math.e / (1 + math.e)),  # the same ratios, far below exp's range unshifted
]


@pytest.mark.parametrize(("logprobs", "expected"), EXPECTED_SCORE_TABLE, ids=range(len(EXPECTED_SCORE_TABLE)))
def test_expected_score_hand_worked(logprobs, expected):
    assert expected_score(logprobs) == pytest.approx(expected)


@pytest.mark.parametrize(("logprobs", "error"), [
    ([], "10 log-probabilities"),
    ([0.0] * 9, "10 log-probabilities"),  # 0-9 without one digit
    ([0.0] * 11, "10 log-probabilities"),  # "10" is not one token: it reads as 1
    ([NEG] * 10, "no digit"),
])
def test_expected_score_rejects_bad_input(logprobs, error):
    with pytest.raises(ValueError, match=error):
        expected_score(logprobs)


# (label, a, b) -> (margin, mean): margin = better - worse; mean = (a + b) / 2.
SCORE_TABLE = [
    (("A", 6.0, 4.5), (1.5, 5.25)),
    (("B", 6.0, 4.5), (-1.5, 5.25)),  # the same scores with B better: ranked wrong
    (("A", 3.0, 3.0), (0.0, 3.0)),  # a tie: not ranked right
    (("B", 2.0, 7.0), (5.0, 4.5)),
]


@pytest.mark.parametrize(("pair", "expected"), SCORE_TABLE, ids=[str(p) for p, _ in SCORE_TABLE])
def test_pair_scores_margin_and_mean(pair, expected):
    label, a, b = pair
    p = PairScores("p", label, a, b)
    assert (p.margin, p.mean) == pytest.approx(expected)


def test_summarise_scores_hand_worked():
    """Rows 1, 2, 4 of SCORE_TABLE: margins 1.5, -1.5, 5.0; means 5.25, 5.25, 4.5.
    margin: mean 5/3; deviations -1/6, -19/6, 20/6 -> squares sum 762/36, var 762/72, se sqrt(762/216).
    acc: 1, 0, 1 -> 2/3, se 1/3 (as in test_summarise_hand_worked).
    mean score: 5.0; deviations .25, .25, -.5 -> squares sum .375, var .1875, se sqrt(.0625) = .25."""
    pairs = [PairScores("p1", "A", 6.0, 4.5), PairScores("p2", "B", 6.0, 4.5), PairScores("p3", "B", 2.0, 7.0)]
    s = summarise_scores(pairs)
    assert s.pairs == 3
    assert s.content_margin == pytest.approx(5 / 3)
    assert s.content_margin_se == pytest.approx(math.sqrt(762 / 216))
    assert s.content_acc == pytest.approx(2 / 3)
    assert s.content_acc_se == pytest.approx(1 / 3)
    assert s.mean_score == pytest.approx(5.0)
    assert s.mean_score_se == pytest.approx(0.25)


def test_summarise_scores_one_pair_and_none():
    assert summarise_scores([PairScores("p", "A", 3.0, 3.0)]) == ScoreStats(1, 0.0, None, 0.0, None, 3.0, None)
    with pytest.raises(ValueError, match="at least one pair"):
        summarise_scores([])


def test_summarise_scores_by_kind():
    pairs = [PairScores("p1", "A", 6.0, 4.5, "math"), PairScores("p2", "A", 3.0, 3.0, "chat"),
             PairScores("p3", "B", 2.0, 7.0, "math")]
    by_kind = summarise_by_kind(pairs, summarise_scores)
    assert list(by_kind) == ["chat", "math"]
    assert (by_kind["chat"].pairs, by_kind["chat"].content_acc, by_kind["chat"].mean_score) == (1, 0.0, 3.0)
    assert (by_kind["math"].pairs, by_kind["math"].content_margin, by_kind["math"].content_acc) == (2, 3.25, 1.0)


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


def test_score_rows_show_each_response_alone_with_the_forced_score_start():
    rows = score_rows(PAIRS, template="digest")
    assert [(r.pair.pair_id, r.order) for r in rows] == [("p1", "A"), ("p1", "B"), ("p2", "A"), ("p2", "B")]
    fmt = get_format("pos", "digest")
    for r in rows:
        response = r.pair.response_a if r.order == "A" else r.pair.response_b
        assert r.messages == with_prefill(fmt.render(r.pair.prompt, response), POS_RECIPE_PREFILL)
    assert [r.name for r in rows[:2]] == ["pair p1 response A", "pair p1 response B"]


def test_score_rows_thought_and_quote():
    (row, _) = score_rows(PAIRS[:1], thought="I read it.")
    assert row.messages[-1]["content"] == "<think>I read it.</think>\n<score>"
    rows = score_rows(PAIRS[1:], quote_words=1)
    assert [r.messages[-1]["content"] for r in rows] == [
        "<think>Request: Capital. Response: Lyon.</think>\n<score>",
        "<think>Request: Capital. Response: Paris.</think>\n<score>"]


@pytest.mark.parametrize(("prefill", "fmt", "thought"), [
    (POS_RECIPE_PREFILL, "pos", DEFAULT_POINT_THOUGHT),
    (RECIPE_PREFILL, "pav", DEFAULT_THOUGHT),
    (RECIPE_PREFILL, "pos", None),  # a pav prefill is not a pos one
    (POS_RECIPE_PREFILL, "pav", None),
    ("<think></think>\n<score>", "pos", None),  # no thought
    (None, "pos", None),
])
def test_thought_of_prefill_by_format(prefill, fmt, thought):
    assert thought_of_prefill(prefill, fmt) == thought


def test_pair_scores_gathers_rows_per_pair():
    rows = score_rows(PAIRS)
    got = pair_scores(rows, [7.0, 2.0, 3.0, 4.0])
    assert got == [PairScores("p1", "A", 7.0, 2.0, "math"), PairScores("p2", "B", 3.0, 4.0, "chat")]
    assert [p.margin for p in got] == [5.0, 1.0]


@pytest.mark.parametrize(("pick", "n_values", "error"), [
    ([0, 1, 2, 3], 3, "4 rows but 3"),
    ([0, 1, 2], 3, "no row in response B"),
    ([0, 1, 0, 1], 4, "twice in response A"),
])
def test_pair_scores_rejects_incomplete_rows(pick, n_values, error):
    rows = score_rows(PAIRS)
    with pytest.raises(ValueError, match=error):
        pair_scores([rows[i] for i in pick], [0.0] * n_values)


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


def test_expected_scores_read_the_digits_after_score(tiny):
    """The digits are one token each after ``<score>``; each text's expected score is expected_score of their
    next-token log-probabilities, read by hand with no padding, and the same in any batch."""
    import torch

    model, tok = tiny
    texts = forced_texts(tok, score_rows(PAIRS, template="digest"))
    ids = next_token_ids(tok, texts[0], DIGITS)
    assert ids == [tok.convert_tokens_to_ids(d) for d in DIGITS]
    alone = expected_scores(model, tok, texts, batch_size=1)
    assert expected_scores(model, tok, texts, batch_size=3) == pytest.approx(alone, abs=1e-5)
    with torch.no_grad():
        logp = model(**tok(texts[3], return_tensors="pt", add_special_tokens=False)).logits[0, -1].log_softmax(-1)
    assert alone[3] == pytest.approx(expected_score(logp[ids].tolist()), abs=1e-5)
    assert all(0.0 <= x <= 9.0 for x in alone) and len(set(round(x, 6) for x in alone)) > 1


def test_an_adapter_is_applied_on_its_base(tiny_model, tmp_path):
    """A LoRA adapter with random (non-zero) weights probes like the same adapter merged into a full
    folder, and unlike its base; the base comes from adapter_config.json."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from j1.models import load_tokenizer
    from j1.probe.runner import probe_model

    torch.manual_seed(1)
    base = AutoModelForCausalLM.from_pretrained(tiny_model)
    peft = get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    peft.save_pretrained(tmp_path / "adapter")
    merged = peft.merge_and_unload()
    merged.save_pretrained(tmp_path / "merged")
    load_tokenizer(str(tiny_model)).save_pretrained(tmp_path / "merged")
    texts = forced_texts(load_tokenizer(str(tiny_model)), probe_rows(PAIRS))
    read = {name: verdict_logodds(*probe_model(str(path)), texts)
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
    ["--data", "x.jsonl", "--format", "pas"],  # the probe reads pav and pos judges
    ["--data", "x.jsonl", "--format", "nope"],
])
def test_probe_cli_rejects_bad_options(argv, capsys):
    with pytest.raises(SystemExit) as done:
        main(["probe", *argv])
    assert done.value.code == 2
    assert "error:" in capsys.readouterr().err


@pytest.fixture
def pos_judge(tiny_model, tmp_path):
    """The tiny model as a pos judge folder: its weights plus a manifest with the pos recipe's prefill."""
    import shutil

    from j1.judging.judges import Manifest, write_manifest

    folder = tmp_path / "pos-judge"
    shutil.copytree(tiny_model, folder)
    write_manifest(folder, Manifest(format="pos", template="digest", assistant_prefill=POS_RECIPE_PREFILL))
    return folder


def test_probe_spec_takes_the_format_and_thought_from_the_manifest(pos_judge):
    spec = ProbeSpec(model=str(pos_judge), data="x.jsonl")
    assert (spec.format, spec.template, spec.thought) == ("pos", "digest", DEFAULT_POINT_THOUGHT)
    # a flag wins over the manifest
    assert ProbeSpec(model=str(pos_judge), data="x.jsonl", format="pav", template="compact").format == "pav"


def test_probe_cli_pos_end_to_end(pos_judge, tmp_path, capsys):
    """A pos judge folder (the manifest sets pos): each response's expected score, the summary with the
    pointwise statistics, every key the pav summary has, and the per-pair scores in --out."""
    pairs = write_pairs(tmp_path / "pairs.jsonl")
    out = tmp_path / "probe.json"
    capsys.readouterr()
    assert main(["probe", "--model", str(pos_judge), "--data", str(pairs), "--batch_size", "4", "--limit", "5",
                 "--out", str(out), "--no_progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary) == {"model", "base", "data", "format", "template", "thought", "quote_words", "inputs", "all",
                            "by_kind"}
    assert summary["inputs"] == {"criteria": 0, "reference": 0}
    assert (summary["format"], summary["template"], summary["thought"]) == ("pos", "digest", DEFAULT_POINT_THOUGHT)
    assert set(summary["all"]) == {"pairs", "content_margin", "content_margin_se", "content_acc", "content_acc_se",
                                   "mean_score", "mean_score_se"}
    assert summary["all"]["pairs"] == 5 and list(summary["by_kind"]) == ["test"]
    saved = json.loads(out.read_text())
    assert {k: v for k, v in saved.items() if k != "pairs"} == summary
    per_pair = [PairScores(p["pair_id"], p["label"], p["score_a"], p["score_b"], p["kind"]) for p in saved["pairs"]]
    assert [p.pair_id for p in per_pair] == [f"p{i}" for i in range(5)]
    assert [p.margin for p in per_pair] == pytest.approx([p["margin"] for p in saved["pairs"]])
    assert summarise_scores(per_pair).as_dict() == pytest.approx(summary["all"])


def test_probe_cli_pos_on_the_embedded_base(tmp_path, capsys):
    """The untrained embedded base asked as the pos recipe asks it (--format pos --template digest, the pos
    thought by default), two pairs: the digits are one token after its <score>, and the scores are 0-9."""
    pairs = write_pairs(tmp_path / "pairs.jsonl", 2)
    out = tmp_path / "probe.json"
    capsys.readouterr()
    assert main(["probe", "--model", "smollm2-135m", "--format", "pos", "--template", "digest", "--data", str(pairs),
                 "--out", str(out), "--no_progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["format"], summary["thought"], summary["all"]["pairs"]) == ("pos", DEFAULT_POINT_THOUGHT, 2)
    scores = [s for p in json.loads(out.read_text())["pairs"] for s in (p["score_a"], p["score_b"])]
    assert all(0.0 <= s <= 9.0 for s in scores)
    assert summary["all"]["mean_score"] == pytest.approx(sum(scores) / 4)


def test_probe_rows_show_a_pairs_criteria_and_reference():
    """A pair's own inputs are in both orders' prompts (pav) and in each response's (pos); j1 probe shows them with
    --use_reference only (run_probe strips them otherwise, as j1 eval does)."""
    from j1.probe.runner import score_rows

    pair = Pair("p", "Q?", "good", "bad", "A", reference="good", criteria="Be exact.")
    for rows in (probe_rows([pair]), score_rows([pair])):
        texts = [r.messages[1]["content"] for r in rows]
        assert len(texts) == 2 and all("<reference-" in t and "<criteria-" in t for t in texts)
    plain = probe_rows([Pair("p", "Q?", "good", "bad", "A")])
    assert not any("<reference-" in r.messages[1]["content"] for r in plain)
    assert ProbeSpec(data="x.jsonl").use_reference is False


def test_probe_formats_are_the_probes():
    # The spec checks --format against the leaf's list; the runner reads each format through PROBES.
    from j1.probe.runner import PROBES

    assert tuple(PROBES) == PROBE_FORMATS
