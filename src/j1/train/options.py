"""The J1 training options: a few named choices, checked once into one frozen object the trainer takes.

- ``advantage_groups``: which rollouts share a GRPO baseline. ``prompt`` is TRL's own (the G
  rollouts of one judge prompt); ``pair`` the 2G rollouts of a pair's two orders; ``couple`` each
  rollout k of one order with rollout k of the other.
- ``loss_span``: which completion tokens the policy loss trains. ``all`` is TRL's own; ``answer``
  trains the answer span alone (the thought is still sampled and conditions it; the tokens after the
  closing tag leave the loss).
- ``invalid_advantage``: a rollout with no parseable verdict leaves its group's baseline and gets
  this advantage (pair and couple groups).
- ``position_balance``: the strength of a restoring force on the judge's position preference.

Why each exists, and what it measured, is in results/train/README.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from j1.rewards.core import FORMULATIONS

ADVANTAGE_GROUPS = ("prompt", "pair", "couple")
LOSS_SPANS = ("all", "answer")
# j1 warmup --verdicts: the verdict each SFT target names (j1.train.warmup): drawn at random, the gold label,
# or the gold label after the pair's own thought (its rationale by construction, j1 synth thoughts).
VERDICT_KINDS = ("random", "gold", "rationale")


def check_choice(name: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(f"--{name} {value!r}: choose one of {list(choices)}")


@dataclass(frozen=True)
class J1Options:
    """What the trainer does beyond TRL's GRPO; see the module docstring.

    >>> J1Options(advantage_groups="couple", invalid_advantage=-1.0).regroups
    True
    >>> J1Options(advantage_groups="prompt", invalid_advantage=-1.0)
    Traceback (most recent call last):
    ...
    ValueError: --invalid_advantage -1.0 needs --advantage_groups pair or couple (it changes their baselines)
    """

    formulation: str = "pav"
    advantage_groups: str = "pair"
    loss_span: str = "all"
    invalid_advantage: float | None = None
    position_balance: float = 0.0
    share_prompt_prefix: bool = True

    def __post_init__(self) -> None:
        check_choice("formulation", self.formulation, FORMULATIONS)
        check_choice("advantage_groups", self.advantage_groups, ADVANTAGE_GROUPS)
        check_choice("loss_span", self.loss_span, LOSS_SPANS)
        if self.invalid_advantage is not None and not self.regroups:
            raise ValueError(f"--invalid_advantage {self.invalid_advantage} needs --advantage_groups pair or couple "
                             "(it changes their baselines)")
        if self.position_balance < 0:
            raise ValueError(f"--position_balance {self.position_balance}: must be >= 0")
        if self.position_balance and self.formulation == "pos":
            raise ValueError("--position_balance: pos verdicts name no position; use a pairwise formulation")

    @property
    def regroups(self) -> bool:
        """Whether j1 replaces TRL's per-prompt advantages with pair or couple groups."""
        return self.advantage_groups != "prompt"

    @property
    def needs_parse(self) -> bool:
        """Whether the advantage step reads the rewards' parse of the batch."""
        return self.regroups or bool(self.position_balance)
