"""J1 rewards: pure functions over rollouts (``core``), per-batch metrics (``metrics``) and their
TRL reward-function wrappers (``trl_funcs``).

It may import formats, pairs, the chat prefill (``j1.judging.chat``) and train's named options; train, serve
and the cli import it.
"""

from j1.rewards.core import (
    CONSISTENCY_MODES,
    FORMULATIONS,
    Judged,
    RewardParts,
    Rollout,
    check_rollout,
    format_reward,
    judge_rollout,
    reward_format,
    score_rollouts,
)
from j1.rewards.metrics import batch_metrics
from j1.rewards.trl_funcs import ConsistencyReward, CorrectnessReward, FormatReward, make_reward_funcs

__all__ = [
    "CONSISTENCY_MODES",
    "FORMULATIONS",
    "ConsistencyReward",
    "CorrectnessReward",
    "FormatReward",
    "Judged",
    "RewardParts",
    "Rollout",
    "batch_metrics",
    "check_rollout",
    "format_reward",
    "judge_rollout",
    "make_reward_funcs",
    "reward_format",
    "score_rollouts",
]
