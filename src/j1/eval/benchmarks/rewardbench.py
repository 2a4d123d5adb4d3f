"""RewardBench (allenai/reward-bench, split "filtered"): ``prompt``, ``chosen``, ``rejected``, ``subset``, ``id``.

Items keep their subset as category; the section weighting lives in ``metrics`` (REWARDBENCH_*).
"""

from __future__ import annotations

from j1.eval.benchmarks.base import Context, register, str_field
from j1.eval.items import Item
from j1.eval.metrics import REWARDBENCH_COUNTS
from j1.schema import RowError


@register("rewardbench", scheme="rewardbench", hf_split="filtered")
def parse_row(row, where: str, ctx: Context) -> list[Item]:
    subset = str_field(row, "subset", where)
    if subset not in REWARDBENCH_COUNTS:
        raise RowError(f"{where}: field 'subset' is {subset!r}, not a RewardBench subset; "
                       f"expected one of {sorted(REWARDBENCH_COUNTS)}")
    native = row.get("id")
    return [Item(
        id=str(native) if native is not None else where.rsplit(":", 1)[-1],
        category=subset,
        prompt=str_field(row, "prompt", where),
        responses={"A": str_field(row, "chosen", where), "B": str_field(row, "rejected", where)},
        pairs=[("A", "B", "A")],
    )]

