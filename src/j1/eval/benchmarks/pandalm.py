"""PandaLM test set (WeOpenML/PandaLM data/testset-v1.json): ``instruction``, ``input``, ``response1``,
``response2``, ``annotator1..3`` ("0" tie, "1", "2"), ``motivation_app``, ``idx``.

The label is the majority of the three annotators; when all three differ it is a tie. Ties are kept
(a judge is right on them only by saying tie). Category: ``motivation_app``.
"""

from __future__ import annotations

from j1.eval.benchmarks.base import Context, int_label, register, str_field
from j1.eval.items import Item
from j1.pairs import plurality

VOTES = {0: "tie", 1: "A", 2: "B"}


def majority_label(votes: list[str]) -> str:
    """The label at least two of the three annotators gave, else ``tie``.

    >>> majority_label(["A", "A", "tie"]), majority_label(["A", "B", "tie"])
    ('A', 'tie')
    """
    return plurality(votes)  # of three votes: two agreeing win; all different share the top, a tie


@register("pandalm")
def parse_row(row, where: str, ctx: Context) -> list[Item]:
    votes = [int_label(row, f"annotator{k}", where, VOTES) for k in (1, 2, 3)]
    instruction = str_field(row, "instruction", where)
    extra = row.get("input") or ""
    return [Item(
        id=str(row.get("idx", where.rsplit(":", 1)[-1])),
        category=str(row.get("motivation_app") or "pandalm"),
        prompt=f"{instruction}\n\n{extra}" if extra else instruction,
        responses={"A": str_field(row, "response1", where), "B": str_field(row, "response2", where)},
        pairs=[("A", "B", majority_label(votes))],
        meta={"votes": votes},
    )]

