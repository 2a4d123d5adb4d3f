"""MT-Bench human judgments (lmsys/mt_bench_human_judgments, split "human"): ``question_id``,
``model_a``, ``model_b``, ``winner`` ("model_a", "model_b", "tie"), ``judge``, ``turn`` (1 or 2),
``conversation_a``/``conversation_b`` (lists of ``{"role", "content"}``).

Turn 1: the prompt is the first user message, the responses the first assistant replies. Turn 2:
the prompt lists both user turns, and each response shows that model's two replies (the second
turn's context differs per model, so it travels with its response). Ties are dropped by default,
as MT-Bench's agreement "without tie" is the usual number (``--ties keep`` keeps them).
Category: "turn 1" / "turn 2"; ``meta.mt_category`` is the question's MT-Bench category.

Reference-guided, as MT-Bench's official judge is (FastChat's ``llm_judge``: its math, reasoning and
coding questions are graded against GPT-4's reference answers, both turns of them for a turn-2 judgment):
with ``--use_reference`` (on by default here) an item of those categories carries the reference, read from
``--references`` (FastChat's ``data/mt_bench/reference_answer/gpt-4.jsonl``, not part of the Hub rows); a
turn-2 reference shows both turns as the responses do. The category follows from the question id.
"""

from __future__ import annotations

from j1.eval.benchmarks.base import Context, register, str_field
from j1.eval.items import Item
from j1.schema import RowError, iter_jsonl, require

WINNERS = {"model_a": "A", "model_b": "B", "tie": "tie"}
# MT-Bench's 80 questions are ids 81 to 160, ten per category in this order (FastChat's question.jsonl).
FIRST_ID = 81
CATEGORIES = ("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities")
# The categories the official judge grades against a reference answer (FastChat llm_judge's NEED_REF_CATS).
REFERENCE_CATEGORIES = ("math", "reasoning", "coding")


def category(question_id: object) -> str | None:
    """The MT-Bench category of a question id; None for an id outside 81-160.

    >>> category(81), category(111), category(130), category(160), category(7)
    ('writing', 'math', 'coding', 'humanities', None)
    """
    if isinstance(question_id, bool) or not isinstance(question_id, int | str) or not str(question_id).isdigit():
        return None
    k = int(question_id) - FIRST_ID
    return CATEGORIES[k // 10] if 0 <= k < 10 * len(CATEGORIES) else None


def read_references(path: str) -> dict[int, list[str]]:
    """Reference answers by question id from a file in FastChat's model-answer form: JSON lines with
    ``question_id`` and ``choices[0].turns`` (one answer per turn).

    Raises:
        RowError: a malformed line, naming ``path:line`` and the field.
    """
    table: dict[int, list[str]] = {}
    for lineno, obj in iter_jsonl(path):
        where = f"{path}:{lineno}"
        qid = require(obj, "question_id", int, where)
        choices = require(obj, "choices", list, where)
        turns = choices[0].get("turns") if choices and isinstance(choices[0], dict) else None
        if not isinstance(turns, list) or not turns or not all(isinstance(t, str) for t in turns):
            raise RowError(f"{where}: field 'choices' must hold an object whose 'turns' is a list of strings")
        table[qid] = turns
    if not table:
        raise RowError(f"{path}: no reference answers")
    return table


def _reply(turns: list[str]) -> str:
    """Two turns' replies as a turn-2 item shows them."""
    return f"[Reply to turn 1]\n{turns[0]}\n\n[Reply to turn 2]\n{turns[1]}"


def reference(question_id: object, turn: int, references: dict | None, where: str) -> str | None:
    """The reference an official MT-Bench judge reads for this judgment: the reference answer of a math,
    reasoning or coding question (turn 2: both turns), None for the other categories or without references.

    Raises:
        RowError: the question needs a reference and ``references`` has none for it (as FastChat's check).

    >>> refs = {111: ["Area is 3", "5pi"]}
    >>> reference(111, 1, refs, "f:1"), reference(81, 1, refs, "f:1"), reference(111, 1, None, "f:1")
    ('Area is 3', None, None)
    >>> print(reference(111, 2, refs, "f:1"))
    [Reply to turn 1]
    Area is 3
    <BLANKLINE>
    [Reply to turn 2]
    5pi
    """
    if references is None or category(question_id) not in REFERENCE_CATEGORIES:
        return None
    turns = references.get(int(question_id))
    if turns is None or len(turns) < turn:
        raise RowError(f"{where}: question {question_id} ({category(question_id)}) is graded against a reference "
                       f"answer, and --references has none for turn {turn}")
    return turns[0] if turn == 1 else _reply(turns)


def _turns(conv, key: str, where: str) -> tuple[list[str], list[str]]:
    if not isinstance(conv, list) or not all(isinstance(m, dict) and "role" in m and "content" in m for m in conv):
        raise RowError(f"{where}: field {key!r} must be a list of {{'role', 'content'}} messages")
    users = [m["content"] for m in conv if m["role"] == "user"]
    replies = [m["content"] for m in conv if m["role"] == "assistant"]
    return users, replies


@register("mtbench_human", default_ties="drop", hf_split="human", use_reference=True,
          read_references=read_references)
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

        a, b = _reply(replies_a), _reply(replies_b)
    qid = row.get("question_id")
    return [Item(
        id=f"{qid}:{row.get('model_a')}:{row.get('model_b')}:{turn}:{row.get('judge')}",
        category=f"turn {turn}",
        prompt=prompt,
        responses={"A": a, "B": b},
        pairs=[("A", "B", WINNERS[winner])],
        meta={"mt_category": category(qid)} if category(qid) else {},
        reference=reference(qid, turn, ctx.references, where),
    )]

