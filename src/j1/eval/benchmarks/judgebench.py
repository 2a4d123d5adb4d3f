"""JudgeBench (ScalerLab/JudgeBench): ``question``, ``response_A``, ``response_B``, ``label`` "A>B"/"B>A",
``source``, ``response_model``, ``pair_id``.

Categories follow the JudgeBench paper: mmlu-pro-* -> knowledge, livebench-reasoning -> reasoning,
livebench-math -> math, livecodebench -> coding. The J1 paper reports the GPT-4o split (350 pairs
whose responses come from gpt-4o-2024-05-13): ``--split gpt-4o`` keeps rows whose ``response_model``
starts with "gpt-4o" (``--split claude`` the Claude split), so the official combined file or the
per-model file both work; from the Hub (``--data ScalerLab/JudgeBench``) the same flag reads the split
that holds the part (``gpt`` or ``claude``). Scoring uses JudgeBench's own rule (see ``metrics.judgebench_right``).
"""

from __future__ import annotations

from j1.eval.benchmarks.base import Context, register, str_field
from j1.eval.items import Item
from j1.schema import RowError

LABELS = {"A>B": "A", "B>A": "B"}
SPLITS = ("gpt-4o", "claude")


def category(source: str, where: str) -> str:
    """The category a JudgeBench ``source`` belongs to (knowledge, reasoning, math, coding); ``where`` names the row in errors.

    >>> category("mmlu-pro-law", "x"), category("livecodebench", "x")
    ('knowledge', 'coding')
    """
    if source.startswith("mmlu-pro"):
        return "knowledge"
    fixed = {"livebench-reasoning": "reasoning", "livebench-math": "math", "livecodebench": "coding"}
    if source in fixed:
        return fixed[source]
    raise RowError(f"{where}: field 'source' is {source!r}; expected mmlu-pro-*, livebench-reasoning, "
                   "livebench-math or livecodebench")


def parse_row(row, where: str, ctx: Context) -> list[Item]:
    model = str_field(row, "response_model", where)
    if ctx.split is not None and not model.startswith(ctx.split):
        return []
    label = str_field(row, "label", where)
    if label not in LABELS:
        raise RowError(f"{where}: field 'label' is {label!r}; expected 'A>B' or 'B>A'")
    return [Item(
        id=str(row.get("pair_id") or where.rsplit(":", 1)[-1]),
        category=category(str_field(row, "source", where), where),
        prompt=str_field(row, "question", where),
        responses={"A": str_field(row, "response_A", where), "B": str_field(row, "response_B", where)},
        pairs=[("A", "B", LABELS[label])],
        meta={"source": row["source"], "response_model": model},
    )]


def part_of(row) -> str:
    """The part a row belongs to: the split whose model prefix its ``response_model`` has, else the model.

    >>> part_of({"response_model": "gpt-4o-2024-05-13"}), part_of({"response_model": "llama"})
    ('gpt-4o', 'llama')
    """
    model = str(row.get("response_model"))
    return next((s for s in SPLITS if model.startswith(s)), model)


register("judgebench", scheme="judgebench", hf_split="gpt", splits=SPLITS, hub_splits={"gpt-4o": "gpt"},
         part_of=part_of)(parse_row)
