"""``--loss_span answer``: the tokens a rollout writes after its answer's closing tag leave the loss,
and the tokens before its opening tag leave it too (``mask_outside_answer`` without openers: the tail only)."""

from __future__ import annotations

import json
import math
from collections import defaultdict

import pytest
import torch
from conftest import CPU_FLAGS

from j1.cli.main import main
from j1.formats import FORMATS
from j1.train.answer_span import (
    answer_end,
    answer_markers,
    answer_start,
    mask_outside_answer,
)
from j1.train.options import J1Options


@pytest.mark.parametrize(
    ("pieces", "marker", "expected"),
    [
        (["<answer>[[", "A", "]]</", "answer", ">", "\n<think>"], "</answer>", 5),  # marker split over 3 tokens
        (["<answer>[[A]]</answer>"], "</answer>", 1),  # one token holds it all
        (["</answer>", "</answer>"], "</answer>", 1),  # the first occurrence counts
        (["<answer>[[A]]</answ", "er"], "</answer>", None),  # never closed
        ([], "</answer>", None),
        (["x</", "score>", " 7"], "</score>", 2),
        (["</score_A>", " <score_B>3</score_B>"], "</score_B>", 2),  # an earlier, different tag is not it
    ],
)
def test_answer_end(pieces, marker, expected):
    assert answer_end(pieces, marker) == expected


def test_answer_end_refuses_an_empty_marker():
    with pytest.raises(ValueError, match="marker must not be empty"):
        answer_end(["a"], "")


@pytest.mark.parametrize(
    ("name", "tags"),
    [("pav", ("<answer>", "</answer>")), ("pas", ("<score_A>", "</score_B>")), ("pavs", ("<score_A>", "</answer>")),
     ("pos", ("<score>", "</score>")), ("fourway", ("<answer>", "</answer>"))],
)
def test_answer_tags_of_every_format(name, tags):
    # The format declares them; its written answer starts and ends with them.
    fmt = FORMATS[name]
    assert fmt.answer_tags == tags
    answer = fmt.write_answer("A")
    assert answer.startswith(tags[0]) and answer.endswith(tags[1])


def test_answer_markers_per_formulation():
    assert answer_markers("pav") == {"pav": "</answer>"}
    assert answer_markers("multitask") == {"pas": "</score_B>", "pos": "</score>"}
    assert answer_markers("multitask", opening=True) == {"pas": "<score_A>", "pos": "<score>"}


@pytest.mark.parametrize(
    ("pieces", "opener", "end", "expected"),
    [
        (["<think>x</think>", "\n<", "answer>[[", "A", "]]</answer>"], "<answer>", 5, 1),  # opener split
        (["<think>x</think>\n", "<answer>", "[[B]]", "</answer>"], "<answer>", 4, 1),
        (["<answer>[[A]]</answer>"], "<answer>", 1, 0),  # one token holds it all
        (["<answer>", "no", "<answer>", "[[A]]</answer>"], "<answer>", 4, 2),  # the last opener before the close
        (["[[A]]", "</answer>"], "<answer>", 2, None),  # closed but never opened
        (["<think>", "<answer>", "[[A]]</answer>", "<answer>"], "<answer>", 3, 1),  # openers after the end ignored
        (["t", " <score_A>4</score_A> <score_B>", "2</score_B>"], "<score_A>", 3, 1),  # pas: starts at score_A
    ],
)
def test_answer_start(pieces, opener, end, expected):
    assert answer_start(pieces, opener, end) == expected


def test_answer_start_refuses_an_empty_opener():
    with pytest.raises(ValueError, match="opener must not be empty"):
        answer_start(["a"], "", 1)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"loss_span": "everything"}, "--loss_span 'everything': choose one of"),
    ({"loss_span": "to_answer"}, "--loss_span 'to_answer': choose one of"),  # retired in issue 44
    ({"advantage_groups": "order"}, "--advantage_groups 'order': choose one of"),
    ({"advantage_groups": "prompt", "invalid_advantage": -1.0}, "needs --advantage_groups pair or couple"),
])
def test_options_are_named_choices(kwargs, message):
    with pytest.raises(ValueError, match=message):
        J1Options(**kwargs)


