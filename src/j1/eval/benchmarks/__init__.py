"""Benchmark registry: ``--benchmark NAME`` -> loader. Each module reads its benchmark's published schema."""

from __future__ import annotations

from j1.eval.benchmarks import (
    autoj,
    generic,
    hh_rlhf,
    judgebench,
    llmbar,
    mtbench_human,
    pandalm,
    ppe,
    rewardbench,
    rewardbench2,
    rmbench,
)
from j1.eval.benchmarks.base import Benchmark, load_items

BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in (
        judgebench.BENCHMARK, rmbench.BENCHMARK, rewardbench.BENCHMARK, ppe.BENCHMARK, generic.FOLLOWBENCHEVAL,
        llmbar.BENCHMARK, mtbench_human.BENCHMARK, pandalm.BENCHMARK, autoj.BENCHMARK, hh_rlhf.BENCHMARK,
        generic.BENCHMARK, rewardbench2.BENCHMARK,
    )
}


def get_benchmark(name: str) -> Benchmark:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark {name!r}; choose one of {sorted(BENCHMARKS)}") from None


__all__ = ["BENCHMARKS", "Benchmark", "get_benchmark", "load_items"]
