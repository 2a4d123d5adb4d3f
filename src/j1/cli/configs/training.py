"""Re-export of ``j1 reward``, ``j1 train`` and ``j1 warmup`` under their former ``j1.cli.configs`` names; the specs live in their
domain packages (the CLI only parses flags and YAML into them)."""

from j1.rewards.core import CONSISTENCY_MODES, FORMULATIONS
from j1.rewards.spec import RewardSpec
from j1.train.spec import TrainSpec, WarmupSpec

RewardConfig = RewardSpec
TrainConfig = TrainSpec
WarmupConfig = WarmupSpec

__all__ = ["CONSISTENCY_MODES", "FORMULATIONS", "RewardConfig", "TrainConfig", "WarmupConfig"]
