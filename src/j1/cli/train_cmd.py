"""``j1 train``: J1 GRPO training on TRL (GRPOConfig + ModelConfig keys pass through); the recipe is
``j1.train.recipe``."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from j1.cli.common import check_hub_inputs, exit_with, removed_on_error, setup_logging
from j1.cli.trl_args import check_inputs, parse_with_trl
from j1.train.spec import TrainRun, TrainSpec

DESCRIPTION = ("J1 GRPO training of a judge on TRL: both orders of every pair in one batch, the J1 rewards, "
               "and the advantage and loss choices below.")


def parse_train(argv: Sequence[str], prog: str = "j1 train") -> TrainRun:
    """(TrainSpec, GRPOConfig, ModelConfig) from ``--config FILE.yaml`` and flags."""
    from trl import GRPOConfig, ModelConfig

    return TrainRun(*parse_with_trl([TrainSpec, GRPOConfig, ModelConfig], argv, prog=prog, description=DESCRIPTION))


# TRL refuses bf16 on a machine without a GPU: a dry run parses the GPU recipe as if on the CPU.
DRY_RUN_CPU_FLAGS = ("--bf16", "false", "--use_cpu", "true")


def wants_dry_run(argv: Sequence[str]) -> bool:
    """Whether ``--dry_run`` (``--dry_run true``, ``--dry_run=true``) is among the flags."""
    argv = list(argv)
    for i, arg in enumerate(argv):
        if arg == "--dry_run":
            return i + 1 == len(argv) or argv[i + 1].startswith("--") or argv[i + 1].lower() in {"true", "1", "yes"}
        if arg.startswith("--dry_run="):
            return arg.split("=", 1)[1].lower() in {"true", "1", "yes"}
    return False


def main(argv: Sequence[str]) -> int:
    if wants_dry_run(argv):
        j1cfg, grpo_args, model_args = parse_train([*argv, *DRY_RUN_CPU_FLAGS])
        setup_logging()
        from j1.train.dry_run import dry_run, format_report

        recipe = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--config"), "")
        sys.stdout.write(format_report(dry_run(j1cfg, grpo_args, model_args), recipe))
        return 0
    j1cfg, grpo_args, model_args = parse_train(argv)
    check_inputs(argv)  # the train file and a model folder, before anything loads (ValueError/OSError: one line)
    check_hub_inputs(model_args)  # an uncached hub id, offline: one line now, not after a minute of retries
    from j1.train.spec import launcher_grace

    try:
        j1cfg.signal_grace_seconds = launcher_grace(j1cfg.signal_grace_seconds, os.environ)
    except ValueError as exc:
        exit_with("j1 train", str(exc))
    setup_logging()
    from j1.train.dry_run import check_launch_world_size

    launched = os.environ.get("WORLD_SIZE")  # set by accelerate launch / torchrun
    check_launch_world_size(j1cfg.world_size, int(launched) if launched else None)
    from j1.train.recipe import run_train
    from j1.train.stopping import TrainingInterrupted

    try:
        with removed_on_error(grpo_args.output_dir):  # a failed start leaves no empty run folder
            run_train(j1cfg, grpo_args, model_args)
    except TrainingInterrupted as exc:
        sys.stderr.write(f"j1 train: {exc}, {exc.advice}\n")
        return 128 + exc.signum
    return 0
