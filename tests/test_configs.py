"""Every YAML under configs/ parses with its command's config classes (a recursive glob, so no file
is skipped). The folder names the command; a new folder must be added to PARSERS.

The shipped configs chain (synth -> mix -> warmup -> train -> eval): every path a config reads is a
Hugging Face id, a file that ships in the repository, or what another shipped config writes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from j1.judging.judges import SHIPPED as SHIPPED_JUDGES  # the judges that ship with j1 (j1-135m)

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
YAMLS = sorted(p for p in CONFIGS.rglob("*") if p.suffix in {".yaml", ".yml"})
# Files a GPU machine needs (bf16): here they are parsed with --bf16 false --use_cpu true appended,
# which checks every other key; the gpu-marked test parses them unchanged.
GPU_ONLY = {"bf16": ["--bf16", "false", "--use_cpu", "true"]}


def _train(path: Path, extra=()):
    from j1.cli.train_cmd import parse_train
    from j1.train.sampler import check_pair_geometry

    j1cfg, grpo, model = parse_train(["--config", str(path), *extra])
    check_pair_geometry(grpo.per_device_train_batch_size, grpo.steps_per_generation, grpo.num_generations)
    return j1cfg, grpo, model


def _warmup(path: Path, extra=()):
    from j1.cli.warmup_cmd import parse_warmup

    return parse_warmup(["--config", str(path), *extra])


def _single(spec: str):
    """``spec``: ``module:Class``, the spec in its domain package."""
    def parse_one(path: Path, extra=()):
        import importlib

        from j1.cli.common import parse

        module, name = spec.split(":")
        return parse(getattr(importlib.import_module(module), name), ["--config", str(path), *extra], prog=path.name)

    return parse_one


def _synth(path: Path, extra=()):
    kind = path.stem.split("_")[0]  # math_*.yaml, chat_*.yaml, mismatch_*.yaml, thoughts_*.yaml, mix*.yaml
    cls = {"math": "j1.data.spec:SynthMathSpec", "chat": "j1.data.spec:SynthChatSpec",
           "mismatch": "j1.data.spec:SynthMismatchSpec", "thoughts": "j1.data.spec:ThoughtsSpec",
           "mix": "j1.data.spec:MixSpec"}[kind]
    return _single(cls)(path, extra)


def _accelerate(path: Path, extra=()):
    from accelerate.commands.config.config_args import ClusterConfig

    cfg = ClusterConfig.from_yaml_file(str(path))
    assert cfg.num_processes >= 1
    return cfg


PARSERS = {"train": _train, "warmup": _warmup, "eval": _single("j1.eval.spec:EvalSpec"), "synth": _synth,
           "accelerate": _accelerate}


def _gpu_file(path: Path) -> bool:
    return "gpu" in path.stem


def test_configs_are_all_found():
    # The recursive glob sees every folder; update the floor when configs are removed, never skip files.
    folders = {p.relative_to(CONFIGS).parts[0] for p in YAMLS}
    assert {"synth", "warmup", "train", "eval", "accelerate"} <= folders
    # the CPU recipe that learns + 4 CPU starting points (pas, pavs, pos, multitask) + 5 GPU recipes of the
    # paper + the thinking judge on one GPU (issue 51) + the thinking judge's GRPO on the CPU
    assert len([p for p in YAMLS if p.parent.name == "train"]) == 12
    # one per CPU starting point (j1's GRPO recipe needs none for the format: its answer prefill gives it),
    # the thinking judge's format warm-up on one GPU, and its SFT on thoughts by construction on the CPU
    assert len([p for p in YAMLS if p.parent.name == "warmup"]) == 6
    # + the thinking judge's data: GSM8K (half boxed) and Alpaca mismatch pairs, thoughts for them, their mix
    assert len([p for p in YAMLS if p.parent.name == "synth"]) == 13
    assert len([p for p in YAMLS if p.parent.name == "eval"]) == 5
    assert len(YAMLS) == len(set(YAMLS)) == 37


@pytest.mark.parametrize("path", YAMLS, ids=lambda p: str(p.relative_to(CONFIGS)))
def test_config_parses(path):
    folder = path.relative_to(CONFIGS).parts[0]
    assert folder in PARSERS, f"configs/{folder}/ has no parser in tests/test_configs.py::PARSERS"
    extra = GPU_ONLY["bf16"] if _gpu_file(path) else ()
    judge = _load(path).get("judge")
    if judge and not (REPO / judge).exists():
        # A judge another config trains (test_configs_chain checks the path): its manifest is read at
        # parse time, so a shipped judge stands in for it here.
        extra = (*extra, "--judge", "j1-135m")
    PARSERS[folder](path, extra)


def test_flags_override_yaml():
    cfg = _synth(CONFIGS / "synth" / "math_gsm8k.yaml", ["--samples", "6"])
    assert cfg.samples == 6 and cfg.max_new_tokens == 200  # the flag wins; other keys stay the YAML's


def _paper_recipe(path: Path) -> bool:
    """The paper's multi-GPU recipes (the one-GPU thinking judge of issue 51 is not one)."""
    return _gpu_file(path) and path.parent.name == "train" and "thinking" not in path.stem


