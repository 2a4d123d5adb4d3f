"""The J1 rewards as TRL reward functions: picklable callable classes with TRL's signature
``fn(completions, **kwargs) -> list[float | None]``.

TRL passes every dataset column as a keyword list (one value per completion); j1's training rows
carry ``pair_id``, ``order``, ``label`` and ``judge_format`` (see ``j1.train.data``). ``prompts`` is
read only for a prefill (a chat prompt ending in a partial assistant message, ``j1.chat``), which is
put before the completion; other keywords (``completion_ids``, ``trainer_state``, ...) are ignored. Each component is its own
function so TRL logs it as ``rewards/<name>/mean``; their weights go to ``GRPOConfig.reward_weights``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from j1.chat import prefill
from j1.rewards.core import CONSISTENCY_MODES, Rollout, format_reward, judge_rollout, score_rollouts
from j1.rewards.metrics import batch_metrics


def completion_text(completion: Any) -> str:
    """A completion as text: TRL gives plain strings, or message lists for conversational data.

    >>> completion_text([{"role": "assistant", "content": "hi"}]), completion_text("hi")
    ('hi', 'hi')
    """
    if isinstance(completion, str):
        return completion
    return "".join(m.get("content") or "" for m in completion if m.get("role", "assistant") == "assistant")


# The dataset columns a reward reads (``judge_format`` may be absent: the reward's default format).
ROLLOUT_COLUMNS = ("pair_id", "order", "label", "judge_format")


def rollouts_from_kwargs(completions: Sequence[Any], default_format: str, kwargs: dict) -> list[Rollout]:
    """Build Rollouts from TRL's reward kwargs; a missing column is named in the error."""
    for key in ROLLOUT_COLUMNS[:3]:
        if key not in kwargs:
            raise KeyError(f"reward needs the dataset column {key!r} (build the dataset with j1.train.data)")
    formats = kwargs.get("judge_format") or [default_format] * len(completions)
    # A prompt ending in a partial assistant message (j1.chat): the judge's output is that prefill
    # followed by the completion; plain-text prompts carry none.
    heads = [prefill(p) if isinstance(p, list) else "" for p in kwargs.get("prompts") or [None] * len(completions)]
    return [
        Rollout(str(pid), str(order), str(label), head + completion_text(c), str(fmt))
        for c, pid, order, label, fmt, head in zip(
            completions, kwargs["pair_id"], kwargs["order"], kwargs["label"], formats, heads, strict=True
        )
    ]


class _J1Reward:
    """Shared state of the reward components. Plain attributes only, so instances pickle."""

    def __init__(self, default_format: str = "pav", consistency: str = "expected"):
        if consistency not in CONSISTENCY_MODES:
            raise ValueError(f"consistency {consistency!r}: choose one of {CONSISTENCY_MODES}")
        self.default_format = default_format
        self.consistency = consistency


class CorrectnessReward(_J1Reward):
    """Correctness (pav/pavs: verdict; pas: score comparison; pos: ranking against the other slot).

    Also logs the batch metrics (accuracy per order, flip rate, invalid rate, ...) through TRL's
    ``log_metric`` when the trainer provides it, once per reward call.
    """

    __name__ = "correctness"

    def __call__(self, completions, **kwargs) -> list[float | None]:
        rollouts = rollouts_from_kwargs(completions, self.default_format, kwargs)
        judged = [judge_rollout(r) for r in rollouts]
        parts = score_rollouts(rollouts, consistency=self.consistency, judged=judged)
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and rollouts:
            for name, value in batch_metrics(rollouts, judged, parts).items():
                log_metric(f"j1/{name}", value)
        return [p.correctness for p in parts]


class ConsistencyReward(_J1Reward):
    """Position consistency (pairwise formats); None where the pair's other order is missing."""

    __name__ = "consistency"

    def __call__(self, completions, **kwargs) -> list[float | None]:
        rollouts = rollouts_from_kwargs(completions, self.default_format, kwargs)
        return [p.consistency for p in score_rollouts(rollouts, consistency=self.consistency)]


class FormatReward(_J1Reward):
    """1 for a parseable completion, else 0. Off by default (the J1 paper found it did not help)."""

    __name__ = "format"

    def __call__(self, completions, **kwargs) -> list[float | None]:
        rollouts = rollouts_from_kwargs(completions, self.default_format, kwargs)
        return format_reward(rollouts)


def make_reward_funcs(
    formulation: str,
    *,
    consistency: str = "expected",
    w_correct: float = 1.0,
    w_consistency: float | None = None,
    w_format: float = 0.0,
) -> tuple[list[_J1Reward], list[float]]:
    """The reward functions and their weights for a formulation (pav, pas, pavs, pos, multitask).

    ``w_consistency=None`` means 1 for pav/pavs and 0 for pas (whose J1 reward is the score
    comparison alone); pos has no consistency component. A zero-weight component is left out.

    >>> funcs, weights = make_reward_funcs("pav")
    >>> [f.__name__ for f in funcs], weights
    (['correctness', 'consistency'], [1.0, 1.0])
    """
    default_format = "pas" if formulation == "multitask" else formulation
    if w_consistency is None:
        w_consistency = 1.0 if formulation in ("pav", "pavs") else 0.0
    funcs: list[_J1Reward] = [CorrectnessReward(default_format, consistency)]
    weights = [float(w_correct)]
    if w_consistency and formulation != "pos":
        funcs.append(ConsistencyReward(default_format, consistency))
        weights.append(float(w_consistency))
    if w_format:
        funcs.append(FormatReward(default_format, consistency))
        weights.append(float(w_format))
    return funcs, weights
