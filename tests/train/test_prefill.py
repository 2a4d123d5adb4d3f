"""``j1 train --assistant_prefill``: the prompt ends in the start of the answer, the policy writes
only the rest, and the rewards read both."""

from __future__ import annotations

import json
from types import SimpleNamespace

from conftest import CPU_FLAGS

from j1.cli.main import main
from j1.judging.chat import render
from j1.models import load_tokenizer
from j1.train.trl_grpo import J1GRPOTrainer

USER = [{"role": "user", "content": "Which response is better?"}]
HEAD = "<think>I compare both.</think>\n<answer>[["


def test_prefilled_prompts_are_tokenized_open(tiny_model):
    """TRL renders chat prompts with a generation prompt, which would close the prefill and open a
    new assistant turn; the trainer renders prefilled ones open (a mixed batch keeps both kinds)."""
    tok = load_tokenizer(str(tiny_model))
    prompts = [[*USER, {"role": "assistant", "content": HEAD}], USER]
    ids, images, fields = J1GRPOTrainer._tokenize_prompts(SimpleNamespace(processing_class=tok), prompts)
    assert images is None and fields == {}
    assert tok.decode(ids[0]).endswith("<|im_start|>assistant\n" + HEAD)
    assert ids[0] == tok(render(tok, prompts[0]), add_special_tokens=False)["input_ids"]
    assert ids[1] == tok.apply_chat_template(USER, add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]


def test_train_with_the_whole_verdict_prefilled(tiny_model, pair_file, tmp_path):
    """Prefill the verdict itself ([[A]]): whatever the random policy writes after it, every rollout
    is valid and says A, so per step accuracy in AB (share of pairs labelled A) and in BA (share
    labelled B) add up to 1 — the rewards saw the prefill the policy never wrote."""
    out = tmp_path / "run"
    assert main([
        "train", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir", str(out),
        "--num_generations", "2", "--per_device_train_batch_size", "8", "--max_completion_length", "4",
        "--assistant_prefill", HEAD + "A]]</answer>", "--max_steps", "2", *CPU_FLAGS,
    ]) == 0
    steps = [r for r in map(json.loads, (out / "log.jsonl").read_text().splitlines()) if "loss" in r]
    assert len(steps) == 2
    for s in steps:
        assert s["j1/invalid_rate"] == 0.0 and s["j1/flip_rate"] == 1.0
        assert s["j1/acc/AB"] + s["j1/acc/BA"] == 1.0
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["j1"]["assistant_prefill"] == HEAD + "A]]</answer>"