@pytest.mark.gpu
@pytest.mark.parametrize("path", [p for p in YAMLS if _paper_recipe(p)], ids=lambda p: p.name)
def test_gpu_recipe_parses_unchanged(path):
    j1cfg, grpo, _ = _train(path)
    assert grpo.bf16 and grpo.use_vllm and grpo.num_generations == 5 and grpo.learning_rate == 1e-6


@pytest.mark.gpu
def test_thinking_recipes_parse_unchanged():
    """On the GPU, as bench/gpu_check.sh --think runs them: bf16, TRL's own generation (no vLLM there)."""
    j1cfg, grpo, _ = _train(CONFIGS / "train" / "pav_135m_thinking_gpu.yaml")
    assert grpo.bf16 and not grpo.use_cpu and not grpo.use_vllm and j1cfg.assistant_prefill == "<think>"
    cfg, sft, _ = _warmup(CONFIGS / "warmup" / "pav_135m_thinking_gpu.yaml")
    assert sft.bf16 and not sft.use_cpu and (cfg.verdicts, cfg.merge_lora) == ("random", False)


def test_thinking_warmup_feeds_the_thinking_run():
    """The warm-up writes the adapter the GRPO step starts from, with the same wording, prefill and LoRA."""
    (wcfg, sft, wmodel), (gcfg, _, gmodel) = (_warmup(CONFIGS / "warmup" / "pav_135m_thinking_gpu.yaml", GPU_ONLY["bf16"]),
                                              _train(CONFIGS / "train" / "pav_135m_thinking_gpu.yaml", GPU_ONLY["bf16"]))
    assert gcfg.init_adapter == sft.output_dir and not wcfg.merge_lora
    for key in ("formulation", "template", "assistant_prefill", "max_prompt_tokens", "lora_last_layers", "train_file"):
        assert getattr(wcfg, key) == getattr(gcfg, key), key
    for key in ("model_name_or_path", "lora_r", "lora_alpha", "lora_target_modules", "use_peft"):
        assert getattr(wmodel, key) == getattr(gmodel, key), key


def test_gpu_recipes_match_the_paper():
    from j1.cli.train_cmd import parse_train

    for name, beta in (("pav_llama31_8b_gpu.yaml", 0.01), ("pav_qwen3_32b_gpu.yaml", 0.0)):
        _, grpo, _ = parse_train(["--config", str(CONFIGS / "train" / name), *GPU_ONLY["bf16"]])
        assert (grpo.num_generations, grpo.temperature, grpo.learning_rate, grpo.beta) == (5, 1.0, 1e-6, beta)
        assert grpo.max_completion_length == 4096 and grpo.use_vllm
        # prompts per step: per-device rows x accumulation x GPUs / rollouts (8 GPUs; 16 for 32B)
        gpus = 8 if "8b" in name else 16
        assert grpo.per_device_train_batch_size * grpo.gradient_accumulation_steps * gpus // 5 == 512


# --- The chain ---------------------------------------------------------------------------------------
# Fields a command reads a path or a model from; what each command writes is derived in _outputs.
INPUT_FIELDS = ("source", "pairs", "inputs", "exclude", "train_file", "data", "model_name_or_path", "model", "judge",
                "verify_with", "embedder", "init_adapter")
EMBEDDED = {"embedded", "smollm2-135m"}  # names of the model that ships with j1
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+(:[\w.-]+)?")  # owner/name, an optional :config


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def _outputs(cfg: dict) -> set[str]:
    """The paths a config's command writes: out (a file or a run folder), out_dir/{train,heldout}.jsonl
    (j1 synth mix), output_dir and output_dir/final (j1 warmup writes the model in output_dir, j1 train
    in output_dir/final)."""
    found = set()
    if cfg.get("out"):
        found.add(cfg["out"])
    if cfg.get("out_dir"):
        found |= {f"{cfg['out_dir']}/train.jsonl", f"{cfg['out_dir']}/heldout.jsonl"}
    if cfg.get("output_dir"):
        found |= {cfg["output_dir"], f"{cfg['output_dir']}/final"}
    return {str(Path(p)) for p in found}