def mask_completions(model_dir, texts, openers=None):
    """Run ``mask_outside_answer`` on ``texts`` as TRL lays out completions (right-padded), as the trainer
    calls it. Returns (tokenizer, token ids per text, ids, output, metrics)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    encoded = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    width = max(map(len, encoded)) + 2
    ids = torch.zeros(len(texts), width, dtype=torch.long)
    mask = torch.zeros(len(texts), width, dtype=torch.long)
    for i, e in enumerate(encoded):
        ids[i, : len(e)] = torch.tensor(e)
        mask[i, : len(e)] = 1
    masks = mask_outside_answer(ids, mask, ["pav"] * len(texts), lambda t: tok.decode([t]),
                                closers={"pav": "</answer>"}, openers=openers, eos_id=tok.eos_token_id)
    # What J1GRPOTrainer puts into TRL's output and logs.
    output = {"completion_ids": ids, "completion_mask": masks.completion_mask}
    metrics = defaultdict(list)
    metrics["j1/tokens_after_answer"].append(sum(masks.after) / len(masks.after))
    if masks.loss_mask is not None:
        output["tool_mask"] = masks.loss_mask
        metrics["j1/tokens_before_answer"].append(sum(masks.before) / len(texts))
    return tok, encoded, ids, output, metrics


def test_mask_outside_answer_zeroes_the_tail_only(tiny_model):
    texts = ["<think>ok</think>\n<answer>[[A]]</answer>\n<think>more more", "<think>no answer yet", "<answer>[[B]]</answer>"]
    tok, encoded, ids, output, metrics = mask_completions(tiny_model, texts)
    width = ids.shape[1]

    kept = output["completion_mask"].sum(dim=1).tolist()
    first = len(tok("<think>ok</think>\n<answer>[[A]]</answer>", add_special_tokens=False)["input_ids"])
    assert tok.decode(ids[0, : kept[0]]).endswith("</answer>") and kept[0] == first < len(encoded[0])
    assert kept[1] == len(encoded[1])  # never closed: every token stays (the reward marks it invalid)
    assert kept[2] == len(encoded[2])  # nothing after the tag
    assert torch.equal(output["completion_mask"][0, kept[0]:], torch.zeros(width - kept[0], dtype=torch.long))
    assert metrics["j1/tokens_after_answer"] == [pytest.approx((len(encoded[0]) - first) / 3)]
    assert "tool_mask" not in output and "j1/tokens_before_answer" not in metrics  # the thought is trained


def test_mask_to_the_answer_span_keeps_the_answer_only(tiny_model):
    texts = ["<think>ok fine</think>\n<answer>[[A]]</answer>\n<think>more", "<think>no answer yet", "<answer>[[B]]</answer>"]
    tok, encoded, ids, output, metrics = mask_completions(tiny_model, texts, openers={"pav": "<answer>"})

    seen = output["completion_mask"]  # what attention sees: the thought stays, the tail goes
    prefix = len(tok("<think>ok fine</think>\n<answer>[[A]]</answer>", add_special_tokens=False)["input_ids"])
    assert seen[0].sum() == prefix and seen[1].sum() == len(encoded[1]) and seen[2].sum() == len(encoded[2])
    kept = (output["completion_mask"] * output["tool_mask"]).bool()  # what the loss sees
    assert tok.decode(ids[0][kept[0]]).strip() == "<answer>[[A]]</answer>"  # the span, nothing else
    assert int(kept[1].sum()) == len(encoded[1])  # no answer: every token stays (an invalid rollout)
    assert int(kept[2].sum()) == len(encoded[2])  # the whole completion is the answer
    before = int(kept[0].nonzero()[0])  # the thought's tokens; rows 1 and 2 drop none
    assert before > 0 and tok.decode(ids[0, before]).lstrip("\n").startswith("<")
    assert metrics["j1/tokens_before_answer"] == [pytest.approx(before / 3)]


def test_answer_only_loss_keeps_the_stop_after_the_answer(tiny_model):
    from transformers import AutoTokenizer

    eos = AutoTokenizer.from_pretrained(str(tiny_model)).eos_token
    texts = [f"<think>ok</think>\n<answer>[[A]]</answer>{eos}",  # the stop right after the tag: trained
             f"<think>ok</think>\n<answer>[[B]]</answer>\n{eos}"]  # a newline first: the tail goes, as before
    tok, encoded, ids, output, metrics = mask_completions(tiny_model, texts, openers={"pav": "<answer>"})
    kept = (output["completion_mask"] * output["tool_mask"]).bool()
    assert tok.decode(ids[0][kept[0]]) == f"<answer>[[A]]</answer>{eos}"
    assert tok.decode(ids[1][kept[1]]).strip() == "<answer>[[B]]</answer>"
    assert metrics["j1/tokens_after_answer"] == [pytest.approx((0 + 2) / 2)]
    # Without openers (the tail alone) the stop leaves the loss, as a stop string would.
    tok, encoded, ids, output, metrics = mask_completions(tiny_model, texts[:1])
    assert tok.decode(ids[0][output["completion_mask"][0].bool()]).endswith("</answer>")


def test_train_with_answer_only_loss_logs_the_thought_tokens(tiny_model, pair_file, tmp_path):
    out = tmp_path / "run"
    assert main([
        "train", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir", str(out),
        "--num_generations", "2", "--per_device_train_batch_size", "4", "--max_completion_length", "8",
        "--max_steps", "1", "--loss_span", "answer", "--beta", "0.04", *CPU_FLAGS,
    ]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["j1"]["loss_span"] == "answer"
    step = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines() if '"loss"' in line][0]
    assert step["j1/tokens_before_answer"] >= 0.0 and step["j1/tokens_after_answer"] >= 0.0
    # Before the first update the policy is the reference: a KL above 0 would mean the answer was
    # scored in another context than it was sampled in (the thought hidden from attention).
    assert step["kl"] == pytest.approx(0.0, abs=1e-4)


def test_train_with_couple_advantages(tiny_model, pair_file, tmp_path, capsys):
    out = tmp_path / "run"
    assert main([
        "train", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir", str(out),
        "--num_generations", "2", "--per_device_train_batch_size", "4", "--max_completion_length", "8",
        "--max_steps", "1", "--advantage_groups", "couple", "--consistency", "index", "--invalid_advantage", "-1",
        "--position_balance", "1", *CPU_FLAGS,
    ]) == 0
    j1cfg = json.loads((out / "run.json").read_text())["config"]["j1"]
    assert j1cfg["advantage_groups"] == "couple" and j1cfg["consistency"] == "index" and j1cfg["position_balance"] == 1.0
    step = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines() if '"loss"' in line][0]
    # The batch's mean named position is logged, and agrees with its share of first-shown verdicts.
    if "j1/shown_A_share" in step:
        assert step["j1/position_imbalance"] == pytest.approx(2 * step["j1/shown_A_share"] - 1, abs=1e-4)
    else:  # no valid verdict in the batch
        assert step["j1/position_imbalance"] == 0.0
    for flags, message in ((["--position_balance", "-1"], "--position_balance -1.0: must be >= 0"),
                           (["--formulation", "pos", "--position_balance", "1"], "pos verdicts name no position")):
        with pytest.raises(SystemExit):
            main(["train", "--train_file", str(pair_file), "--output_dir", str(out), *flags])
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "--train_file", str(pair_file), "--output_dir", str(out), "--advantage_groups", "prompt",
              "--invalid_advantage", "-1"])
    assert "--invalid_advantage -1.0 needs --advantage_groups pair or couple" in capsys.readouterr().err
    # A flag retired in issue 44 is an unknown flag, named as such.
    for flag in (["--stop_advantage", "1"], ["--couple_advantages", "true"]):
        with pytest.raises(SystemExit):
            main(["train", "--train_file", str(pair_file), "--output_dir", str(out), *flag])
        assert flag[0] in capsys.readouterr().err


# --- issue 52: the answer-span loss is normalised by the tokens it trains -------------------------

# SmolLM2's tokenizer (the tiny model's) splits the pieces as: thought A 15 tokens ("<", "think", ">",
# "The", " first", ..., "</", "think", ">", "\n"), thought B 13, an answer "<answer>[[X]]</answer>" 9
# ("<", "answer", ">", "[[", "X", "]]", "</", "answer", ">"), an unclosed thought 7.
THOUGHT_A = "<think>The first response adds the numbers right.</think>\n"
THOUGHT_B = "<think>B is off by one.</think>\n"
UNCLOSED = "<think>I cannot tell which"


@pytest.fixture
def answer_span_trainer(tiny_model, pair_file, tmp_path):
    from j1.cli.train_cmd import parse_train
    from j1.train.recipe import build_trainer

    j1cfg, grpo, model = parse_train([
        "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir", str(tmp_path / "run"),
        "--num_generations", "2", "--per_device_train_batch_size", "4", "--max_completion_length", "32",
        "--loss_span", "answer", "--beta", "0", *CPU_FLAGS])
    trainer, _ = build_trainer(j1cfg, grpo, model)
    return trainer


def _rollouts(tok, pieces):
    """TRL's output for rollouts made of separately tokenized pieces (so each piece starts a token)."""
    rows = [[i for p in row for i in tok(p, add_special_tokens=False).input_ids] for row in pieces]
    width = max(map(len, rows))
    ids = torch.full((len(rows), width), tok.pad_token_id)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)], mask[i, : len(r)] = torch.tensor(r), 1
    prompt = torch.tensor([tok("Which is better?", add_special_tokens=False).input_ids] * len(rows))
    return {"prompt_ids": prompt, "prompt_mask": torch.ones_like(prompt), "completion_ids": ids,
            "completion_mask": mask, "num_items_in_batch": mask.sum()}  # TRL's count: every token


