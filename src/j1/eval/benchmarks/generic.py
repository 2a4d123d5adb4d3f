"""The generic pairwise form: ``prompt``, ``chosen``, ``rejected`` (optional ``id``, ``category``).

It also reads FollowBenchEval: its pairwise version (205 pairs, used by EvalPlanner and J1) has no
public release we could find, so ``--benchmark followbencheval`` takes this generic form (category
from ``category``, else ``level``). FollowBench's own files (instructions and targets, no response
pairs) are not judge data and fail with the missing field named.
"""

from __future__ import annotations

from j1.eval.benchmarks.base import Benchmark, Context, str_field
from j1.eval.items import Item


def parse_row(row, where: str, ctx: Context) -> list[Item]:
    prompt = str_field(row, "prompt", where)
    chosen, rejected = str_field(row, "chosen", where), str_field(row, "rejected", where)
    cat = row.get("category") or (f"level {row['level']}" if row.get("level") is not None else "all")
    native = row.get("id")
    return [Item(
        id=str(native) if native is not None else where.rsplit(":", 1)[-1],
        category=str(cat),
        prompt=prompt,
        responses={"A": chosen, "B": rejected},
        pairs=[("A", "B", "A")],
    )]


BENCHMARK = Benchmark("generic", parse_row)
FOLLOWBENCHEVAL = Benchmark("followbencheval", parse_row)
