"""``j1 train`` and ``j1 warmup`` end to end on a tiny random model (seconds per step)."""

from __future__ import annotations

import json
import os

import pytest
from conftest import CPU_FLAGS

from j1.cli.main import main


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _train(tiny_model, pair_file, out, *extra):
    return main([
        "train", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir", str(out),
        "--num_generations", "2", "--per_device_train_batch_size", "4", "--max_completion_length", "8",
        "--save_steps", "1", "--reward_trace", "true", *CPU_FLAGS, *extra,
    ])


def test_train_logs_checkpoints_and_resumes(tiny_model, pair_file, tmp_path):
    out = tmp_path / "run"
    lora = ["--use_peft", "true", "--lora_r", "4", "--lora_target_modules", "all-linear"]
    assert _train(tiny_model, pair_file, out, "--max_steps", "2", *lora) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "done" and run["global_step"] == 2 and run["data"]["units"] == 8
    assert run["config"]["j1"]["formulation"] == "pav" and run["config"]["grpo"]["num_generations"] == 2
    steps = [r for r in _rows(out / "log.jsonl") if "loss" in r]
    assert [r["step"] for r in steps] == [1, 2]
    for key in ("rewards/correctness/mean", "rewards/consistency/mean", "j1/acc/AB", "j1/acc/BA",
                "j1/invalid_rate", "j1/missing_partner", "j1/pair_frac_reward_zero_std"):
        assert key in steps[0], key
    assert steps[0]["j1/missing_partner"] == 0.0
    # every reward call saw whole pairs: both orders, G rollouts each
    for call in _rows(out / "reward_trace-0.jsonl"):
        orders = {}
        for pid, order, _ in call["rows"]:
            orders.setdefault(pid, []).append(order)
        assert all(sorted(o) == ["AB", "AB", "BA", "BA"] for o in orders.values()), call
    assert (out / "checkpoint-2" / "adapter_config.json").exists()
    # the final judge is the LoRA adapter alone, with a manifest naming its base
    final = out / "final"
    assert (final / "adapter_config.json").exists() and not (final / "config.json").exists()
    manifest = json.loads((final / "judge.json").read_text())
    assert manifest["base_model"] == os.path.relpath(tiny_model, final)
    # every checkpoint is a judge too: the same manifest, its base named from the checkpoint's folder
    for step in (1, 2):
        saved = json.loads((out / f"checkpoint-{step}" / "judge.json").read_text())
        assert saved == {**manifest, "name": f"checkpoint-{step}"}

    # resume from the newest checkpoint to step 3: the log keeps steps 1..3 once each
    assert _train(tiny_model, pair_file, out, "--max_steps", "3", "--resume_from_checkpoint", "latest", *lora) == 0
    assert [r["step"] for r in _rows(out / "log.jsonl") if "loss" in r] == [1, 2, 3]
    assert json.loads((out / "run.json").read_text())["resume_from"].endswith("checkpoint-2")


def test_lora_on_the_last_blocks_only(tiny_model, pair_file, tmp_path):
    out = tmp_path / "top"
    assert _train(tiny_model, pair_file, out, "--max_steps", "1", "--use_peft", "true", "--lora_r", "4",
                  "--lora_target_modules", "all-linear", "--lora_last_layers", "1") == 0
    adapter = json.loads((out / "checkpoint-1" / "adapter_config.json").read_text())
    # "all-linear" is spelled out (peft refuses layer limits with it); the tiny model has blocks 0 and 1
    assert adapter["layers_to_transform"] == [1]
    assert sorted(adapter["target_modules"]) == ["down_proj", "gate_proj", "k_proj", "o_proj", "q_proj",
                                                 "up_proj", "v_proj"]


