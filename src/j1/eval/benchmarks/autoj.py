"""Auto-J pairwise test set (GAIR-NLP/auto-j data/test/testdata_pairwise.jsonl): ``prompt``,
``response 1``, ``response 2``, ``label`` (0 = response 1 better, 1 = response 2, 2 = tie), ``scenario``.
Ties are kept (Auto-J reports agreement with ties). Category: ``scenario``."""

from __future__ import annotations

from j1.eval.benchmarks.base import Context, int_label, register, str_field
from j1.eval.items import Item


@register("autoj")
def parse_row(row, where: str, ctx: Context) -> list[Item]:
    return [Item(
        id=where.rsplit(":", 1)[-1],
        category=str(row.get("scenario") or "autoj"),
        prompt=str_field(row, "prompt", where),
        responses={"A": str_field(row, "response 1", where), "B": str_field(row, "response 2", where)},
        pairs=[("A", "B", int_label(row, "label", where, {0: "A", 1: "B", 2: "tie"}))],
    )]

