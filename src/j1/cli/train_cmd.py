"""``j1 train``: J1 GRPO training on TRL (GRPOConfig + ModelConfig keys pass through); the recipe is
``j1.train.recipe``."""

from __future__ import annotations

from collections.abc import Sequence

from j1.cli.common import setup_logging
from j1.cli.configs import TrainConfig
from j1.cli.trl_args import parse_with_trl

DESCRIPTION = ("J1 GRPO training of a judge on TRL: both orders of every pair in one batch, the J1 rewards, "
               "and the advantage and loss choices below.")


def parse_train(argv: Sequence[str], prog: str = "j1 train"):
    """(TrainConfig, GRPOConfig, ModelConfig) from ``--config FILE.yaml`` and flags."""
    from trl import GRPOConfig, ModelConfig

    return parse_with_trl([TrainConfig, GRPOConfig, ModelConfig], argv, prog=prog, description=DESCRIPTION)


def main(argv: Sequence[str]) -> int:
    j1cfg, grpo_args, model_args = parse_train(argv)
    setup_logging()
    from j1.train.recipe import run_train

    run_train(j1cfg, grpo_args, model_args)
    return 0