def test_init_adapter_starts_the_lora_from_a_trained_judge(tiny_model, pair_file, tmp_path, capsys):
    import torch
    from safetensors.torch import load_file, save_file

    lora = ["--use_peft", "true", "--lora_r", "4", "--lora_target_modules", "all-linear"]
    first = tmp_path / "first"
    assert _train(tiny_model, pair_file, first, "--max_steps", "1", *lora) == 0
    # values no fresh LoRA has (its B starts at zero, its A is random): seeded noise on every tensor
    gen = torch.Generator().manual_seed(0)
    saved = first / "final" / "adapter_model.safetensors"
    trained = {k: v + torch.randn(v.shape, generator=gen, dtype=v.dtype) for k, v in load_file(saved).items()}
    save_file(trained, saved)
    # a learning rate of zero keeps the starting LoRA: the saved adapter is the one it started from
    again = tmp_path / "again"
    # (no LoRA dropout: a dropped-out policy pass would differ from the reference by itself)
    assert _train(tiny_model, pair_file, again, "--max_steps", "1", "--learning_rate", "0", *lora, "--beta", "0.04",
                  "--lora_dropout", "0",
                  "--init_adapter", str(first / "final")) == 0
    kept = load_file(again / "final" / "adapter_model.safetensors")
    assert kept.keys() == trained.keys() and all((kept[k] == trained[k]).all() for k in kept)
    run = json.loads((again / "run.json").read_text())
    assert run["config"]["j1"]["init_adapter"] == str(first / "final")
    # The KL reference is the starting adapter (issue 52): at step 1 the policy is it, so the KL is 0.
    # Against the base model, as before, the noisy adapter's KL was well above 0.
    assert run["effective"]["kl_reference"] == f"the starting adapter (--init_adapter {first / 'final'})"
    step = [r for r in _rows(again / "log.jsonl") if "loss" in r][0]
    assert step["kl"] == pytest.approx(0.0, abs=1e-6)
    assert not (again / "final" / "ref").exists()  # the reference copy is not part of the judge
    # another rank does not fit: one line naming the flag, exit 2
    capsys.readouterr()
    assert _train(tiny_model, pair_file, tmp_path / "r8", "--max_steps", "1", "--use_peft", "true", "--lora_r", "8",
                  "--lora_target_modules", "all-linear", "--init_adapter", str(first / "final")) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--init_adapter" in err.splitlines()[-1] and "does not match" in err


def test_bf16_mixed_precision_with_the_shared_prompt(tiny_model, pair_file, tmp_path):
    # accelerate autocasts model.forward, not the layers j1.backends.decode steps through: the prompt's cache comes
    # back partly in bf16 and must meet the steps' fp32 (this crashed before decode cast it)
    out = tmp_path / "bf16"
    assert _train(tiny_model, pair_file, out, "--max_steps", "1", "--bf16", "true", "--use_peft", "true",
                  "--lora_r", "4", "--lora_target_modules", "all-linear") == 0
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "done" and run["config"]["grpo"]["bf16"] is True
    # auto: the device decides (on for the CPU), and run.json records the choice beside the setting
    assert run["config"]["j1"]["share_prompt_prefix"] == "auto"
    assert run["device"] == {"device": "cpu", "dtype": "bfloat16", "decode": "j1.decode", "share_prompt_prefix": True}
    assert [r["step"] for r in _rows(out / "log.jsonl") if "loss" in r] == [1]


def test_restrict_lora_layers_checks_the_depth(tiny_model):
    from peft import LoraConfig

    from j1.train.recipe import restrict_lora_layers

    cfg = restrict_lora_layers(LoraConfig(r=4, target_modules=["q_proj", "v_proj"]), str(tiny_model), 2)
    assert sorted(cfg.target_modules) == ["q_proj", "v_proj"] and cfg.layers_to_transform == [0, 1]
    for bad in (0, 3):
        with pytest.raises(ValueError, match=f"--lora_last_layers {bad}: the model has 2 decoder blocks"):
            restrict_lora_layers(LoraConfig(r=4, target_modules=["q_proj"]), str(tiny_model), bad)


def test_train_rejects_split_pairs(tiny_model, pair_file, tmp_path, capsys):
    # 2 rows per process with G = 2 is one prompt: half a pair
    assert main(["train", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model),
                 "--output_dir", str(tmp_path / "x"), "--num_generations", "2", "--per_device_train_batch_size", "2",
                 "--max_steps", "1", *CPU_FLAGS]) == 2
    assert "whole pairs" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # no empty run folder left behind


