"""LLMBar (princeton-nlp/LLMBar): ``input``, ``output_1``, ``output_2``, ``label`` (1 or 2 = the better
output). Category: ``subset`` when present (the dev slices add it: Natural, Adversarial/*, or MT-Bench,
FairEval, LLMEval^2 for the processed human-labelled sets), else "llmbar"."""

from __future__ import annotations

from j1.eval.benchmarks.base import Context, int_label, register, str_field
from j1.eval.items import Item


@register("llmbar")
def parse_row(row, where: str, ctx: Context) -> list[Item]:
    return [Item(
        id=where.rsplit(":", 1)[-1],
        category=str(row.get("subset") or "llmbar"),
        prompt=str_field(row, "input", where),
        responses={"A": str_field(row, "output_1", where), "B": str_field(row, "output_2", where)},
        pairs=[("A", "B", int_label(row, "label", where, {1: "A", 2: "B"}))],
    )]

