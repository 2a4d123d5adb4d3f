"""The generic pairwise form, read for ``--benchmark generic`` and ``followbencheval``: ``prompt``, ``chosen``,
``rejected`` (optional ``id``, ``category`` or ``kind``), in every form ``j1.data.pairs_io`` reads (plain, TRL's
preference form with strings or chat messages, j1's pair rows; an absent id is a hash of the content), and
``j1 synth mix`` rows. It registers no benchmark: each benchmark that reads this form registers it.
"""


from __future__ import annotations

from j1.data.pairs_io import pair_from_row
from j1.eval.benchmarks.base import Context
from j1.eval.items import Item
from j1.pairs import Order
from j1.schema import TrainRow


def parse_row(row, where: str, ctx: Context) -> list[Item]:
    if "order" in row and "pair_id" in row:
        return mix_row(row, where)
    pair = pair_from_row(row, where)
    cat = row.get("category") or row.get("kind") or (f"level {row['level']}" if row.get("level") is not None else "all")
    return [Item(
        id=pair.id,
        category=str(cat),
        prompt=pair.prompt,
        responses={"A": pair.chosen, "B": pair.rejected},
        pairs=[("A", "B", "A")],
        criteria=pair.criteria,
        reference=pair.reference,
    )]



def mix_row(row, where: str) -> list[Item]:
    """A row of ``j1 synth mix`` (training input and its held-out part), validated by the mix's own
    reader: each pair is there in both orders, and the evaluator shows both orders itself, so only
    the AB row makes an item; ``label`` names the better of ``response_a``/``response_b``."""
    r = TrainRow.from_row(row, where)
    if r.order == Order.BA:
        return []
    chosen, rejected = (r.response_a, r.response_b) if r.label == "A" else (r.response_b, r.response_a)
    return [Item(id=r.pair_id, category=r.kind or "all", prompt=r.prompt,
                 responses={"A": chosen, "B": rejected}, pairs=[("A", "B", "A")], criteria=r.criteria,
                 reference=r.reference)]
