"""MT-Bench human judgments (lmsys/mt_bench_human_judgments, split "human"): ``question_id``,
``model_a``, ``model_b``, ``winner`` ("model_a", "model_b", "tie"), ``judge``, ``turn`` (1 or 2),
``conversation_a``/``conversation_b`` (lists of ``{"role", "content"}``).

Turn 1: the prompt is the first user message, the responses the first assistant replies. Turn 2:
the prompt lists both user turns, and each response shows that model's two replies (the second
turn's context differs per model, so it travels with its response). Ties are dropped by default,
as MT-Bench's agreement "without tie" is the usual number (``--ties keep`` keeps them).
Category: "turn 1" / "turn 2".
"""

from __future__ import annotations

from j1.eval.benchmarks.base import Benchmark, Context, str_field
from j1.eval.items import Item
from j1.schema import RowError, require

WINNERS = {"model_a": "A", "model_b": "B", "tie": "tie"}


def _turns(conv, key: str, where: str) -> tuple[list[str], list[str]]:
    if not isinstance(conv, list) or not all(isinstance(m, dict) and "role" in m and "content" in m for m in conv):
        raise RowError(f"{where}: field {key!r} must be a list of {{'role', 'content'}} messages")
    users = [m["content"] for m in conv if m["role"] == "user"]
    replies = [m["content"] for m in conv if m["role"] == "assistant"]
    return users, replies


def parse_row(row, where: str, ctx: Context) -> list[Item]:
    winner = str_field(row, "winner", where)
    if winner not in WINNERS:
        raise RowError(f"{where}: field 'winner' is {winner!r}; expected one of {sorted(WINNERS)}")
    turn = require(row, "turn", int, where)
    users, replies_a = _turns(require(row, "conversation_a", list, where), "conversation_a", where)
    _, replies_b = _turns(require(row, "conversation_b", list, where), "conversation_b", where)
    if turn not in (1, 2) or len(users) < turn or len(replies_a) < turn or len(replies_b) < turn:
        raise RowError(f"{where}: field 'turn' is {turn!r} but the conversations have too few turns")
    if turn == 1:
        prompt, a, b = users[0], replies_a[0], replies_b[0]
    else:
        prompt = f"[Turn 1]\n{users[0]}\n\n[Turn 2]\n{users[1]}"

        def show(r):
            return f"[Reply to turn 1]\n{r[0]}\n\n[Reply to turn 2]\n{r[1]}"

        a, b = show(replies_a), show(replies_b)
    return [Item(
        id=f"{row.get('question_id')}:{row.get('model_a')}:{row.get('model_b')}:{turn}:{row.get('judge')}",
        category=f"turn {turn}",
        prompt=prompt,
        responses={"A": a, "B": b},
        pairs=[("A", "B", WINNERS[winner])],
    )]


BENCHMARK = Benchmark("mtbench_human", parse_row, default_ties="drop", hf_split="human")