def _inputs(cfg: dict) -> list[tuple[str, str]]:
    """(field, value) for every path or model a config reads; ``inputs`` entries lose their ``:N``."""
    pairs = []
    for name in INPUT_FIELDS:
        values = cfg.get(name)
        for value in values if isinstance(values, list) else [values]:
            if value is None or (name == "pairs" and isinstance(value, int)):  # j1 synth mismatch's pairs: a count
                continue
            value = str(value)
            if name == "inputs":
                value = re.sub(r":(\d+|all)$", "", value)
            pairs.append((name, value))
    return pairs


def _is_hub_id(value: str) -> bool:
    """owner/name[:config] and not a path: no file suffix, not under runs/ or a parent folder."""
    return bool(HUB_ID.fullmatch(value)) and not value.startswith(("runs/", "../", "./")) \
        and Path(value.split(":")[0]).suffix not in {".jsonl", ".json", ".parquet", ".yaml"}


def chain_errors(configs_dir: Path, repo: Path = REPO) -> list[str]:
    """Every input of every YAML under ``configs_dir`` that is neither a hub id, nor a file shipped in
    ``repo``, nor written by another config there; one message per offending field."""
    configs = {p: _load(p) for p in sorted(configs_dir.rglob("*.yaml"))}
    writers = {out: p for p, cfg in configs.items() for out in _outputs(cfg)}
    errors = []
    for path, cfg in configs.items():
        for name, value in _inputs(cfg):
            norm = str(Path(value))
            shipped = not value.startswith("/") and (repo / value).resolve().is_relative_to(repo) \
                and (repo / value).exists() and not value.startswith("runs/")
            writer = writers.get(norm)
            if value in EMBEDDED or value in SHIPPED_JUDGES or _is_hub_id(value) or shipped or (writer is not None and writer != path):
                continue
            errors.append(f"{path.relative_to(configs_dir)}: {name}: {value!r} is not a hub id, a file in the "
                          "repository, or the output of another shipped config")
    return errors


def test_configs_chain():
    assert chain_errors(CONFIGS) == []


BREAKS = {  # (config, field, bad value): a typo in a chained path, a local-only path, a missing step
    "typo_in_train_file": ("train/j1_135m_cpu.yaml", "train_file", "runs/j1-135m/dta/train.jsonl"),
    "shared_data_path": ("eval/judgebench_claude_pav.yaml", "data", "../shared/data/judgebench_dev.jsonl"),
    "model_not_written": ("eval/j1_135m_heldout.yaml", "model", "runs/j1-135m/train/final2"),
    "model_dir_typo": ("train/j1_135m_cpu.yaml", "model_name_or_path", "runs/j1-135m/warmp"),
    "mix_input_typo": ("synth/mix_j1_135m.yaml", "inputs", ["runs/synth/mismatches.jsonl:all"]),
    "absolute_path": ("synth/mismatch_gsm8k.yaml", "source", "/data/gsm8k_train.jsonl"),
    "reads_its_own_output": ("synth/mix.yaml", "inputs", ["runs/synth/train.jsonl:all"]),
}


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_configs_chain_catches_a_broken_path(tmp_path, name):
    rel, field, value = BREAKS[name]
    shutil.copytree(CONFIGS, tmp_path / "configs")
    target = tmp_path / "configs" / rel
    cfg = _load(target)
    assert field in cfg, f"{rel} has no {field}: update BREAKS"
    cfg[field] = value
    target.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    errors = chain_errors(tmp_path / "configs")
    assert len(errors) == 1 and errors[0].startswith(f"{rel}: {field}:"), errors


def test_configs_chain_catches_a_missing_step(tmp_path):
    shutil.copytree(CONFIGS, tmp_path / "configs")
    (tmp_path / "configs" / "synth" / "mix_j1_135m.yaml").unlink()  # nothing writes runs/j1-135m/data now
    assert chain_errors(tmp_path / "configs") == [
        f"{rel}: {field}: 'runs/j1-135m/data/{name}.jsonl' is not a hub id, a file in the repository, or the "
        "output of another shipped config"
        for rel, field, name in (("eval/j1_135m_heldout.yaml", "data", "heldout"),
                                 ("train/j1_135m_cpu.yaml", "train_file", "train"))]


@pytest.mark.parametrize("path", YAMLS, ids=lambda p: str(p.relative_to(CONFIGS)))
def test_config_comment_names_its_command(path):
    # The leading comment gives the command line with this very file, so a renamed file cannot keep a
    # stale command.
    head = "".join(line for line in path.read_text(encoding="utf-8").splitlines(keepends=True)[:12]
                   if line.startswith("#"))
    assert str(path.relative_to(REPO)) in head


