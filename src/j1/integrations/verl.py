"""J1 training on verl (the engine of the J1 paper): the reward function and the pair-keeping sampler.

Follows verl 0.6.1 (``VERL_VERSION``), whose PPO trainer calls a *batch* reward manager on the whole
training batch. verl 0.9.1's trainer scores one rollout at a time in its reward loop, where the other
order of a pair is never in view, so the consistency reward cannot be computed there (its legacy
``verl.workers.reward_manager.batch`` still makes the same call, which the slow test runs).

- ``compute_score(data_sources, solution_strs, ground_truths, extra_infos, **kwargs)``: the custom
  reward function of ``reward_model.reward_manager=batch`` (``custom_reward_function.path`` = this
  file, ``.name=compute_score``). It rewards exactly as ``j1 reward`` does (``j1.rewards.core``, the
  same defaults); each rollout's pair, order, label and format come from its ``extra_info``, as
  ``j1 export verl`` writes it.
- ``PairSampler``: ``data.sampler.class_path=pkg://j1.integrations.verl``,
  ``data.sampler.class_name=PairSampler`` (with ``data.dataloader_num_workers=0``, which verl asks of
  a custom sampler). It yields both prompts of a pair next to each other, so with an even
  ``data.train_batch_size`` every training batch, and so every reward call, holds both orders.

Pair-level advantages through verl's ``register_adv_est`` are not offered: verl 0.6.1 calls an
estimator with ``token_level_rewards``, ``response_mask``, ``config`` and ``index``, where ``index``
is a fresh uuid4 per prompt set in ``RayPPOTrainer.fit`` (not the data's pair id), and
``trainer.balance_batch`` reorders the rows. Nothing an estimator receives tells which two prompts
form a pair, so it can only reproduce verl's per-prompt GRPO (the paper's own setting).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch
from torch.utils.data import Sampler

from j1.rewards.core import (
    CONSISTENCY_MODES,
    Rollout,
    check_rollout,
    default_consistency_weight,
    score_rollouts,
)

log = logging.getLogger(__name__)

VERL_VERSION = "0.6.1"
# The keyword names verl 0.6.1's BatchRewardManager.verify passes (tests/integrations checks them).
BATCH_REWARD_KWARGS = ("data_sources", "solution_strs", "ground_truths", "extra_infos")
EXTRA_INFO_KEYS = ("pair_id", "order", "label", "format")


def rollouts_from_extra_infos(solution_strs: Sequence[str], extra_infos: Sequence[Mapping]) -> list[Rollout]:
    """One Rollout per completion, its pair, order, label and format read from ``extra_info``.

    Raises:
        ValueError: naming the rollout index and the missing or bad field.

    >>> rollouts_from_extra_infos(["[[A]]"], [{"pair_id": "p", "order": "BA", "label": "B", "format": "pav"}])
    [Rollout(pair_id='p', order='BA', label='B', completion='[[A]]', format='pav')]
    """
    if len(solution_strs) != len(extra_infos):
        raise ValueError(f"{len(solution_strs)} solution_strs but {len(extra_infos)} extra_infos")
    rollouts = []
    for i, (text, info) in enumerate(zip(solution_strs, extra_infos, strict=True)):
        missing = [k for k in EXTRA_INFO_KEYS if not isinstance(info, Mapping) or info.get(k) is None]
        if missing:
            raise ValueError(f"rollout {i}: extra_info has no {missing[0]!r} (export the data with `j1 export verl`)")
        rollout = Rollout(str(info["pair_id"]), str(info["order"]), str(info["label"]), str(text), str(info["format"]))
        try:
            check_rollout(rollout)
        except (KeyError, ValueError) as exc:
            raise ValueError(f"rollout {i}: {exc}") from None
        rollouts.append(rollout)
    return rollouts


def compute_score(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping],
    *,
    consistency: str = "expected",
    correctness_weight: float = 1.0,
    consistency_weight: float | None = None,
    **kwargs: Any,
) -> list[float]:
    """The J1 reward of every rollout of a verl batch: ``j1 reward``'s total, per rollout.

    Rollouts are grouped by format and scored with ``j1.rewards.score_rollouts``, as ``j1 reward``
    scores a file of one format; consistency pairs the rollouts of a pair's two orders wherever both
    are in the batch (None, adding nothing, where one is missing).

    Args:
        data_sources, ground_truths: verl's columns; unused (the label is in ``extra_info``).
        solution_strs: the decoded completions, ``(B*n,)``.
        extra_infos: per rollout ``{"pair_id", "order", "label", "format", ...}``.
        consistency, correctness_weight, consistency_weight: as ``j1 reward``'s flags, same defaults
            (``consistency_weight`` None = 1 for pav/pavs, 0 for pas). Set them with
            ``custom_reward_function.reward_kwargs``.
        kwargs: anything else verl passes; ignored.

    Returns:
        One float per rollout, in input order.

    >>> info = lambda o: {"pair_id": "p", "order": o, "label": "A", "format": "pav"}
    >>> right = "<think>x</think><answer>[[A]]</answer>"   # names A first-shown: right in AB only
    >>> compute_score(["j1"] * 2, [right, right], ["A", "B"], [info("AB"), info("BA")])
    [1.0, 0.0]
    """
    if consistency not in CONSISTENCY_MODES:
        raise ValueError(f"consistency {consistency!r}: choose one of {CONSISTENCY_MODES}")
    rollouts = rollouts_from_extra_infos(solution_strs, extra_infos)
    by_format: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rollouts):
        by_format[r.format].append(i)
    totals = [0.0] * len(rollouts)
    for fmt, idxs in by_format.items():
        w_cons = default_consistency_weight(fmt) if consistency_weight is None else consistency_weight
        parts = score_rollouts([rollouts[i] for i in idxs], consistency=consistency,
                               w_correct=correctness_weight, w_consistency=w_cons)
        for i, p in zip(idxs, parts, strict=True):
            totals[i] = p.total
    return totals


def _sampler_base() -> type:
    """verl asserts that a custom sampler subclasses its ``AbstractSampler``; without verl (tests, the
    main environment) a torch Sampler takes its place, with the same constructor."""
    try:
        from verl.experimental.dataset.sampler import AbstractSampler
    except ImportError:
        return Sampler
    return AbstractSampler


def _extra_infos(data_source: Any) -> list[Mapping]:
    """The ``extra_info`` of every row: from verl's RLHFDataset (its ``dataframe``, a datasets.Dataset,
    read without tokenising), a datasets.Dataset, or a sequence of row dicts."""
    frame = getattr(data_source, "dataframe", data_source)
    if hasattr(frame, "column_names"):
        return list(frame["extra_info"])
    return [row["extra_info"] for row in frame]


def _config_get(config: Any, key: str, default: Any) -> Any:
    value = config.get(key, default) if config is not None else default
    return default if value is None else value


class PairSampler(_sampler_base()):
    """Yields dataset indices so that both prompts of every pair (or both pointwise slots) are adjacent.

    Built by verl as ``PairSampler(data_source=dataset, data_config=config.data)``. Units are the rows
    that share ``(pair_id, format)`` in ``extra_info``; a unit that lost a row (verl's
    ``filter_overlong_prompts`` or ``max_samples``) is left out, with a warning, since its consistency
    could never be computed. Units are shuffled per epoch from ``data_config.seed`` + epoch when
    ``data_config.shuffle`` (verl's default), never split.

    Args:
        data_source: the dataset (``extra_info`` per row, as ``j1 export verl`` writes it).
        data_config: verl's ``data`` config: ``train_batch_size`` (must be even; rows per batch), ``shuffle``,
            ``seed``. A dict works too.

    >>> rows = [{"extra_info": {"pair_id": p, "format": "pav"}} for p in "aabbcc"]
    >>> order = list(PairSampler(rows, {"train_batch_size": 2, "shuffle": True, "seed": 0}))
    >>> sorted(order) == list(range(6)) and all(order[i] // 2 == order[i + 1] // 2 for i in (0, 2, 4))
    True
    """

    def __init__(self, data_source: Any, data_config: Any = None):
        batch = int(_config_get(data_config, "gen_batch_size", _config_get(data_config, "train_batch_size", 2)))
        if batch % 2:
            raise ValueError(f"data.train_batch_size {batch} would split a pair across batches; use an even number")
        self.shuffle = bool(_config_get(data_config, "shuffle", True))
        self.seed = int(_config_get(data_config, "seed", 0))
        self.epoch = 0
        units: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i, info in enumerate(_extra_infos(data_source)):
            units[(str(info["pair_id"]), str(info.get("format", "")))].append(i)
        self.units = [sorted(idx) for idx in units.values() if len(idx) == 2]
        dropped = len(units) - len(self.units)
        if dropped:
            log.warning("%d pairs have not exactly two rows in the dataset (a filtered prompt?): left out", dropped)
        if not self.units:
            raise ValueError("no pair has both of its rows in the dataset (extra_info pair_id/format)")

    def __iter__(self) -> Iterator[int]:
        order: Sequence[int] = range(len(self.units))
        if self.shuffle:
            generator = torch.Generator().manual_seed(self.seed + self.epoch)
            order = torch.randperm(len(self.units), generator=generator).tolist()
        self.epoch += 1
        for u in order:
            yield from self.units[u]

    def __len__(self) -> int:
        return 2 * len(self.units)
