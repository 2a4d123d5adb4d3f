"""What ``j1 train`` builds is what it says it builds (issue 52): the model settings reach the model,
the KL reference with ``--init_adapter`` is the starting adapter, one J1 choice owns TRL's
importance-sampling keys, and run.json's ``effective`` says what is in effect."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import CPU_FLAGS

from j1.cli.main import main
from j1.cli.train_cmd import parse_train
from j1.train.recipe import build_trainer


def _build(tiny_model, pair_file, tmp_path, *extra):
    j1cfg, grpo, model = parse_train([
        "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir", str(tmp_path / "run"),
        "--num_generations", "2", "--per_device_train_batch_size", "4", "--max_completion_length", "8",
        *CPU_FLAGS, *extra])
    return build_trainer(j1cfg, grpo, model)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_attn_implementation_reaches_the_model(tiny_model, pair_file, tmp_path, attn):
    trainer, info = _build(tiny_model, pair_file, tmp_path, "--attn_implementation", attn)
    assert trainer.model.config._attn_implementation == attn
    assert info["effective"]["attn_implementation"] == attn


def test_effective_settings_of_a_cpu_run(tiny_model, pair_file, tmp_path):
    _, info = _build(tiny_model, pair_file, tmp_path, "--beta", "0.04", "--loss_span", "answer")
    assert info["effective"] == {
        "share_prompt_prefix": True, "generation": "transformers",
        "importance_sampling": "none", "kl_reference": "a frozen copy of the starting model",
        "loss_normaliser": "the tokens the loss trains (the answer span)", "attn_implementation": "sdpa",
        "signal_grace_seconds": None}
    assert info["device"]["share_prompt_prefix"] is True


def test_the_kl_reference_of_an_init_adapter_run_is_a_frozen_copy(tiny_model, pair_file, tmp_path):
    from peft import get_peft_model_state_dict
    from safetensors.torch import save_file

    lora = ["--use_peft", "true", "--lora_r", "4", "--lora_target_modules", "all-linear", "--lora_dropout", "0"]
    trainer, info = _build(tiny_model, pair_file, tmp_path / "a", *lora)
    assert info["effective"]["kl_reference"] == "none (beta 0)"
    # a judge folder holding a non-zero adapter of the tiny model
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in trainer.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)
    judge = tmp_path / "judge"
    trainer.model.save_pretrained(str(judge))
    save_file(get_peft_model_state_dict(trainer.model), judge / "adapter_model.safetensors")
    (judge / "judge.json").write_text(json.dumps({"format": "pav", "base_model": str(tiny_model)}))

    trainer, info = _build(tiny_model, pair_file, tmp_path / "b", *lora, "--beta", "0.04", "--init_adapter", str(judge))
    model = trainer.model
    assert info["effective"]["kl_reference"] == f"the starting adapter (--init_adapter {judge})"
    assert model.active_adapter == "default" and set(model.peft_config) == {"default", "ref"}
    params = dict(model.named_parameters())
    refs = [n for n in params if ".ref." in n]
    assert refs and all(not params[n].requires_grad for n in refs)  # frozen: the optimizer leaves it
    assert all(torch.equal(params[n], params[n.replace(".ref.", ".default.")]) for n in refs)
    assert any(params[n].abs().sum() > 0 for n in refs if "lora_B" in n)  # the loaded adapter, not zeros


def test_importance_sampling_is_one_j1_choice(tiny_model, pair_file, tmp_path, capsys):
    _, grpo, _ = parse_train(["--train_file", str(pair_file), "--output_dir", str(tmp_path / "x"), *CPU_FLAGS])
    assert grpo.vllm_importance_sampling_correction is True  # TRL's default, before j1 sets it
    trainer, info = _build(tiny_model, pair_file, tmp_path)
    assert trainer.args.vllm_importance_sampling_correction is False  # none: the paper's
    trainer, info = _build(tiny_model, pair_file, tmp_path / "t", "--importance_sampling", "token_truncate")
    assert (trainer.args.vllm_importance_sampling_correction, trainer.args.vllm_importance_sampling_mode) == \
        (True, "token_truncate")
    assert info["effective"]["importance_sampling"] == "none (no vLLM: rollouts come from the trained model)"
    # TRL's own key set against the J1 choice: one line naming the owner, exit 2
    assert main(["train", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir",
                 str(tmp_path / "bad"), "--vllm_importance_sampling_mode", "token_mask", *CPU_FLAGS]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "vllm_importance_sampling_mode token_mask: set importance_sampling in the J1 section" in err
    with pytest.raises(SystemExit):
        main(["train", "--train_file", str(pair_file), "--output_dir", str(tmp_path / "x"), "--importance_sampling",
              "off"])
    assert "--importance_sampling 'off': choose one of" in capsys.readouterr().err


def test_a_lora_judge_saved_the_deepspeed_way_names_its_base(tiny_model, pair_file, tmp_path, monkeypatch):
    """Under DeepSpeed the final judge is saved by the trainer (a collective gather); with LoRA that
    writes the adapter, and judge.json must name its base (before issue 52 it described a full model).
    No DeepSpeed here: the run takes that branch, and the trainer's own save writes the folder."""
    import os

    from transformers import Trainer

    from j1.train.trl_grpo import J1GRPOTrainer

    train = J1GRPOTrainer.train

    def train_then_as_deepspeed(self, *args, **kwargs):
        result = train(self, *args, **kwargs)
        self.is_deepspeed_enabled = True
        return result

    monkeypatch.setattr(J1GRPOTrainer, "train", train_then_as_deepspeed)
    monkeypatch.setattr(J1GRPOTrainer, "save_model", lambda self, out, _internal_call=False: Trainer._save(self, out))
    out = tmp_path / "run"
    assert main(["train", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir",
                 str(out), "--num_generations", "2", "--per_device_train_batch_size", "4", "--max_completion_length",
                 "8", "--max_steps", "1", "--use_peft", "true", "--lora_r", "4", "--lora_target_modules", "all-linear",
                 *CPU_FLAGS]) == 0
    final = out / "final"
    assert (final / "adapter_config.json").exists() and not (final / "model.safetensors").exists()
    assert json.loads((final / "judge.json").read_text())["base_model"] == os.path.relpath(tiny_model, final)


def test_a_grace_longer_than_torchruns_timeout_stops_at_start(pair_file, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "test")  # as torchrun sets it in its workers
    monkeypatch.delenv("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", raising=False)
    with pytest.raises(SystemExit) as exc:
        main(["train", "--train_file", str(pair_file), "--output_dir", str(tmp_path / "run"),
              "--signal_grace_seconds", "600", *CPU_FLAGS])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("j1 train: error: --signal_grace_seconds 600: torchrun kills the processes 30 s after a "
                       "signal (TORCH_ELASTIC_SHUTDOWN_TIMEOUT unset: its default); launch with "
                       "TORCH_ELASTIC_SHUTDOWN_TIMEOUT=600")
    assert not (tmp_path / "run").exists()
