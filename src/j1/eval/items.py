"""What a benchmark item is once loaded, and the judge prompts ("slots") it needs.

An item is one unit of the benchmark (a pair; for RM-Bench one prompt with 3 chosen and 3 rejected
responses). It holds named responses and the pairs to compare, each ``(first, second, label)`` with
``label`` in terms of that pair: "A" = ``first`` is better, "B" = ``second`` is, "tie". ``first`` is
the response the benchmark stores first (response_A / output_1 / chosen), so order AB shows it first.

An item may carry what the judge reads besides the responses (``criteria``, ``reference``: a benchmark's
reference answer or constraint, a pair file's own); every prompt of the item shows them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from j1.formats import JudgeFormat, Messages
from j1.formats.base import INPUTS, Guidance
from j1.pairs import ORDERS, render_both

LABELS = ("A", "B", "tie")


@dataclass
class Item:
    id: str
    category: str
    prompt: str
    responses: dict[str, str]
    pairs: list[tuple[str, str, str]]
    meta: dict = field(default_factory=dict)
    source: str | None = None  # where it was read: ``file:line`` or ``id[split]:row`` (results.jsonl names it)
    criteria: str | None = None  # what to judge by (a constraint, a rubric's text)
    reference: str | None = None  # a gold answer to the prompt

    @property
    def guidance(self) -> Guidance:
        return Guidance(self.criteria, self.reference)

    def __post_init__(self) -> None:
        if not self.pairs:
            raise ValueError(f"item {self.id}: no pairs to judge")
        for first, second, label in self.pairs:
            if label not in LABELS:
                raise ValueError(f"item {self.id}: label {label!r} must be one of {LABELS}")
            for name in (first, second):
                if name not in self.responses:
                    raise ValueError(f"item {self.id}: pair names unknown response {name!r}")

    @property
    def has_tie(self) -> bool:
        return any(label == "tie" for _, _, label in self.pairs)


def pair_slot(pairs: list, index: int, order: str) -> str:
    """The slot name of pair ``index`` shown in ``order``: "AB"/"BA" for one-pair items, else
    ``"c0-r1:AB"``-style names.

    >>> pair_slot([("A", "B", "A")], 0, "BA"), pair_slot([("c0", "r0", "A"), ("c0", "r1", "A")], 1, "AB")
    ('BA', 'c0-r1:AB')
    """
    if len(pairs) == 1:
        return str(order)
    first, second, _ = pairs[index]
    return f"{first}-{second}:{order}"


def scored_responses(pairs: list) -> list[str]:
    """Pointwise: the responses to score, each once, in order of first appearance."""
    names: list[str] = []
    for first, second, _ in pairs:
        for name in (first, second):
            if name not in names:
                names.append(name)
    return names


def required_slots(pairs: list, pairwise: bool) -> list[str]:
    """Every slot an item needs judged: two orders per pair (pairwise) or one per response (pointwise)."""
    if pairwise:
        return [pair_slot(pairs, p, order) for p in range(len(pairs)) for order in ORDERS]
    return scored_responses(pairs)


def item_prompts(fmt: JudgeFormat, item: Item) -> list[tuple[str, Messages]]:
    """``[(slot, messages)]``: each pair in both orders (AB shows ``first`` first), or each response alone,
    with the item's criteria and reference."""
    guide = item.guidance
    if fmt.pairwise:
        return [(pair_slot(item.pairs, p, order), messages)
                for p, (first, second, _) in enumerate(item.pairs)
                for order, messages in render_both(fmt, item.prompt, item.responses[first], item.responses[second],
                                                   guide)]
    return [(name, fmt.render(item.prompt, item.responses[name], None, guide)) for name in scored_responses(item.pairs)]


def keep_inputs(items: list[Item], names: Iterable[str]) -> list[Item]:
    """The items with only the inputs named in ``names`` (``j1 eval --use_reference false``: none).

    >>> it = Item("i", "c", "q", {"A": "a", "B": "b"}, [("A", "B", "A")], reference="4")
    >>> keep_inputs([it], ())[0].reference is None, keep_inputs([it], ["reference"])[0].reference
    (True, '4')
    """
    names = set(names)
    return [replace(it, **{n: None for n in INPUTS if n not in names}) for it in items]


def input_counts(items: Iterable[Item]) -> dict[str, int]:
    """How many of ``items`` carry each input, for the inputs any carries, in ``INPUTS`` order (what a run
    records in run.json and warns about).

    >>> input_counts([Item("i", "c", "q", {"A": "a", "B": "b"}, [("A", "B", "A")], reference="4")])
    {'reference': 1}
    """
    given = [it.guidance.inputs for it in items]
    counts = {n: sum(n in g for g in given) for n in INPUTS}
    return {n: k for n, k in counts.items() if k}
