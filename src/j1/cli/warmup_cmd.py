"""``j1 warmup``: SFT before J1 GRPO on TRL's SFTTrainer, label-free (the format) or on gold verdicts
(SFTConfig + ModelConfig keys pass through); the recipe is ``j1.train.warmup.run_warmup``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from j1.cli.common import check_hub_inputs, removed_on_error, setup_logging
from j1.cli.trl_args import check_inputs, parse_with_trl
from j1.train.spec import WarmupSpec

DESCRIPTION = ("SFT before J1 GRPO: label-free, to teach a model the judge output format (random verdicts, "
               "short thoughts), or --verdicts gold, to start it on the task; with the valid-output rate and "
               "accuracy before and after.")


def parse_warmup(argv: Sequence[str], prog: str = "j1 warmup"):
    """(WarmupSpec, SFTConfig, ModelConfig) from ``--config FILE.yaml`` and flags."""
    from trl import ModelConfig, SFTConfig

    return parse_with_trl([WarmupSpec, SFTConfig, ModelConfig], argv, prog=prog, description=DESCRIPTION)


def main(argv: Sequence[str]) -> int:
    cfg, sft_args, model_args = parse_warmup(argv)
    check_inputs(argv)  # the train file and a model folder, before anything loads (ValueError/OSError: one line)
    check_hub_inputs(model_args)  # an uncached hub id, offline: one line now, not after a minute of retries
    setup_logging()
    from j1.train.stopping import TrainingInterrupted
    from j1.train.warmup import run_warmup

    try:
        with removed_on_error(sft_args.output_dir):  # a failed start leaves no empty run folder
            run_warmup(cfg, sft_args, model_args)
    except TrainingInterrupted as exc:
        sys.stderr.write(f"j1 warmup: {exc}, {exc.advice}\n")
        return 128 + exc.signum
    return 0

