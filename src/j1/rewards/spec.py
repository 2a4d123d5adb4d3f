"""Spec of ``j1 reward``: score judge rollouts offline with the J1 rewards."""

from __future__ import annotations

from dataclasses import dataclass, field

from j1.formats.spec import FORMAT_NAMES, check_format
from j1.rewards.core import CONSISTENCY_MODES, reward_format
from j1.train.options import check_choice as _check_choice


@dataclass
class RewardSpec:
    """``j1 reward``: score judge rollouts offline with the J1 rewards."""

    format: str = field(default="pav", metadata={"help": f"Judge format of the completions: {', '.join(FORMAT_NAMES)}."})
    consistency: str = field(
        default="expected",
        metadata={"help": "expected: correctness x mean correctness of the other order's rollouts; "
                  "index: rollout k of each order paired, 1 if both right (pos: compare with the mean "
                  "or the k-th score of the other response)."},
    )
    input: str | None = field(
        default=None,
        metadata={"help": 'Rollouts JSONL: {"pair_id", "order": "AB"|"BA" (pos: "A"|"B"), "label": "A"|"B", '
                  '"completion"} per line. label names the better response in the original A/B placement '
                  "(not the position it was shown in: in order BA, label A means the second shown)."},
    )
    output: str | None = field(default=None, metadata={"help": 'Output JSONL: the input rows plus "rewards".'})
    correctness_weight: float = field(default=1.0, metadata={"help": "Weight of correctness in total."})
    consistency_weight: float | None = field(
        default=None, metadata={"help": "Weight of consistency in total (default 1 for pav/pavs, 0 for pas)."}
    )

    def __post_init__(self) -> None:
        check_format(self.format)
        reward_format(self.format)  # a four-way pick has no pair to reward: refused in one line
        _check_choice("consistency", self.consistency, CONSISTENCY_MODES)
        if not self.input or not self.output:
            raise ValueError("j1 reward needs --input ROLLOUTS.jsonl and --output OUT.jsonl")
