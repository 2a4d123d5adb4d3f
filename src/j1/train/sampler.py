"""A GRPO sampler that keeps both prompts of a pair (and all their rollouts) together.

TRL's ``RepeatSampler`` shuffles single prompts, so the two orders of a pair land in different
generation batches, or on different processes, and the consistency reward (which needs both) cannot
be computed. This sampler shuffles whole *units* (two adjacent dataset rows: AB and BA, or the two
pointwise slots) and otherwise yields exactly RepeatSampler's layout: each index repeated
``mini_repeat_count`` (= num_generations) times, ``batch_size`` unique prompts per generation batch,
each batch repeated ``repeat_count`` times.

Why that is enough across processes: accelerate hands process p the p-th consecutive slice of
``per_device_batch_size x steps_per_generation`` indices of every global batch. When that slice holds
an even number of unique prompts (checked by ``check_pair_geometry``) and every unit starts at an
even position, a unit can never straddle two processes, so each reward call sees both prompts of
every pair it sees.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import Sampler


class PairRepeatSampler(Sampler[int]):
    """RepeatSampler's layout over shuffled units of ``unit`` adjacent rows.

    Args:
        num_rows: dataset length (a multiple of ``unit``).
        mini_repeat_count: repeats of each index in a row (num_generations).
        batch_size: unique prompts per generation batch (a multiple of ``unit``).
        repeat_count: repeats of each generation batch (num_iterations x steps_per_generation).
        shuffle: shuffle units (never the rows inside one).
        seed: seed of the shuffle.

    >>> list(PairRepeatSampler(6, mini_repeat_count=2, batch_size=2, shuffle=False))
    [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    >>> s = list(PairRepeatSampler(8, mini_repeat_count=1, batch_size=4, seed=3))
    >>> all(s[i] // 2 == s[i + 1] // 2 and s[i] % 2 == 0 for i in range(0, 8, 2))
    True
    """

    def __init__(
        self,
        num_rows: int,
        mini_repeat_count: int,
        batch_size: int = 2,
        repeat_count: int = 1,
        shuffle: bool = True,
        seed: int | None = None,
        unit: int = 2,
    ):
        if num_rows % unit:
            raise ValueError(f"dataset has {num_rows} rows, not a multiple of the unit {unit} (rows come in pairs)")
        if batch_size % unit:
            raise ValueError(
                f"{batch_size} unique prompts per generation batch would split a pair; use a multiple of {unit}"
            )
        self.num_rows = num_rows
        self.mini_repeat_count = mini_repeat_count
        self.batch_size = batch_size
        self.repeat_count = repeat_count
        self.shuffle = shuffle
        self.unit = unit
        self.generator = torch.Generator()
        if seed is not None:
            self.generator.manual_seed(seed)

    def __iter__(self) -> Iterator[int]:
        n_units = self.num_rows // self.unit
        units = torch.randperm(n_units, generator=self.generator).tolist() if self.shuffle else range(n_units)
        rows = [u * self.unit + k for u in units for k in range(self.unit)]
        for start in range(0, len(rows) - self.batch_size + 1, self.batch_size):
            chunk = rows[start : start + self.batch_size]
            for _ in range(self.repeat_count):
                for index in chunk:
                    for _ in range(self.mini_repeat_count):
                        yield index

    def __len__(self) -> int:
        return (self.num_rows // self.batch_size) * self.batch_size * self.mini_repeat_count * self.repeat_count


def check_pair_geometry(per_device_train_batch_size: int, steps_per_generation: int, num_generations: int,
                        unit: int = 2) -> None:
    """Raise ValueError unless each process's generation batch holds whole units.

    >>> check_pair_geometry(8, 1, 4)          # 8 rows = 2 prompts x 4 rollouts: one pair
    >>> check_pair_geometry(4, 1, 4)
    Traceback (most recent call last):
    ...
    ValueError: per_device_train_batch_size x steps_per_generation = 4 rows = 1 prompts x 4 rollouts per process: the prompts must come in whole pairs (a multiple of 2); e.g. set per_device_train_batch_size to 8
    """
    rows = per_device_train_batch_size * steps_per_generation
    prompts, rest = divmod(rows, num_generations)
    if rest or prompts % unit:
        fix = unit * num_generations
        raise ValueError(
            f"per_device_train_batch_size x steps_per_generation = {rows} rows = {rows / num_generations:g} prompts x "
            f"{num_generations} rollouts per process: the prompts must come in whole pairs (a multiple of {unit}); "
            f"e.g. set per_device_train_batch_size to {fix}"
        )
