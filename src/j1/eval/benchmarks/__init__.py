"""Benchmark registry: ``--benchmark NAME`` -> loader. Each module reads its benchmark's published schema and
registers itself (``j1.eval.benchmarks.base.register``); importing this package imports them all.

Each loader may import formats, pairs, schema, data's pair reader and eval's items, metrics and RewardBench 2
rules; ``j1.eval`` imports the registry.
"""

from __future__ import annotations

# Imported for their registration, in the order j1 eval --help lists them.
# isort: off
from j1.eval.benchmarks import (  # noqa: F401
    judgebench,
    rmbench,
    rewardbench,
    ppe,
    followbencheval,
    llmbar,
    mtbench_human,
    pandalm,
    autoj,
    hh_rlhf,
    generic,
    rewardbench2,
)
# isort: on
from j1.eval.benchmarks.base import BENCHMARKS, Benchmark, load_items


def get_benchmark(name: str) -> Benchmark:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark {name!r}; choose one of {sorted(BENCHMARKS)}") from None


def benchmark_choices() -> str:
    """The registered names as ``--benchmark``'s help lists them.

    >>> benchmark_choices().endswith("hh_rlhf, generic or rewardbench2.")
    True
    """
    names = list(BENCHMARKS)
    return f"{', '.join(names[:-1])} or {names[-1]}."


__all__ = ["BENCHMARKS", "Benchmark", "benchmark_choices", "get_benchmark", "load_items"]
