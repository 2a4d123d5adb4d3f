"""``--loss_span to_answer``: the tokens a rollout writes after its answer's closing tag leave the loss;
``--loss_span answer``: the tokens before its opening tag leave it too."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
import torch
from conftest import CPU_FLAGS

from j1.cli.main import main
from j1.formats import FORMATS
from j1.train.advantages import stop_advantages
from j1.train.answer_span import (
    answer_close,
    answer_end,
    answer_markers,
    answer_open,
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
    ("name", "close"), [("pav", "</answer>"), ("pas", "</score_B>"), ("pavs", "</answer>"), ("pos", "</score>")]
)
def test_answer_close_of_every_format(name, close):
    assert answer_close(FORMATS[name].answer_template) == close


def test_answer_close_needs_a_closing_tag():
    with pytest.raises(ValueError, match="does not end with a closing tag"):
        answer_close("[[{verdict}]]")


def test_answer_markers_per_formulation():
    assert answer_markers("pav") == {"pav": "</answer>"}
    assert answer_markers("multitask") == {"pas": "</score_B>", "pos": "</score>"}
    assert answer_markers("multitask", opening=True) == {"pas": "<score_A>", "pos": "<score>"}


@pytest.mark.parametrize(
    ("name", "opener"), [("pav", "<answer>"), ("pas", "<score_A>"), ("pavs", "<score_A>"), ("pos", "<score>")]
)
def test_answer_open_of_every_format(name, opener):
    assert answer_open(FORMATS[name].answer_template) == opener


def test_answer_open_needs_an_opening_tag():
    with pytest.raises(ValueError, match="does not start with an opening tag"):
        answer_open("[[{verdict}]]</answer>")


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
    ({"advantage_groups": "order"}, "--advantage_groups 'order': choose one of"),
    ({"advantage_groups": "prompt", "invalid_advantage": -1.0}, "needs --advantage_groups pair or couple"),
])
def test_options_are_named_choices(kwargs, message):
    with pytest.raises(ValueError, match=message):
        J1Options(**kwargs)


def mask_completions(model_dir, texts, openers=None, stop_advantage=None):
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
                                closers={"pav": "</answer>"}, openers=openers, eos_id=tok.eos_token_id,
                                stop_advantage=stop_advantage is not None)
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
    # Without answer_only_loss (stop_at_answer alone) the stop leaves the loss, as a stop string would.
    tok, encoded, ids, output, metrics = mask_completions(tiny_model, texts[:1])
    assert tok.decode(ids[0][output["completion_mask"][0].bool()]).endswith("</answer>")


@pytest.mark.parametrize(
    ("advantages", "stops", "width", "penalty", "expected"),
    [
        ([0.5, -1.0, 2.0], [1, None, 0], 3, 1.0,  # row 2's penalty lands on its first column
         [[0.5, -1.0, 0.5], [-1.0, -1.0, -1.0], [-1.0, 2.0, 2.0]]),
        ([0.0, 0.0], [None, None], 2, 3.0, [[0.0, 0.0], [0.0, 0.0]]),  # nothing to push down: unchanged
        ([1.0], [3], 4, 0.5, [[1.0, 1.0, 1.0, -0.5]]),  # even a right verdict's tail token is pushed down
    ],
)
def test_stop_advantages(advantages, stops, width, penalty, expected):
    got = stop_advantages(torch.tensor(advantages), stops, width, penalty)
    assert got.tolist() == expected


def test_stop_advantages_needs_one_stop_per_row():
    with pytest.raises(ValueError, match="1 stop positions for 2 rows"):
        stop_advantages(torch.zeros(2), [None], 3, 1.0)


def test_stop_advantage_keeps_the_token_that_replaced_the_stop(tiny_model):
    from transformers import AutoTokenizer

    eos = AutoTokenizer.from_pretrained(str(tiny_model)).eos_token
    texts = ["<think>ok</think>\n<answer>[[A]]</answer>\n<answer>[[B",  # session 13's second answer block
             f"<think>ok</think>\n<answer>[[B]]</answer>{eos}",  # stopped: nothing to push down
             "<think>no answer yet"]  # never closed: every token stays, no stop column
    tok, encoded, ids, output, metrics = mask_completions(tiny_model, texts, openers={"pav": "<answer>"},
                                                          stop_advantage=1.0)
    kept = (output["completion_mask"] * output["tool_mask"]).bool()
    assert tok.decode(ids[0][kept[0]]) == "<answer>[[A]]</answer>\n"  # the span plus the token after it
    assert tok.decode(ids[1][kept[1]]) == f"<answer>[[B]]</answer>{eos}"
    assert int(kept[2].sum()) == len(encoded[2])
    close = len(tok("<think>ok</think>\n<answer>[[A]]</answer>", add_special_tokens=False)["input_ids"])
    last_kept = output["completion_mask"][0].sum().item() - 1
    assert last_kept == close  # the kept tail token is the first one after the tag
    # The tail is still counted as written after the answer, as without the option.
    assert metrics["j1/tokens_after_answer"] == [pytest.approx((len(encoded[0]) - close) / 3)]


def test_stop_advantage_needs_a_closing_tag_and_a_positive_value():
    with pytest.raises(ValueError, match="needs --loss_span to_answer or answer"):
        J1Options(stop_advantage=1.0)
    with pytest.raises(ValueError, match="must be > 0"):
        J1Options(stop_advantage=0.0, loss_span="to_answer")


def test_train_with_stop_at_answer_logs_the_dropped_tokens(tiny_model, pair_file, tmp_path):
    out = tmp_path / "run"
    assert main([
        "train", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir", str(out),
        "--num_generations", "2", "--per_device_train_batch_size", "4", "--max_completion_length", "8",
        "--max_steps", "1", "--loss_span", "to_answer", *CPU_FLAGS,
    ]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["j1"]["loss_span"] == "to_answer"
    step = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines() if '"loss"' in line][0]
    assert step["j1/tokens_after_answer"] >= 0.0


def test_train_with_answer_only_loss_logs_the_thought_tokens(tiny_model, pair_file, tmp_path):
    out = tmp_path / "run"
    assert main([
        "train", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir", str(out),
        "--num_generations", "2", "--per_device_train_batch_size", "4", "--max_completion_length", "8",
        "--max_steps", "1", "--loss_span", "answer", "--beta", "0.04", "--stop_advantage", "1", *CPU_FLAGS,
    ]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["j1"]["loss_span"] == "answer" and run["config"]["j1"]["stop_advantage"] == 1.0
    step = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines() if '"loss"' in line][0]
    assert step["j1/tokens_before_answer"] >= 0.0 and step["j1/tokens_after_answer"] >= 0.0
    assert 0.0 <= step["j1/stop_penalised"] <= 1.0
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
                           (["--stop_advantage", "1"], "--stop_advantage needs --loss_span to_answer or answer"),
                           (["--loss_span", "to_answer", "--stop_advantage", "0"], "--stop_advantage 0.0: must be > 0"),
                           (["--formulation", "pos", "--position_balance", "1"], "pos verdicts name no position")):
        with pytest.raises(SystemExit):
            main(["train", "--train_file", str(pair_file), "--output_dir", str(out), *flags])
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "--train_file", str(pair_file), "--output_dir", str(out), "--advantage_groups", "prompt",
              "--invalid_advantage", "-1"])
    assert "--invalid_advantage -1.0 needs --advantage_groups pair or couple" in capsys.readouterr().err
    # A retired boolean names its replacement.
    with pytest.raises(SystemExit):
        main(["train", "--train_file", str(pair_file), "--output_dir", str(out), "--couple_advantages", "true"])
    assert "--couple_advantages was replaced: use --advantage_groups couple" in capsys.readouterr().err
