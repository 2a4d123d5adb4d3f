"""PPE (lmarena-ai PPE-* on the Hub), both kinds of rows:

- preference (PPE-Human-Preference-V1, split "test"): ``prompt``, ``response_1``, ``response_2``,
  ``winner`` ("model_a", "model_b", "tie", "tie (bothbad)"), ``question_id``. Ties are dropped by
  default (PPE's preference accuracy is over decided votes). Category "preference".
- correctness (PPE-{MMLU-Pro,MATH,GPQA,IFEval,MBPP-Plus}-Best-of-K): ``prompt``, ``response_1..K``,
  ``scores`` (per-response correctness), ``sampled_conflict_pairs`` (0-based index pairs, one right
  and one wrong). Each conflict pair is one item; the lower index is shown first in order AB.
  Category: the set named in the data's name (mmlu-pro, math, gpqa, ifeval, mbpp-plus) or "correctness".
  An item carries the row's gold answer as its reference (``GOLD_FIELDS``: MMLU-Pro's and MATH's
  ``answer``, GPQA's ``correct_choice``; IFEval and MBPP-Plus rows have none). PPE's own evaluation shows
  the reward model no gold answer, so it is sent only with ``--use_reference``.
"""

from __future__ import annotations

from j1.eval.benchmarks.base import Context, register, str_field
from j1.eval.items import Item
from j1.schema import RowError, require

WINNERS = {"model_a": "A", "model_b": "B", "tie": "tie", "tie (bothbad)": "tie"}
SETS = (("mmlu-pro", "mmlu-pro"), ("mmlu_pro", "mmlu-pro"), ("gpqa", "gpqa"), ("ifeval", "ifeval"),
        ("mbpp", "mbpp-plus"), ("math", "math"))
# Where a correctness row keeps its gold answer, by the set's own schema (the first present is read).
GOLD_FIELDS = ("answer", "correct_choice")


def gold_answer(row, where: str) -> str | None:
    """A correctness row's gold answer (``GOLD_FIELDS``), as text; None when it has none.

    >>> gold_answer({"answer": "C"}, "f:1"), gold_answer({"correct_choice": 2}, "f:1"), gold_answer({}, "f:1")
    ('C', '2', None)
    """
    for key in GOLD_FIELDS:
        value = row.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise RowError(f"{where}: field {key!r} (the gold answer) must be a string or a number, "
                           f"got {type(value).__name__}")
        return str(value)
    return None


def correctness_set(source: str) -> str:
    """The PPE correctness set a source file or hub name belongs to.

    >>> correctness_set("lmarena-ai/PPE-MMLU-Pro-Best-of-K"), correctness_set("x.jsonl")
    ('mmlu-pro', 'correctness')
    """
    name = source.lower()
    return next((cat for key, cat in SETS if key in name), "correctness")


@register("ppe", default_ties="drop", hf_split="test")
def parse_row(row, where: str, ctx: Context) -> list[Item]:
    prompt = str_field(row, "prompt", where)
    qid = row.get("question_id", where.rsplit(":", 1)[-1])
    if "winner" in row:
        winner = str_field(row, "winner", where)
        if winner not in WINNERS:
            raise RowError(f"{where}: field 'winner' is {winner!r}; expected one of {sorted(WINNERS)}")
        return [Item(id=str(qid), category="preference", prompt=prompt,
                     responses={"A": str_field(row, "response_1", where), "B": str_field(row, "response_2", where)},
                     pairs=[("A", "B", WINNERS[winner])])]
    if "sampled_conflict_pairs" not in row:
        raise RowError(f"{where}: neither 'winner' (preference row) nor 'sampled_conflict_pairs' "
                       "(correctness row): not a PPE row")
    scores = require(row, "scores", list, where)
    cat = correctness_set(ctx.source)
    gold = gold_answer(row, where)
    items = []
    for pair in require(row, "sampled_conflict_pairs", list, where):
        if not (isinstance(pair, list | tuple) and len(pair) == 2 and all(isinstance(x, int) for x in pair)):
            raise RowError(f"{where}: field 'sampled_conflict_pairs' holds {pair!r}; expected [i, j] indices")
        i, j = sorted(pair)
        if j >= len(scores) or bool(scores[i]) == bool(scores[j]):
            raise RowError(f"{where}: field 'sampled_conflict_pairs' pair {pair} is not one right and one "
                           f"wrong response in 'scores'")
        items.append(Item(
            id=f"{qid}:{i}-{j}", category=cat, prompt=prompt,
            responses={"A": str_field(row, f"response_{i + 1}", where), "B": str_field(row, f"response_{j + 1}", where)},
            pairs=[("A", "B", "A" if scores[i] else "B")],
            reference=gold,
        ))
    return items

