"""``j1 train --dry_run``: every shipped GPU recipe checked on the CPU at its declared world size, with no
generation and nothing downloaded (HF_HUB_OFFLINE); the memory arithmetic and the parameter counts by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from j1.cli.main import main
from j1.train.dry_run import GIB, KNOWN_MODELS, ModelShape, count_parameters, memory_estimate

REPO = Path(__file__).resolve().parents[2]
GPU_RECIPES = sorted((REPO / "configs/train").glob("*gpu*.yaml"))
# The paper's recipes (many GPUs, its batch); the thinking judge of issue 51 is a one-GPU recipe of its own.
THINKING = REPO / "configs/train/pav_135m_thinking_gpu.yaml"
PAPER_RECIPES = [p for p in GPU_RECIPES if p != THINKING]
# The recipes read runs/j1-paper/data/train.jsonl, which only the synth chain writes; the dry runs read
# the 460 GSM8K mismatch pairs that ship with j1 (enough for one 256-pair generation batch).
DATA = str(REPO / "src/j1/assets/data/gsm8k_mismatch.jsonl")


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a hub id that were fetched would fail the test


def _dry_run(capsys, *argv):
    try:
        rc = main(["train", *argv, "--dry_run"])
    except SystemExit as exc:  # a bad flag value stops the parse: exit 2, one line
        rc = exc.code
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_every_gpu_recipe_is_covered():
    # 8B on 8 (colocate) and on 4+4 (server); 32B on 16+8 (server) and on 32 (colocate); 70B on 64.
    assert [p.name for p in GPU_RECIPES] == [
        "pav_135m_thinking_gpu.yaml", "pav_llama31_8b_gpu.yaml", "pav_llama31_8b_server_gpu.yaml",
        "pav_llama33_70b_gpu.yaml", "pav_qwen3_32b_colocate_gpu.yaml", "pav_qwen3_32b_gpu.yaml"]


@pytest.mark.parametrize("recipe", PAPER_RECIPES, ids=lambda p: p.stem)
def test_gpu_recipe_dry_run(capsys, recipe):
    declared = yaml.safe_load(recipe.read_text())
    rc, out, err = _dry_run(capsys, "--config", str(recipe), "--train_file", DATA)
    assert rc == 0, err
    lines = {label: next(ln for ln in out.splitlines() if ln.strip().startswith(label))
             for label in ("model", "world size", "per process", "memory")}
    assert out.splitlines()[0].endswith(": OK")
    assert f"{declared['world_size']} training processes" in lines["world size"]
    assert f"ZeRO-{declared['zero_stage']}" in lines["world size"] and f"vLLM {declared['vllm_mode']}" in lines["world size"]
    assert "pair geometry OK" in lines["per process"]
    # The paper's batch: 512 prompts = 256 pairs x 2 orders, 5 rollouts each, per optimizer step.
    assert "256 pairs, 512 prompts, 2560 rollouts" in out
    assert "j1's table of known models" in lines["model"]  # the count came from the table, not the Hub
    total = float(lines["memory"].split("(est.)")[1].split("GiB")[0])
    assert 10 < total < 80, lines["memory"]  # fits the paper's 80 GB GPUs


def test_thinking_recipe_dry_run(capsys):
    """The thinking judge of issue 51 (bench/gpu_check.sh --think): one GPU, sampled thoughts after a bare
    "<think>", 16 pairs x 2 orders x 8 rollouts a step, on the shipped training pairs, time-boxed."""
    rc, out, err = _dry_run(capsys, "--config", str(THINKING))  # its own train_file: the shipped pairs
    assert rc == 0, err
    assert out.splitlines()[0].endswith(": OK") and "the embedded model's config" in out
    assert "1 training processes (unset: 1), ZeRO-0, vLLM off" in out
    assert "16 pairs, 32 prompts, 256 rollouts" in out and "pair geometry OK" in out
    assert "src/j1/assets/data/gsm8k_mismatch.jsonl: 460 pairs" in out
    total = float(next(ln for ln in out.splitlines() if "memory" in ln).split("(est.)")[1].split("GiB")[0])
    assert total < 78  # an H100's memory


def test_thinking_recipe_samples_its_thought():
    """No fixed thought: only "<think>" is prefilled and the whole completion is trained, with room for a
    thought; a checkpoint every minute within the time box; a LoRA adapter small enough to come back
    through a run's OUT (16 MiB a file): r16 on the last 8 of SmolLM2-135M's 30 blocks, fp32."""
    from j1.cli.train_cmd import parse_train
    from j1.judging.chat import fixed_thought

    j1cfg, grpo, model = parse_train(["--config", str(THINKING), "--bf16", "false", "--use_cpu", "true"])
    assert j1cfg.assistant_prefill == "<think>" and fixed_thought(j1cfg.assistant_prefill) is None
    assert (j1cfg.formulation, j1cfg.loss_span, j1cfg.consistency) == ("pav", "all", "index")
    assert j1cfg.consistency_weight is None or j1cfg.consistency_weight > 0  # the consistency reward is on
    assert grpo.max_completion_length >= 128 and grpo.temperature == 1.0 and not grpo.use_vllm
    assert j1cfg.max_minutes == 5 and j1cfg.save_minutes == 1
    assert j1cfg.init_adapter == "runs/thinking-gpu/warmup"
    # per block: q, o 576x576; k, v 576x192; gate, up, down 576x1536 -> r16 x (2x1152 + 2x768 + 3x2112) = 162,816
    lora_params = 8 * 16 * (2 * 1152 + 2 * 768 + 3 * 2112)
    assert model.lora_r == 16 and j1cfg.lora_last_layers == 8 and lora_params == 1_302_528
    assert lora_params * 4 < 16 * 2**20  # 5.0 MiB in fp32


def test_cpu_recipe_reads_the_embedded_config(capsys):
    rc, out, err = _dry_run(capsys, "--config", str(REPO / "configs/train/j1_135m_cpu.yaml"), "--train_file", DATA)
    assert rc == 0, err
    assert "the embedded model's config" in out and "1 training processes (unset: 1)" in out
    assert "with the recipe's tokenizer" in out and "activations (checkpointed)" in out  # listed as not estimated


@pytest.mark.parametrize("flags, message", [
    # 5 rows x 1 step = 1 prompt per process: a pair would straddle two processes.
    (["--per_device_train_batch_size", "5", "--gradient_accumulation_steps", "1"], "must come in whole pairs"),
    (["--max_pairs", "100"], "100 pair units after filtering, but one generation batch at world_size 8 needs 256"),
    (["--vllm_tensor_parallel_size", "3"], "vllm_tensor_parallel_size 3 does not divide world_size 8"),
    (["--vllm_gpu_memory_utilization", "0.1"], "vLLM's weights take 15.0 GiB per GPU"),
    (["--world_size", "0"], "--world_size 0: must be >= 1"),
])
def test_dry_run_catches_a_broken_recipe(capsys, flags, message):
    recipe = REPO / "configs/train/pav_llama31_8b_gpu.yaml"
    rc, out, err = _dry_run(capsys, "--config", str(recipe), "--train_file", DATA, *flags)
    assert rc == 2 and message in err and "Traceback" not in err and not out


def test_dry_run_names_an_overlong_prompt_and_the_limit(capsys, tmp_path):
    # The shipped pairs plus one whose rejected answer is a pasted document: prompt + 4096 > 8192.
    import json

    data = tmp_path / "pairs.jsonl"
    rows = [json.loads(line) for line in Path(DATA).read_text().splitlines() if line.strip()]
    rows.append({**rows[0], "id": "pasted-document", "rejected": " ".join(["lorem ipsum dolor"] * 3000)})
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = REPO / "configs/train/pav_llama31_8b_gpu.yaml"
    rc, out, err = _dry_run(capsys, "--config", str(recipe), "--train_file", str(data))
    assert rc == 0, err
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("prompt limit"))
    assert "4096 tokens (vllm_max_model_length 8192 - max_completion_length 4096)" in line
    assert "1 of 461 units over it, dropped; the longest, pair pasted-document in order" in line
    tokens = int(line.split(" has ")[1].split()[0])
    assert tokens > 4096
    assert f"{len(rows)} pairs -> 460 units" in out
    # the server recipe reads its server's --max_model_len from the same key; a shorter one drops more
    rc, out, err = _dry_run(capsys, "--config", str(REPO / "configs/train/pav_llama31_8b_server_gpu.yaml"),
                            "--train_file", str(data), "--vllm_max_model_length", "4500")
    assert rc == 0, err
    assert "404 tokens (vllm_max_model_length 4500 - max_completion_length 4096)" in out
    assert "units over it, dropped" in out


def test_launch_on_another_world_size_stops(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("WORLD_SIZE", "1")  # what accelerate launch / torchrun set (1: no process group here)
    rc = main(["train", "--config", str(REPO / "configs/train/j1_135m_cpu.yaml"), "--train_file", DATA,
               "--world_size", "4", "--output_dir", str(tmp_path / "run")])
    assert rc == 2
    assert "written for world_size 4 but runs on 1 processes" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("name, published", [
    # The parameter counts published for these models (their model cards / safetensors index).
    ("meta-llama/Llama-3.1-8B-Instruct", 8_030_261_248),
    ("meta-llama/Llama-3.3-70B-Instruct", 70_553_706_496),
])
def test_known_model_counts(name, published):
    from transformers import AutoConfig

    spec = dict(KNOWN_MODELS[name])
    assert count_parameters(AutoConfig.for_model(spec.pop("model_type"), **spec)) == published


SHAPE = ModelShape("m", 4 * GIB, 1000, 100, 10, "test")  # 4 Gi parameters


@pytest.mark.parametrize("stage, expected", [
    # 4 Gi parameters on 4 GPUs: weights 2 B/param = 8 GiB, gradients 8 GiB, optimizer 12 B/param = 48 GiB;
    # ZeRO-1 shards the optimizer (/4 = 12), ZeRO-2 also the gradients (2), ZeRO-3 also the weights (2)
    # and the reference model (beta > 0: 8 GiB, or 2 when sharded).
    (0, (8, 8, 48, 8)),
    (1, (8, 8, 12, 8)),
    (2, (8, 2, 12, 8)),
    (3, (2, 2, 12, 2)),
])
def test_memory_by_zero_stage(stage, expected):
    est = memory_estimate(SHAPE, world_size=4, zero_stage=stage, beta=0.01, use_peft=False, vllm_mode=None,
                          vllm_tp=1, vllm_share=0.0, rows=1, sequence=1, completion=1, checkpointing=False)
    assert (est["weights"], est["gradients"], est["optimizer"], est["reference model"]) == expected
    assert est["activations (checkpointed)"] is None


def test_memory_activations_logits_vllm_and_lora():
    est = memory_estimate(SHAPE, world_size=4, zero_stage=3, beta=0.0, use_peft=True, vllm_mode="colocate",
                          vllm_tp=2, vllm_share=0.5, rows=8, sequence=GIB // 1000, completion=GIB // 1000,
                          checkpointing=True)
    # 10 layers x 8 rows x seq x 100 hidden x 2 B = 16000 x seq B; seq = GiB/1000 -> 16 GiB.
    # logits 8 rows x seq x 1000 vocab x 2 B = 16000 x seq -> 16 GiB. LoRA: no full gradients/optimizer.
    assert est["activations (checkpointed)"] == pytest.approx(16, rel=1e-3)
    assert est["logits of a micro-batch"] == pytest.approx(16, rel=1e-3)
    assert (est["gradients"], est["optimizer"], est["reference model"], est["vLLM (colocated)"]) == (0, 0, 0, 40)


def test_dry_run_flags_the_lora_sync_gather_that_runs_out(capsys):
    # TRL merges a LoRA adapter into ZeRO-3 weights gathered all at once before each vLLM sync:
    # 70,553,706,496 parameters x 2 bytes = 131.4 GiB on every GPU, over an 80 GB GPU.
    recipe = REPO / "configs/train/pav_llama33_70b_gpu.yaml"
    rc, out, err = _dry_run(capsys, "--config", str(recipe), "--train_file", DATA, "--use_peft", "true")
    assert rc == 0, err
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("memory at weight sync"))
    assert "131.4 gathered (the LoRA weight sync gathers every ZeRO-3 parameter at once" in line
    assert "this runs out of memory" in line
    # the recipe as shipped (a full fine-tune) gathers one parameter at a time: the 128256 x 8192
    # embedding, 2.0 GiB, and fits
    rc, out, err = _dry_run(capsys, "--config", str(recipe), "--train_file", DATA)
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("memory at weight sync"))
    assert "2.0 gathered (the weight sync gathers one parameter at a time)" in line
    assert "runs out" not in line


@pytest.mark.parametrize("stage, peft, vllm, gather, expected", [
    # SHAPE: 4 Gi parameters -> 8 GiB whole; its 1000 x 100 embedding, 2e5 bytes
    (3, True, "colocate", True, 8.0),
    (3, True, "server", True, 8.0),
    (3, False, "colocate", True, 1000 * 100 * 2 / GIB),
    (3, False, None, True, 8.0),   # transformers generation: ds3_gather_for_generation
    (3, False, None, False, 0.0),
    (2, True, "colocate", True, 0.0),  # weights not sharded: nothing to gather
])
def test_gather_gib(stage, peft, vllm, gather, expected):
    from j1.train.dry_run import gather_gib

    got, why = gather_gib(SHAPE, zero_stage=stage, use_peft=peft, vllm_mode=vllm, gather_for_generation=gather)
    assert got == pytest.approx(expected) and (why is None) == (expected == 0.0)


@pytest.mark.parametrize("recipe", PAPER_RECIPES, ids=lambda p: p.stem)
def test_gpu_recipe_states_its_choices(recipe):
    """Each GPU recipe names its importance-sampling correction and its KL setting, the engine's context
    its prompts are checked against, and a signal grace period that its launch lines give torchrun."""
    import re

    text = recipe.read_text()
    declared = yaml.safe_load(text)
    assert declared["importance_sampling"] == "none"  # the paper's
    assert "beta" in declared and re.search(r"^# KL: ", text, re.M)
    assert declared["vllm_max_model_length"] == 8192
    launches = re.findall(r"^#.*accelerate launch", text, re.M)
    assert launches and all(f"TORCH_ELASTIC_SHUTDOWN_TIMEOUT={declared['signal_grace_seconds']} " in ln
                            for ln in launches)
