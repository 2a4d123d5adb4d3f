"""Every YAML under configs/ parses with its command's config classes (a recursive glob, so no file
is skipped). The folder names the command; a new folder must be added to PARSERS."""

from __future__ import annotations

from pathlib import Path

import pytest

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
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


def _single(cls_name: str):
    def parse_one(path: Path, extra=()):
        from j1.cli import configs
        from j1.cli.common import parse

        return parse(getattr(configs, cls_name), ["--config", str(path), *extra], prog=path.name)

    return parse_one


def _synth(path: Path, extra=()):
    kind = path.stem.split("_")[0]  # math_*.yaml, chat_*.yaml, mix*.yaml
    cls = {"math": "SynthMathConfig", "chat": "SynthChatConfig", "mix": "MixConfig"}[kind]
    return _single(cls)(path, extra)


def _accelerate(path: Path, extra=()):
    from accelerate.commands.config.config_args import ClusterConfig

    cfg = ClusterConfig.from_yaml_file(str(path))
    assert cfg.num_processes >= 1
    return cfg


PARSERS = {"train": _train, "warmup": _warmup, "eval": _single("EvalConfig"), "synth": _synth,
           "accelerate": _accelerate}


def _gpu_file(path: Path) -> bool:
    return "gpu" in path.stem


def test_configs_are_all_found():
    # The recursive glob sees every folder; update the floor when configs are removed, never skip files.
    folders = {p.relative_to(CONFIGS).parts[0] for p in YAMLS}
    assert {"train", "warmup", "accelerate"} <= folders
    assert len([p for p in YAMLS if p.parent.name == "train"]) == 7  # 5 CPU formulations + 2 GPU recipes
    assert len([p for p in YAMLS if p.parent.name == "warmup"]) == 5
    assert len(YAMLS) == len(set(YAMLS)) >= 15


@pytest.mark.parametrize("path", YAMLS, ids=lambda p: str(p.relative_to(CONFIGS)))
def test_config_parses(path):
    folder = path.relative_to(CONFIGS).parts[0]
    assert folder in PARSERS, f"configs/{folder}/ has no parser in tests/test_configs.py::PARSERS"
    extra = GPU_ONLY["bf16"] if _gpu_file(path) else ()
    PARSERS[folder](path, extra)


@pytest.mark.gpu
@pytest.mark.parametrize("path", [p for p in YAMLS if _gpu_file(p) and p.parent.name == "train"],
                         ids=lambda p: p.name)
def test_gpu_recipe_parses_unchanged(path):
    j1cfg, grpo, _ = _train(path)
    assert grpo.bf16 and grpo.use_vllm and grpo.num_generations == 5 and grpo.learning_rate == 1e-6


def test_gpu_recipes_match_the_paper():
    from j1.cli.train_cmd import parse_train

    for name, beta in (("pav_llama31_8b_gpu.yaml", 0.01), ("pav_qwen3_32b_gpu.yaml", 0.0)):
        _, grpo, _ = parse_train(["--config", str(CONFIGS / "train" / name), *GPU_ONLY["bf16"]])
        assert (grpo.num_generations, grpo.temperature, grpo.learning_rate, grpo.beta) == (5, 1.0, 1e-6, beta)
        assert grpo.max_completion_length == 4096 and grpo.use_vllm
        # prompts per step: per-device rows x accumulation x GPUs / rollouts (8 GPUs; 16 for 32B)
        gpus = 8 if "8b" in name else 16
        assert grpo.per_device_train_batch_size * grpo.gradient_accumulation_steps * gpus // 5 == 512
