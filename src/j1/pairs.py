"""A pair judged in both orders: the one home of the order type, rendering both orders, mapping a parsed
output back to the original labels, and comparing two scores. The verdict vocabulary (``Verdict``,
``Parsed``) lives in the leaf ``j1.formats.verdict`` and is handed on here.

Naming. A pair holds two responses in a fixed *original* placement, ``A`` and ``B``. A pairwise
prompt shows them in an *order*: ``AB`` shows A first, ``BA`` shows B first. Parsers report what
the judge said in *shown* positions (``A`` = the first shown); ``orient`` maps that back to the
original labels, so everything outside the parsers speaks of the original responses. The pointwise
format judges each response alone: its *slot* is ``A`` or ``B``, the response it scored. judge,
eval, rewards and train all build and read both orders through this module.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from j1.formats.verdict import Parsed, Verdict

if TYPE_CHECKING:  # formats import this module; only the type is needed here
    from j1.formats.base import Guidance, JudgeFormat, Messages


class Order(enum.StrEnum):
    """How a pairwise prompt shows the pair: ``AB`` (A first) or ``BA`` (B first)."""

    AB = "AB"
    BA = "BA"


ORDERS = (Order.AB, Order.BA)
SLOTS = ("A", "B")  # pointwise: which response of the pair is scored alone
LABELS = ("A", "B")
_OTHER = {"AB": "BA", "BA": "AB", "A": "B", "B": "A"}
_SWAP = {Verdict.A: Verdict.B, Verdict.B: Verdict.A}


def order(value: str) -> Order:
    """``value`` as an Order; ValueError naming it otherwise.

    >>> order("BA")
    <Order.BA: 'BA'>
    """
    try:
        return Order(value)
    except ValueError:
        raise ValueError(f"order must be 'AB' or 'BA', got {value!r}") from None


def other(order_or_slot: str) -> str:
    """The partner of an order (AB <-> BA) or of a pointwise slot (A <-> B).

    >>> other("AB"), other("B")
    ('BA', 'A')
    """
    try:
        return _OTHER[order_or_slot]
    except KeyError:
        raise ValueError(f"{order_or_slot!r} is neither an order (AB, BA) nor a slot (A, B)") from None


def swap(verdict: Verdict | str) -> Verdict:
    """The same verdict seen from the other order (A <-> B; tie and invalid stay).

    >>> swap("A"), swap(Verdict.TIE)
    (<Verdict.B: 'B'>, <Verdict.TIE: 'tie'>)
    """
    verdict = Verdict(verdict)
    return _SWAP.get(verdict, verdict)


def shown(response_a: str, response_b: str, order_: str) -> tuple[str, str]:
    """``(first, second)``: the pair's responses as ``order_`` shows them.

    >>> shown("a", "b", "BA")
    ('b', 'a')
    """
    return (response_a, response_b) if order(order_) is Order.AB else (response_b, response_a)


def shown_responses(response_a: str, response_b: str, order_or_slot: str) -> list[str]:
    """The responses one judge prompt shows: both in ``order`` (pairwise), or the slot's one (pointwise).

    >>> shown_responses("a", "b", "BA"), shown_responses("a", "b", "B")
    (['b', 'a'], ['b'])
    """
    if order_or_slot in SLOTS:
        return [response_a if order_or_slot == "A" else response_b]
    return list(shown(response_a, response_b, order_or_slot))


def shown_label(label: str, order_: str) -> str:
    """The better response's shown position, for a ``label`` in original naming.

    >>> shown_label("A", "AB"), shown_label("A", "BA"), shown_label("B", "BA")
    ('A', 'B', 'A')
    """
    return label if order(order_) is Order.AB else swap(label).value


def orient(parsed: Parsed, order_: str) -> tuple[Verdict, dict[str, float] | None]:
    """Map a parse in shown positions to original positions.

    >>> orient(Parsed(Verdict.A, {"A": 9.0, "B": 2.0}), "BA")
    (<Verdict.B: 'B'>, {'A': 2.0, 'B': 9.0})
    """
    if order(order_) is Order.AB:
        return parsed.verdict, parsed.scores
    scores = None if parsed.scores is None else {"A": parsed.scores["B"], "B": parsed.scores["A"]}
    return swap(parsed.verdict), scores


def compare_scores(score_a: float | None, score_b: float | None) -> Verdict:
    """The verdict two scores give: the higher wins, equal is a tie, a missing score is invalid.

    >>> compare_scores(7, 3.5), compare_scores(2, 2), compare_scores(None, 9)
    (<Verdict.A: 'A'>, <Verdict.TIE: 'tie'>, <Verdict.INVALID: 'invalid'>)
    """
    if score_a is None or score_b is None:
        return Verdict.INVALID
    if score_a > score_b:
        return Verdict.A
    if score_b > score_a:
        return Verdict.B
    return Verdict.TIE


def render_both(fmt: JudgeFormat, prompt: str, response_a: str, response_b: str,
                guidance: Guidance | None = None) -> list[tuple[str, Messages]]:
    """The prompts that judge one pair: ``[(order, messages)]`` in AB then BA for pairwise formats,
    or ``[("A", …), ("B", …)]`` (each response alone) for the pointwise format; every prompt shows the same
    ``guidance`` (criteria, reference), which names no position."""
    if fmt.pairwise:
        return [(o.value, fmt.render(prompt, *shown(response_a, response_b, o), guidance)) for o in ORDERS]
    return [(slot, fmt.render(prompt, r, None, guidance)) for slot, r in zip(SLOTS, (response_a, response_b),
                                                                             strict=True)]


def slots(pairwise: bool) -> tuple[str, ...]:
    """The judge prompts of a pair: its two orders, or its two pointwise slots."""
    return tuple(o.value for o in ORDERS) if pairwise else SLOTS


def combine_orders(ab: Verdict | str, ba: Verdict | str) -> str:
    """The verdict of a pair judged in both orders (both already in original naming): the shared
    verdict when they agree, ``invalid`` when either has no valid verdict, else ``inconsistent``.

    >>> combine_orders("A", "A"), combine_orders("A", "B"), combine_orders("A", "invalid")
    ('A', 'inconsistent', 'invalid')
    """
    ab, ba = Verdict(ab), Verdict(ba)
    if Verdict.INVALID in (ab, ba):
        return Verdict.INVALID.value
    return ab.value if ab == ba else INCONSISTENT


INCONSISTENT = Verdict.INCONSISTENT.value


def plurality(votes: Iterable[str], *, shared: str = Verdict.TIE.value) -> str:
    """The one vote rule: the most frequent valid vote, ``invalid`` votes left out; ``invalid`` when no
    vote is valid, and ``shared`` when the top count is shared. A pairwise judge's samples
    (``j1.judging.judge.majority``) or PandaLM's annotators split evenly are a tie; RewardBench 2's four-way
    scoring has no tie, so it passes ``shared="invalid"`` (its official rule: no credit).

    >>> plurality(["A", "A", "B", "invalid"]), plurality(["A", "B"]), plurality(["invalid"])
    ('A', 'tie', 'invalid')
    >>> plurality(["C", "D"], shared="invalid"), plurality(["C", "D", "D"], shared="invalid")
    ('invalid', 'D')
    """
    ranked = Counter(str(v) for v in votes if v != Verdict.INVALID).most_common()
    if not ranked:
        return Verdict.INVALID.value
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return shared
    return ranked[0][0]


def flipped(*verdicts: str) -> bool | None:
    """The one flip rule (issue 44): whether a pair's verdicts in its orders, each already mapped back
    to the original responses, disagree. None (not counted) when any order has no valid verdict: an
    unread order neither agrees nor disagrees; invalid answers are counted by the invalid rate. A tie
    is a verdict, so a tie against a pick is a flip: the judge changed its mind with the order
    (MT-Bench's "inconsistent"). Two orders (AB, BA), or a four-way item's rotations (the answer each
    picked, ``invalid`` for none).

    >>> flipped("A", "B"), flipped("A", "A"), flipped("tie", "A"), flipped("A", "invalid")
    (True, False, True, None)
    """
    if len(verdicts) < 2:
        raise ValueError(f"a flip compares two or more orders, got {len(verdicts)} verdicts")
    if any(v == Verdict.INVALID for v in verdicts):
        return None
    return len(set(verdicts)) > 1


def flip_rate(flips: Iterable[bool | None]) -> float | None:
    """The flip rate: the share of flipped pairs among those whose every order is valid (``flipped``
    is not None); None when there is none, never 0.

    >>> flip_rate([flipped("A", "B"), flipped("B", "B"), flipped("A", "invalid")]), flip_rate([None])
    (0.5, None)
    """
    counted = [f for f in flips if f is not None]
    return sum(counted) / len(counted) if counted else None


def share(verdicts: Iterable[str], which: Verdict) -> float | None:
    """The share of ``verdicts`` (strings or ``Verdict``s) that are ``which``: the one invalid rate and tie
    rate of j1 (per verdict, pooled); None when there are no verdicts, never 0.

    >>> share(["A", "invalid", "tie", "invalid"], Verdict.INVALID), share([Verdict.TIE, "A"], Verdict.TIE)
    (0.5, 0.5)
    >>> share([], Verdict.INVALID) is None
    True
    """
    seen = [Verdict(v) is which for v in verdicts]
    return sum(seen) / len(seen) if seen else None


def check_unit(orders: Sequence[str], pairwise: bool) -> None:
    """Raise ValueError unless ``orders`` are exactly the two prompts of one pair, once each."""
    if sorted(orders) != sorted(slots(pairwise)):
        raise ValueError(f"a pair needs {list(slots(pairwise))} once each, got {list(orders)}")
