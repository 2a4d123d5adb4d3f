"""The J1 training options: a few named choices, checked once into one frozen object the trainer takes.

- ``advantage_groups``: which rollouts share a GRPO baseline. ``prompt`` is TRL's own (the G
  rollouts of one judge prompt); ``pair`` the 2G rollouts of a pair's two orders; ``couple`` each
  rollout k of one order with rollout k of the other.
- ``loss_span``: which completion tokens the policy loss trains. ``all`` is TRL's own; ``to_answer``
  stops at the answer's closing tag, as a stop string would; ``answer`` trains the answer span alone
  (the thought is still sampled and conditions it).
- ``invalid_advantage``: a rollout with no parseable verdict leaves its group's baseline and gets
  this advantage (pair and couple groups).
- ``position_balance``: the strength of a restoring force on the judge's position preference.
- ``stop_advantage``: the advantage -X of a token written after the answer in place of the stop
  (``to_answer`` and ``answer`` spans).

Why each exists, and what it measured, is in results/train/README.md.
"""

from __future__ import annotations

from dataclasses import dataclass

ADVANTAGE_GROUPS = ("prompt", "pair", "couple")
LOSS_SPANS = ("all", "to_answer", "answer")
CONSISTENCY_MODES = ("expected", "index")
FORMULATIONS = ("pav", "pas", "pavs", "pos", "multitask")


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
    stop_advantage: float | None = None
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
        if self.stop_advantage is not None:
            if self.stop_advantage <= 0:
                raise ValueError(f"--stop_advantage {self.stop_advantage}: must be > 0 (the advantage is -X)")
            if self.loss_span == "all":
                raise ValueError("--stop_advantage needs --loss_span to_answer or answer (a closing tag to stop at)")

    @property
    def regroups(self) -> bool:
        """Whether j1 replaces TRL's per-prompt advantages with pair or couple groups."""
        return self.advantage_groups != "prompt"

    @property
    def needs_parse(self) -> bool:
        """Whether the advantage step reads the rewards' parse of the batch."""
        return self.regroups or bool(self.position_balance)


# Options that named choices replaced: a config or flag that still uses one gets this fix.
RETIRED = {
    "pair_advantages": "use --advantage_groups pair (true) or prompt (false)",
    "couple_advantages": "use --advantage_groups couple",
    "stop_at_answer": "use --loss_span to_answer",
    "answer_only_loss": "use --loss_span answer",
}


def check_retired(argv: list[str], yaml_keys: set[str] = frozenset()) -> None:
    """Raise ValueError naming the replacement when ``argv`` or a YAML uses a retired option.

    >>> check_retired(["--couple_advantages", "true"])
    Traceback (most recent call last):
    ...
    ValueError: --couple_advantages was replaced: use --advantage_groups couple
    """
    used = {a[2:].split("=", 1)[0].replace("-", "_") for a in argv if a.startswith("--")} | set(yaml_keys)
    for name in sorted(used & set(RETIRED)):
        raise ValueError(f"--{name} was replaced: {RETIRED[name]}")
