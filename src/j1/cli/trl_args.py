"""Parsing the commands that pass TRL's own config keys through (``j1 train``, ``j1 warmup``).

TRL's GRPOConfig and SFTConfig bring some two hundred keys. ``--help`` shows the J1 section first and
then the TRL keys a j1 recipe sets, one line each; ``--help-all`` prints TRL's full list. A YAML or
flag that still uses an option replaced by a named choice fails with the replacement.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import fields

from j1.cli.common import CONFIG_HELP, DEBUG_HELP

# The TRL (GRPOConfig/SFTConfig) and ModelConfig keys a j1 recipe sets, with a one-line help.
COMMON_TRL = {
    "model_name_or_path": "The model to train: a folder, a Hugging Face id, or smollm2-135m (the default).",
    "output_dir": "Run folder: checkpoints, log.jsonl, run.json and the trained model.",
    "learning_rate": "Learning rate.",
    "lr_scheduler_type": "constant, constant_with_warmup, linear, cosine, ...",
    "warmup_steps": "Steps of learning-rate warm-up.",
    "max_steps": "Optimizer steps (overrides num_train_epochs when > 0).",
    "num_train_epochs": "Passes over the training rows.",
    "per_device_train_batch_size": "Rows per process and micro-batch (GRPO: pairs x 2 orders x G rollouts).",
    "gradient_accumulation_steps": "Micro-batches per optimizer step.",
    "num_generations": "GRPO: rollouts per judge prompt (G).",
    "max_completion_length": "GRPO: most tokens per rollout.",
    "temperature": "GRPO: sampling temperature of the rollouts.",
    "beta": "GRPO: KL coefficient to the starting model, or the starting adapter with --init_adapter (0 = no "
            "reference model).",
    "scale_rewards": "GRPO: group, batch or none (how advantages are scaled).",
    "use_vllm": "GRPO: generate with vLLM (GPU hosts; vllm_mode colocate or server).",
    "use_peft": "Train a LoRA adapter (lora_r, lora_alpha, lora_target_modules).",
    "lora_r": "LoRA rank.",
    "lora_alpha": "LoRA alpha.",
    "lora_target_modules": "LoRA target modules, e.g. all-linear.",
    "dtype": "Weights dtype: float32 (CPU), bfloat16 (GPU).",
    "gradient_checkpointing": "Recompute activations in the backward pass (false on CPU recipes).",
    "save_steps": "Checkpoint every N steps.",
    "logging_steps": "Log every N steps.",
    "resume_from_checkpoint": "A checkpoint folder, or latest.",
    "seed": "Seed of the run.",
    "bf16": "bfloat16 mixed precision (false on CPU).",
    "use_cpu": "Train on the CPU.",
    "report_to": "none, tensorboard, wandb, ...",
}


def short_help(parser: argparse.ArgumentParser, j1_class, *, prog: str, description: str) -> str:
    """The help of ``--help``: the J1 section (``j1_class`` fields but its ``ADVANCED`` ones), then ``COMMON_TRL``."""
    advanced = getattr(j1_class, "ADVANCED", frozenset())
    j1_names = [f.name for f in fields(j1_class) if f.name not in advanced]
    by_flag = {opt: a for a in parser._actions for opt in a.option_strings}
    short = argparse.ArgumentParser(
        prog=prog, usage=f"{prog} [--config FILE.yaml] [--KEY VALUE ...]", description=description, add_help=False,
        epilog=f"{prog} --help-all lists every TRL key; a YAML takes the same keys.",
    )
    groups = (("J1 options", j1_names, None), ("TRL options (common)", list(COMMON_TRL), COMMON_TRL))
    for title, names, helps in groups:
        group = short.add_argument_group(title)
        for name in names:
            action = by_flag.get(f"--{name}")
            if action is None:
                continue
            text = helps[name] if helps else action.help
            default = action.default
            if default not in (None, argparse.SUPPRESS, "") and helps is None:
                text = f"{text} (default: {default})"
            # TRL's parser takes a boolean as an optional value (nargs "?"): --use_peft, --use_peft false.
            metavar = "BOOL" if action.nargs == "?" else name.upper().split("_")[-1]
            group.add_argument(f"--{name}", metavar=metavar, help=text.replace("%", "%%"))
    group = short.add_argument_group("every command")
    group.add_argument("--config", metavar="FILE.yaml", help=CONFIG_HELP)
    group.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    group.add_argument("--help-all", action="store_true", help="Every option, TRL's included.")
    return short.format_help()


def parse_with_trl(classes: Sequence[type], argv: Sequence[str], *, prog: str, description: str):
    """Parse ``argv`` (and ``--config FILE.yaml``) into one object per class; the first class is the J1
    section. ``--help`` prints the short help, ``--help-all`` TRL's full one; both exit 0. A bad value,
    or an unreadable config file exits 2 with one line."""
    from j1.cli.common import exit_with, make_parser, yaml_errors

    argv = list(argv)
    parser = make_parser(classes, prog)
    if "--help-all" in argv:
        parser.print_help()
        sys.exit(0)
    if "-h" in argv or "--help" in argv:
        sys.stdout.write(short_help(parser, classes[0], prog=prog, description=description))
        sys.exit(0)
    import warnings

    # transformers' notices of renamed TrainingArguments keys (TRL still sets the old names) say nothing to a user.
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"transformers\.")
    try:
        return parser.parse_args_and_config(argv)
    except (ValueError, OSError, *yaml_errors()) as exc:
        message = first_problem(argv, exc)
        if "support bf16/gpu" in message:  # TRL's words, from a recipe left at bf16 on a machine without a GPU
            message = ("this machine has no GPU for bf16 training: add --use_cpu true --bf16 false (the CPU recipes "
                       "in configs/train/*_cpu.yaml set both)")
        exit_with(prog, message)


def first_problem(argv: Sequence[str], error: BaseException) -> str:
    """The line to show for a parse that failed with ``error``: a flag's own bad value (it names the flag) as it
    is; otherwise a missing or malformed input first (the real problem behind TRL's complaints), else ``error``."""
    from j1.cli.common import error_message, yaml_errors

    message = error_message(error)
    if message.startswith("--"):
        return message
    try:
        check_inputs(argv)
    except (ValueError, OSError, *yaml_errors()) as problem:
        return error_message(problem)
    return message


# Inputs a training run reads, checked before anything else: a typo in one is the real problem.
INPUT_KEYS = ("train_file", "model_name_or_path")


def flag_values(argv: Sequence[str], keys: Sequence[str]) -> dict[str, str]:
    """The values ``keys`` get from ``--config FILE.yaml`` and the flags (``--key v``, ``--key=v``, dashed too).

    >>> flag_values(["--train-file", "a.jsonl", "--model_name_or_path=m"], INPUT_KEYS)
    {'train_file': 'a.jsonl', 'model_name_or_path': 'm'}
    """
    from j1.cli.common import _pop_config, _read_yaml_mapping

    rest, path = _pop_config(list(argv))
    values = {k: str(v) for k, v in (_read_yaml_mapping(path) if path else {}).items() if k in keys and v is not None}
    for i, arg in enumerate(rest):
        name, eq, value = arg.partition("=")
        key = name.lstrip("-").replace("-", "_")
        if name.startswith("--") and key in keys:
            if eq:
                values[key] = value
            elif i + 1 < len(rest):
                values[key] = rest[i + 1]
    return values


def check_inputs(argv: Sequence[str]) -> None:
    """A missing or malformed training file, or a model path that does not exist, in one line naming the flag
    (``j1 train`` and ``j1 warmup`` check them before any model loads).

    Raises:
        FileNotFoundError: the train file is not there.
        ValueError: a malformed train file (``RowError``), or a model that looks like a path (not a hub id) and is
            not there.
    """
    from pathlib import Path

    values = flag_values(argv, INPUT_KEYS)
    train = values.get("train_file")
    if train and not Path(train).expanduser().exists():
        raise FileNotFoundError(2, "No such file or directory", train)
    if train:
        from j1.train.data import load_pairs

        load_pairs(train)  # a malformed row: RowError naming file:line and the field
    model = values.get("model_name_or_path")
    if model and (model.startswith(("/", ".", "~")) or model.count("/") > 1) and not Path(model).expanduser().exists():
        raise ValueError(f"--model_name_or_path {model}: no such folder (give a model folder, smollm2-135m or a "
                         "Hugging Face id)")