def test_j1_135m_chain_trains_with_the_shipped_recipe():
    """configs/train/j1_135m_cpu.yaml is j1's J1 GRPO recipe (src/j1/assets/recipes/j1_135m.yaml, the shipped
    judge's second stage and j1 demo's training) plus the chain's paths and time limit, and the chain's
    eval reads the judge that config writes."""
    from j1.judging.judges import ASSETS

    cfg = _load(CONFIGS / "train" / "j1_135m_cpu.yaml")
    recipe = _load(ASSETS / "recipes" / "j1_135m.yaml")
    chain_only = {"train_file", "output_dir", "max_minutes"}
    assert {k: v for k, v in cfg.items() if k not in chain_only} == recipe
    held = _load(CONFIGS / "eval" / "j1_135m_heldout.yaml")
    assert held["model"] == f"{cfg['output_dir']}/final"


def test_shipped_judge_recipes_chain():
    """The shipped judge's two stages: the gold warm-up saves an adapter that j1's GRPO recipe can continue
    (the same wording, prefill and LoRA), and the shipped judge is asked as both were trained."""
    from j1.judging.judges import ASSETS, manifest_for

    warmup, grpo = _warmup(ASSETS / "recipes" / "j1_135m_warmup.yaml", ["--train_file", "x.jsonl"]), \
        _train(ASSETS / "recipes" / "j1_135m.yaml", ["--train_file", "x.jsonl"])
    (wcfg, sft, wmodel), (gcfg, _, gmodel) = warmup, grpo
    assert (wcfg.verdicts, wcfg.merge_lora, sft.max_steps) == ("gold", False, 120)
    for key in ("formulation", "template", "assistant_prefill", "max_prompt_tokens", "lora_last_layers"):
        assert getattr(wcfg, key) == getattr(gcfg, key), key
    for key in ("model_name_or_path", "lora_r", "lora_alpha", "lora_target_modules", "use_peft"):
        assert getattr(wmodel, key) == getattr(gmodel, key), key
    shipped = manifest_for("j1-135m")
    assert (shipped.format, shipped.template, shipped.assistant_prefill) == (
        gcfg.formulation, gcfg.template, gcfg.assistant_prefill)


def test_run17_lab_recipe_is_the_measured_run():
    """The lab configs of run 17 (results/train/configs/) hold the settings of results/train/pav-learn17/run.json."""
    run = json.loads((REPO / "results/train/pav-learn17/run.json").read_text(encoding="utf-8"))["config"]
    warmup = _load(REPO / "results/train/configs/warmup_j1_135m.yaml")
    assert warmup["template"] == "compact" and warmup["max_steps"] == 16
    assert run["j1"]["template"] == "digest" and run["model"]["model_name_or_path"].endswith("warmup-pav-compact")


def test_pointwise_lab_recipe_is_the_measured_run():
    """results/train/configs/pos_j1_135m.yaml holds the settings of the measured pointwise run
    (results/train/pointwise/zero-run.json): every key it sets has the value the run used."""
    run = json.loads((REPO / "results/train/pointwise/zero-run.json").read_text(encoding="utf-8"))["config"]
    used = {**run["grpo"], **run["model"], **run["j1"]}
    cfg = _load(REPO / "results/train/configs/pos_j1_135m.yaml")
    used["report_to"] = used["report_to"] or "none"  # TRL stores report_to "none" as []
    differ = {k: (v, used.get(k)) for k, v in cfg.items() if used.get(k) != v}
    assert differ == {}


def test_cpu_thinking_sft_feeds_its_grpo():
    """The CPU thinking recipe: the SFT on thoughts writes the adapter GRPO continues, both read the same rows
    with the same wording, reference, prefill and LoRA, and only "<think>" is prefilled (the thought is trained).
    GRPO keeps a KL term to the start: without it the greedy thought looped past the budget."""
    (wcfg, sft, wmodel), (gcfg, grpo, gmodel) = (_warmup(CONFIGS / "warmup" / "pav_135m_think.yaml"),
                                                 _train(CONFIGS / "train" / "pav_135m_think.yaml"))
    assert gcfg.init_adapter == sft.output_dir and not wcfg.merge_lora and wcfg.verdicts == "rationale"
    assert wcfg.assistant_prefill == "<think>" and gcfg.collapse_guard == 0.9 and wcfg.max_minutes is None
    assert grpo.beta > 0
    for key in ("formulation", "template", "assistant_prefill", "max_prompt_tokens", "lora_last_layers", "train_file",
                "judge_inputs"):
        assert getattr(wcfg, key) == getattr(gcfg, key), key
    for key in ("model_name_or_path", "lora_r", "lora_alpha", "lora_target_modules", "use_peft"):
        assert getattr(wmodel, key) == getattr(gmodel, key), key