def test_answer_span_loss_gradient_is_minus_advantage_over_the_trained_tokens(answer_span_trainer, monkeypatch):
    trainer = answer_span_trainer
    tok = trainer.processing_class
    output = _rollouts(tok, [[THOUGHT_A, "<answer>[[A]]</answer>"], [THOUGHT_B, "<answer>[[B]]</answer>"],
                             ["<answer>[[A]]</answer>"], [UNCLOSED]])
    assert output["completion_mask"].sum(dim=1).tolist() == [24, 22, 9, 7]  # TRL counts 62 tokens
    output["advantages"] = torch.tensor([1.0, -1.0, 0.5, -0.5])
    trainer._mask_outside_answer([{"judge_format": "pav"}] * 4, output)
    # Trained: each answer's 9 tokens, and all 7 of the unclosed thought (an invalid rollout) = 34.
    assert int(output["num_items_in_batch"]) == 9 + 9 + 9 + 7

    # The policy's log-probs as a leaf: with old = current (one pass per generation) every ratio is 1,
    # so the dapo loss is -sum(A_i over trained tokens) / 34 and its gradient -A_i / 34 per trained token.
    logps = torch.zeros(output["completion_ids"].shape, requires_grad=True)
    monkeypatch.setattr(trainer, "_get_per_token_logps_and_entropies",
                        lambda *a, **k: (logps, torch.zeros_like(logps), None))
    trainer.current_gradient_accumulation_steps = 1
    trainer.model.train()
    trainer._compute_loss(trainer.model, output).backward()
    want = torch.zeros_like(logps)
    for row, (start, end, adv) in enumerate([(15, 24, 1.0), (13, 22, -1.0), (0, 9, 0.5), (0, 7, -0.5)]):
        want[row, start:end] = -adv / 34
    assert torch.allclose(logps.grad, want, atol=1e-7), logps.grad  # TRL's count alone gave -A / 62