def test_train_config_errors_name_the_flag(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--train_file", "x.jsonl", "--formulation", "pairwise", "--output_dir", "o"])
    assert "--formulation 'pairwise'" in capsys.readouterr().err


def test_warmup_config_errors_name_the_flag(capsys):
    with pytest.raises(SystemExit):
        main(["warmup", "--train_file", "x.jsonl", "--verdicts", "verbose", "--output_dir", "o"])
    assert "--verdicts 'verbose'" in capsys.readouterr().err


def test_warmup_reports_valid_rate(tiny_model, pair_file, tmp_path):
    out = tmp_path / "wu"
    assert main([
        "warmup", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir", str(out),
        "--formulation", "pavs", "--heldout_pairs", "1", "--max_steps", "2", "--per_device_train_batch_size", "4",
        "--check_max_new_tokens", "4", "--save_strategy", "no", *CPU_FLAGS,
    ]) == 0
    report = json.loads((out / "warmup.json").read_text())
    assert report["train_rows"] == 14 and report["heldout_rows"] == 2
    for when in ("before", "after"):
        assert report[when]["completions"] == 4 and 0.0 <= report[when]["valid_rate"] <= 1.0
    assert (out / "config.json").exists() and json.loads((out / "run.json").read_text())["command"] == "j1 warmup"
    manifest = json.loads((out / "judge.json").read_text())
    assert (manifest["format"], manifest["base_model"], manifest["trained_by"]) == ("pavs", None, "j1 warmup")
    assert manifest["max_new_tokens"] == 4


def test_gold_warmup_adapter_is_a_judge_that_grpo_continues(tiny_model, pair_file, tmp_path, capsys):
    """The shipped judge's two stages at tiny size: j1 warmup on gold verdicts after the prefill, saved
    as an adapter with its manifest, then j1 train --init_adapter continues that very LoRA."""
    from safetensors.torch import load_file

    prefill = "<think>I compare both responses with the request.</think>\n<answer>[["
    lora = ["--use_peft", "true", "--lora_r", "4", "--lora_alpha", "8", "--lora_target_modules", "all-linear",
            "--lora_last_layers", "1"]
    out = tmp_path / "wu"
    assert main([
        "warmup", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir", str(out),
        "--verdicts", "gold", "--assistant_prefill", prefill, "--merge_lora", "false", "--heldout_pairs", "1",
        "--loss_tokens", "1",
        "--max_steps", "2", "--per_device_train_batch_size", "4", "--check_max_new_tokens", "4",
        "--check_samples", "1", "--check_temperature", "0", "--save_strategy", "no", *lora, *CPU_FLAGS,
    ]) == 0
    report = json.loads((out / "warmup.json").read_text())
    assert report["verdicts"] == "gold" and report["train_rows"] == 14
    assert 0.0 <= report["after"]["accuracy"] <= report["after"]["valid_rate"] <= 1.0
    # the adapter alone, on the base its manifest names, asked with the prefill it was trained after
    assert (out / "adapter_model.safetensors").exists() and not (out / "model.safetensors").exists()
    manifest = json.loads((out / "judge.json").read_text())
    assert (manifest["assistant_prefill"], manifest["max_new_tokens"], manifest["trained_by"]) == (
        prefill, 4, "j1 warmup")
    assert manifest["base_model"] == os.path.relpath(tiny_model, out)
    capsys.readouterr()
    assert main(["judge", "--model", str(out), "--prompt", "Add 2 and 3.", "--response-a", "5",
                 "--response-b", "6", "--json"]) == 0
    assert all(o["samples"][0]["text"].startswith(prefill) for o in json.loads(capsys.readouterr().out)["orders"])
    # the GRPO stage starts from it: at learning rate zero its adapter is the warm-up's
    again = tmp_path / "grpo"
    assert _train(tiny_model, pair_file, again, "--max_steps", "1", "--learning_rate", "0", *lora,
                  "--assistant_prefill", prefill, "--init_adapter", str(out)) == 0
    start, kept = load_file(out / "adapter_model.safetensors"), load_file(again / "final" / "adapter_model.safetensors")
    assert kept.keys() == start.keys() and all((kept[k] == start[k]).all() for k in kept)
    # and a second warm-up (on thoughts, say) continues it too: at learning rate zero it saves the same adapter,
    # and its before-check reads the adapter it starts from
    more = tmp_path / "wu2"
    assert main([
        "warmup", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir", str(more),
        "--verdicts", "gold", "--assistant_prefill", prefill, "--merge_lora", "false", "--heldout_pairs", "1",
        "--loss_tokens", "1", "--learning_rate", "0", "--init_adapter", str(out),
        "--max_steps", "1", "--per_device_train_batch_size", "4", "--check_max_new_tokens", "4",
        "--check_samples", "1", "--check_temperature", "0", "--save_strategy", "no", *lora, *CPU_FLAGS,
    ]) == 0
    again_start = load_file(more / "adapter_model.safetensors")
    assert again_start.keys() == start.keys() and all((again_start[k] == start[k]).all() for k in start)
    second = json.loads((more / "warmup.json").read_text())
    assert second["before"]["examples"] == report["after"]["examples"]  # the same judge, checked the same way
    assert json.loads((more / "run.json").read_text())["config"]["j1"]["init_adapter"] == str(out)


def test_warmup_batches_hold_whole_pairs(tiny_model, pair_file, tmp_path, capsys):
    assert main([
        "warmup", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir",
        str(tmp_path / "odd"), "--max_steps", "1", "--per_device_train_batch_size", "3", *CPU_FLAGS,
    ]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--per_device_train_batch_size 3: must be a multiple of 2" in err


@pytest.mark.parametrize("argv,message", [
    (["--loss_tokens", "0"], "--loss_tokens 0"),
    (["--formulation", "pos", "--verdicts", "gold"], "--verdicts gold: --formulation 'pos'"),
    (["--verdicts", "best"], "--verdicts 'best'"),
])
def test_gold_warmup_config_errors_name_the_flag(capsys, argv, message):
    with pytest.raises(SystemExit):
        main(["warmup", "--train_file", "x.jsonl", "--output_dir", "o", *argv])
    assert message in capsys.readouterr().err


def test_trained_judge_is_asked_as_it_was_trained(tiny_model, pair_file, tmp_path, capsys):
    """The manifest round trip: j1 train writes judge.json, j1 judge --model DIR needs no other flag."""
    prefill = "<think>Both compared.</think>\n<answer>[["
    out = tmp_path / "run"
    assert _train(tiny_model, pair_file, out, "--max_steps", "1", "--use_peft", "true", "--lora_r", "4",
                  "--lora_target_modules", "all-linear", "--template", "compact", "--assistant_prefill", prefill,
                  "--max_completion_length", "5") == 0
    manifest = json.loads((out / "final" / "judge.json").read_text())
    assert {k: manifest[k] for k in ("format", "template", "assistant_prefill", "max_new_tokens", "temperature",
                                     "samples", "trained_by")} == {
        "format": "pav", "template": "compact", "assistant_prefill": prefill, "max_new_tokens": 5,
        "temperature": 0.0, "samples": 1, "trained_by": "j1 train"}
    capsys.readouterr()
    assert main(["judge", "--model", str(out / "final"), "--prompt", "Add 2 and 3.", "--response-a", "5",
                 "--response-b", "6", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    for order in result["orders"]:
        (sample,) = order["samples"]  # the manifest's samples (1)
        assert sample["text"].startswith(prefill)  # the manifest's prefill
    # the manifest's length: at most 5 new tokens after the prefill
    from j1.models import load_tokenizer

    tok = load_tokenizer(str(tiny_model))
    assert all(len(tok(o["samples"][0]["text"][len(prefill):]).input_ids) <= 6 for o in result["orders"])
    # an explicit flag still wins over the manifest
    assert main(["judge", "--model", str(out / "final"), "--prompt", "Add 2 and 3.", "--response-a", "5",
                 "--response-b", "6", "--json", "--assistant_prefill", "<think>", "--samples", "2",
                 "--temperature", "1.0"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert all(len(o["samples"]) == 2 and o["samples"][0]["text"].startswith("<think>") and
               not o["samples"][0]["text"].startswith(prefill) for o in result["orders"])


@pytest.mark.parametrize("argv,yaml,setting,cpu,cuda", [
    ([], None, "auto", True, False),  # the default: the device decides
    (["--share_prompt_prefix", "true"], None, "true", True, True),
    (["--share_prompt_prefix", "False"], None, "false", False, False),
    ([], "share_prompt_prefix: false\n", "false", False, False),  # a YAML bool
    ([], "share_prompt_prefix: true\n", "true", True, True),
], ids=["default", "flag true", "flag False", "yaml false", "yaml true"])
def test_share_prompt_prefix_is_chosen_by_the_device(tmp_path, argv, yaml, setting, cpu, cuda):
    from j1.cli.train_cmd import parse_train

    config = []
    if yaml is not None:
        (tmp_path / "c.yaml").write_text(f"train_file: x.jsonl\n{yaml}")
        config = ["--config", str(tmp_path / "c.yaml")]
    j1cfg, _, _ = parse_train([*config, "--train_file", "x.jsonl", "--output_dir", str(tmp_path), *CPU_FLAGS, *argv])
    assert j1cfg.share_prompt_prefix == setting
    assert (j1cfg.options("cpu").share_prompt_prefix, j1cfg.options("cuda").share_prompt_prefix) == (cpu, cuda)


def test_share_prompt_prefix_refuses_other_values(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--train_file", "x.jsonl", "--output_dir", str(tmp_path), *CPU_FLAGS,
              "--share_prompt_prefix", "yes"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--share_prompt_prefix 'yes': choose auto, true or false" in err
