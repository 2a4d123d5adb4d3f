"""The J1 rewards as TRL reward functions: picklable callable classes with TRL's signature
``fn(completions, **kwargs) -> list[float | None]``.

TRL passes every dataset column as a keyword list (one value per completion); j1's training rows
carry ``pair_id``, ``order``, ``label`` and ``judge_format`` (see ``j1.train.data``). ``prompts`` is
read only for a prefill (a chat prompt ending in a partial assistant message, ``j1.judging.chat``), which is
put before the completion; other keywords (``completion_ids``, ``trainer_state``, ...) are ignored. Each component is its own
function so TRL logs it as ``rewards/<name>/mean``; their weights go to ``GRPOConfig.reward_weights``. The
components of one run share a ``BatchScorer``, so a batch is parsed once, and the trainer reads that
parse (``ScoredBatch``) for its advantages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from j1.judging.chat import prefill
from j1.rewards.core import (
    CONSISTENCY_MODES,
    Judged,
    RewardParts,
    Rollout,
    default_consistency_weight,
    format_reward,
    judge_rollout,
    reward_format,
    score_rollouts,
    shown_positions,
)
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
    # A prompt ending in a partial assistant message (j1.judging.chat): the judge's output is that prefill
    # followed by the completion; plain-text prompts carry none.
    heads = [prefill(p) if isinstance(p, list) else "" for p in kwargs.get("prompts") or [None] * len(completions)]
    return [
        Rollout(str(pid), str(order), str(label), head + completion_text(c), str(fmt))
        for c, pid, order, label, fmt, head in zip(
            completions, kwargs["pair_id"], kwargs["order"], kwargs["label"], formats, heads, strict=True
        )
    ]


@dataclass(frozen=True)
class ScoredBatch:
    """One reward call's batch, parsed once: what every reward component returns and what the
    trainer's advantage step reads (``J1GRPOTrainer``)."""

    rollouts: list[Rollout]
    judged: list[Judged]
    parts: list[RewardParts]

    def component(self, name: str) -> list[float | None]:
        """The values of reward component ``name`` (correctness, consistency or format), per rollout."""
        if name == "correctness":
            return [p.correctness for p in self.parts]
        if name == "consistency":
            return [p.consistency for p in self.parts]
        if name == "format":
            return format_reward(self.rollouts, self.judged)
        raise ValueError(f"unknown reward component {name!r}")

    def positions(self) -> list[float]:
        """The shown position each verdict names (+1 first, -1 second, 0 none); ``shown_positions``."""
        return shown_positions(self.rollouts, self.judged)


_KEYED = ("prompts", *ROLLOUT_COLUMNS)


class BatchScorer:
    """Parses and rewards a batch once for all the reward components that share it.

    TRL calls each reward function in turn with the same lists; the first call parses and scores,
    the others reuse that (the cache key is the identity of those lists, held until the next
    batch). ``last`` is the batch most recently scored. Plain attributes, so it pickles (the cache
    is dropped).
    """

    def __init__(self, default_format: str = "pav", consistency: str = "expected"):
        if consistency not in CONSISTENCY_MODES:
            raise ValueError(f"consistency {consistency!r}: choose one of {CONSISTENCY_MODES}")
        reward_format(default_format)  # refused here, before training starts, not at the first batch
        self.default_format = default_format
        self.consistency = consistency
        self._key: tuple | None = None
        self.last: ScoredBatch | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_key": None, "last": None}

    def score(self, completions: Sequence[Any], kwargs: dict) -> tuple[ScoredBatch, bool]:
        """``(batch, fresh)``: the scored batch, and whether this call parsed it."""
        lists = (completions, *(kwargs.get(k) for k in _KEYED))
        if self._key is not None and all(a is b for a, b in zip(self._key, lists, strict=True)):
            return self.last, False
        rollouts = rollouts_from_kwargs(completions, self.default_format, kwargs)
        judged = [judge_rollout(r) for r in rollouts]
        parts = score_rollouts(rollouts, consistency=self.consistency, judged=judged)
        self._key, self.last = lists, ScoredBatch(rollouts, judged, parts)
        return self.last, True


class _J1Reward:
    """A reward component over a (possibly shared) ``BatchScorer``."""

    __name__ = "j1"

    def __init__(self, default_format: str = "pav", consistency: str = "expected", scorer: BatchScorer | None = None):
        self.scorer = scorer if scorer is not None else BatchScorer(default_format, consistency)

    def __call__(self, completions, **kwargs) -> list[float | None]:
        batch, fresh = self.scorer.score(completions, kwargs)
        log_metric = kwargs.get("log_metric")
        if fresh and callable(log_metric) and batch.rollouts:
            # Once per batch, by whichever component parsed it.
            for name, value in batch_metrics(batch.rollouts, batch.judged, batch.parts).items():
                log_metric(f"j1/{name}", value)
        return batch.component(self.__name__)


class CorrectnessReward(_J1Reward):
    """Correctness (pav/pavs: verdict; pas: score comparison; pos: ranking against the other slot).

    Also logs the batch metrics (accuracy per order, flip rate, invalid rate, ...) through TRL's
    ``log_metric`` when the trainer provides it, once per batch.
    """

    __name__ = "correctness"


class ConsistencyReward(_J1Reward):
    """Position consistency (pairwise formats); None where the pair's other order is missing."""

    __name__ = "consistency"


class FormatReward(_J1Reward):
    """1 for a parseable completion, else 0. Off by default (the J1 paper found it did not help)."""

    __name__ = "format"


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
        w_consistency = default_consistency_weight(default_format)
    scorer = BatchScorer(default_format, consistency)  # one parse per batch for every component
    funcs: list[_J1Reward] = [CorrectnessReward(scorer=scorer)]
    weights = [float(w_correct)]
    if w_consistency and formulation != "pos":
        funcs.append(ConsistencyReward(scorer=scorer))
        weights.append(float(w_consistency))
    if w_format:
        funcs.append(FormatReward(scorer=scorer))
        weights.append(float(w_format))
    return funcs, weights
