"""RM-Bench (THU-KEG/RM-Bench): ``prompt``, ``chosen`` [3], ``rejected`` [3] (styles concise,
detailed, detailed-markdown), ``domain``, ``id``.

One item per prompt with 9 pairs (chosen_i, rejected_j), listed row-major (i, then j) so the
metrics can read the 3x3 matrix back. Domains safety-refuse and safety-response are one domain
"safety", as RM-Bench reports it.
"""

from __future__ import annotations

from j1.eval.benchmarks.base import Context, register, str_field
from j1.eval.items import Item
from j1.schema import RowError, require

STYLES = ("concise", "detailed", "markdown")


def domain(value: str) -> str:
    """The domain a row's ``domain`` field reports in: every ``safety-*`` subset counts as safety.

    >>> domain("safety-refuse"), domain("chat")
    ('safety', 'chat')
    """
    return "safety" if value.startswith("safety") else value


def _three(row, key: str, where: str) -> list[str]:
    values = require(row, key, list, where)
    if len(values) != 3 or not all(isinstance(v, str) for v in values):
        raise RowError(f"{where}: field {key!r} must be a list of 3 strings ({', '.join(STYLES)}), "
                       f"got {len(values)} items")
    return values


@register("rmbench", scheme="rmbench")
def parse_row(row, where: str, ctx: Context) -> list[Item]:
    chosen, rejected = _three(row, "chosen", where), _three(row, "rejected", where)
    dom = domain(str_field(row, "domain", where))
    responses = {f"c{i}": t for i, t in enumerate(chosen)} | {f"r{j}": t for j, t in enumerate(rejected)}
    native = row.get("id")
    return [Item(
        id=f"{row['domain']}:{native}" if native is not None else where.rsplit(":", 1)[-1],
        category=dom,
        prompt=str_field(row, "prompt", where),
        responses=responses,
        pairs=[(f"c{i}", f"r{j}", "A") for i in range(3) for j in range(3)],
        meta={"domain": row["domain"], "subset": row.get("subset")},
    )]