def test_answer_span_importance_ratio_is_the_answers(answer_span_trainer):
    """vLLM's sequence ratio over the answer only: the thought is context, as in the loss."""
    trainer = answer_span_trainer
    tok = trainer.processing_class
    output = _rollouts(tok, [[THOUGHT_A, "<answer>[[A]]</answer>"], [UNCLOSED]])
    old = torch.zeros(output["completion_ids"].shape)
    sampling = torch.full_like(old, -0.5)  # vLLM's numbers 0.5 below the trainer's on the thought ...
    sampling[0, 15:24] = 0.0  # ... and equal on the answer
    sampling[1] = -0.1
    output.update(old_per_token_logps=old, sampling_per_token_logps=sampling, importance_sampling_ratio=None)
    trainer.vllm_importance_sampling_mode = "sequence_mask"  # TRL's default, bound 3
    trainer._mask_outside_answer([{"judge_format": "pav"}] * 2, output)
    # Row 0: e^0 = 1 over its answer (over all 24 tokens it was e^(15 x 0.5) = e^7.5 > 3: dropped).
    # Row 1, unclosed, trains all 7 tokens: e^(7 x 0.1) = e^0.7.
    assert output["importance_sampling_ratio"].squeeze(1).tolist() == pytest.approx([1.0, math.exp(0.7)])
