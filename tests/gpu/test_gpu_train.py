"""``j1 train`` (GRPO) and ``j1 warmup`` (SFT) for two steps on the tiny random model, on the device: TRL
takes CUDA by itself (bf16 mixed precision there); the CPU run is told ``--use_cpu true``. Random weights
give invalid verdicts, so what is checked is that the run ends, writes its files, trains where it was
put, decodes its rollouts there (with the shared prompt prefix) and leaves a judge that answers."""

from __future__ import annotations

import json
import math

import pytest

from j1.cli.main import main

pytestmark = pytest.mark.gpu

LORA = ["--use_peft", "true", "--lora_r", "4", "--lora_target_modules", "all-linear"]
# LoRA runs keep TRL's gradient checkpointing (as the GPU recipes do: the training pass is then TRL's);
# full fine-tuning turns it off (as the CPU recipes do), so the shared prompt's log-prob pass runs with
# gradients on the device.
FULL = ["--gradient_checkpointing", "false"]


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _judges(folder, capsys) -> dict:
    capsys.readouterr()
    assert main(["judge", "--model", str(folder), "--prompt", "Add 2 and 3.", "--response-a", "5",
                 "--response-b", "6", "--max-new-tokens", "6", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("share", ["true", "false"], ids=["shared-prefix", "unshared"])
@pytest.mark.parametrize("lora", [True, False], ids=["lora", "full"])
def test_train_two_steps(tiny_model, pair_file, tmp_path, device, trl_flags, trained_devices, generations,
                         shared_prompt_calls, capsys, share, lora):
    out = tmp_path / "run"
    assert main([
        "train", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir", str(out),
        "--num_generations", "2", "--per_device_train_batch_size", "4", "--max_completion_length", "8",
        "--max_steps", "2", "--save_strategy", "no", "--share_prompt_prefix", share, *trl_flags,
        *(LORA if lora else FULL),
    ]) == 0
    assert trained_devices == [device]
    # the rollouts, on the device; the shared-prefix passes only when asked for
    assert generations.on(device)
    expected = set() if share == "false" else {"generate"} if lora else {"generate", "completion_logps"}
    assert set(shared_prompt_calls) == expected
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "done" and run["global_step"] == 2
    assert run["config"]["j1"]["share_prompt_prefix"] == share
    assert run["device"]["device"].startswith(device) and run["device"]["share_prompt_prefix"] is (share == "true")
    steps = [r for r in _rows(out / "log.jsonl") if "loss" in r]
    assert [r["step"] for r in steps] == [1, 2] and all(math.isfinite(r["loss"]) for r in steps)
    final = out / "final"
    assert (final / "judge.json").exists()
    if lora:
        assert (final / "adapter_config.json").exists() and not (final / "config.json").exists()
    else:
        assert (final / "config.json").exists() and (final / "model.safetensors").exists()
    # the trained judge answers, on the device
    generations.clear()
    result = _judges(final, capsys)
    assert [o["order"] for o in result["orders"]] == ["AB", "BA"]
    assert generations.on(device)


def test_warmup_two_steps(tiny_model, pair_file, tmp_path, device, trl_flags, trained_devices, generations):
    out = tmp_path / "wu"
    assert main([
        "warmup", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir", str(out),
        "--formulation", "pavs", "--heldout_pairs", "1", "--max_steps", "2", "--per_device_train_batch_size", "4",
        "--check_max_new_tokens", "4", "--save_strategy", "no", *LORA, *trl_flags,
    ]) == 0
    assert trained_devices == [device]
    # the checks before and after the warm-up generate on the device too
    assert generations.on(device)
    report = json.loads((out / "warmup.json").read_text())
    assert report["train_rows"] == 14 and report["heldout_rows"] == 2
    for when in ("before", "after"):
        assert report[when]["completions"] == 4 and 0.0 <= report[when]["valid_rate"] <= 1.0
    run = json.loads((out / "run.json").read_text())
    assert run["command"] == "j1 warmup" and run["global_step"] == 2
    assert (out / "config.json").exists() and (out / "judge.json").exists()  # LoRA merged: a plain model
