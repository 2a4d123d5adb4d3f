"""The one pair record (``PairRecord``, a line of ``j1 synth``) and its views: ``TrainRow`` (a line of
``j1 synth mix``), ``PlacedPair`` (the pair placed as A and B by a seeded coin) and ``Dropped`` (a prompt that
gave no pair)."""

from __future__ import annotations

import os
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from j1.formats.base import INPUTS, Guidance
from j1.pairs import LABELS, ORDERS, shown, shown_label
from j1.schema.rows import (
    SCHEMA_VERSION,
    RowError,
    input_fields,
    iter_jsonl,
    meta_field,
    row_version,
    string_fields,
    thoughts_field,
)


@dataclass
class PairRecord:
    """A training/evaluation pair with a known winner: one line of a pair file (``j1 synth``), and the
    one pair record the other pair types are views of (module docstring).

    ``criteria`` (what to judge by) and ``reference`` (a gold answer to the prompt) are what a judge may read
    besides the responses (``j1.formats.base.Guidance``); a file leaves them out when unset. ``thoughts`` (optional)
    says why the pair has its winner, one thought per letter the chosen response may be shown under
    (``j1.data.rationales``, ``j1 synth thoughts``)."""

    id: str
    prompt: str
    chosen: str
    rejected: str
    kind: str
    source: str
    meta: dict = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION
    criteria: str | None = field(default=None, kw_only=True)
    reference: str | None = field(default=None, kw_only=True)
    thoughts: dict | None = field(default=None, kw_only=True)

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = (*INPUTS, "thoughts")

    @property
    def guidance(self) -> Guidance:
        return Guidance(self.criteria, self.reference)

    @classmethod
    def from_row(cls, obj: Mapping, where: str) -> PairRecord:
        return cls(**string_fields(cls, obj, where), meta=meta_field(obj, where),
                   schema_version=row_version(obj, where), **input_fields(obj, where),
                   thoughts=thoughts_field(obj, where))


def read_pairs(path: str | os.PathLike) -> list[PairRecord]:
    """Read a pair file, validating every line."""
    return [PairRecord.from_row(obj, f"{path}:{i}") for i, obj in iter_jsonl(path)]


@dataclass(frozen=True)
class TrainRow:
    """One presentation of a pair to the judge: a line of ``j1 synth mix``'s train.jsonl/heldout.jsonl.

    ``response_a``/``response_b`` are the pair's responses in its fixed original placement (the same
    on both lines of a pair); ``order`` is how the judge is shown them (``j1.pairs``); ``label``
    names the better response in the original placement and ``label_shown`` its shown position.
    The module docstring of ``j1.data.mix`` has the line format.
    """

    pair_id: str
    order: str
    prompt: str
    response_a: str
    response_b: str
    label: str
    label_shown: str
    kind: str
    source: str
    schema_version: int = SCHEMA_VERSION
    criteria: str | None = field(default=None, kw_only=True)  # the pair's judge inputs (PairRecord), both lines
    reference: str | None = field(default=None, kw_only=True)
    thoughts: dict | None = field(default=None, kw_only=True)  # the pair's thoughts (PairRecord), both lines

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = (*INPUTS, "thoughts")

    def shown(self) -> tuple[str, str]:
        """``(first, second)``: the responses in the order the judge sees them."""
        return shown(self.response_a, self.response_b, self.order)

    @classmethod
    def from_row(cls, obj: Mapping, where: str) -> TrainRow:
        row = cls(**string_fields(cls, obj, where), schema_version=row_version(obj, where), **input_fields(obj, where),
                  thoughts=thoughts_field(obj, where))
        if row.order not in ORDERS:
            raise RowError(f"{where}: field 'order' must be AB or BA, got {row.order!r}")
        for name in ("label", "label_shown"):
            if getattr(row, name) not in LABELS:
                raise RowError(f"{where}: field {name!r} must be A or B, got {getattr(row, name)!r}")
        if row.label_shown != shown_label(row.label, row.order):
            raise RowError(f"{where}: field 'label_shown' {row.label_shown!r} contradicts label {row.label!r} "
                           f"in order {row.order}")
        return row


def read_train_rows(path: str | os.PathLike) -> list[TrainRow]:
    """Every row of a ``train.jsonl``/``heldout.jsonl``, validated.

    Raises:
        RowError: a missing/mistyped field or an inconsistent label, naming ``path:line`` and the field.
    """
    return [TrainRow.from_row(obj, f"{path}:{i}") for i, obj in iter_jsonl(path)]


def both_orders(pair: PairRecord, seed: int) -> list[TrainRow]:
    """The AB and BA rows of a pair, placed by ``PlacedPair.from_record`` (chosen is response_a with
    probability 1/2, seeded by id).

    >>> p = PairRecord("id1", "q", "good", "bad", "chat", "s")
    >>> [(r.order, r.label, r.label_shown) for r in both_orders(p, 0)] in (
    ...     [("AB", "A", "A"), ("BA", "A", "B")], [("AB", "B", "B"), ("BA", "B", "A")])
    True
    """
    return PlacedPair.from_record(pair, seed).train_rows(pair.source)


@dataclass(frozen=True)
class PlacedPair:
    """A pair placed in AB naming: ``label`` says which of ``response_a``/``response_b`` is better.

    The view of a :class:`PairRecord` that judge prompts are built from (``j1.train.data.Pair``): a
    placement that always put chosen first would let a judge learn the position instead of the answer.
    """

    pair_id: str
    prompt: str
    response_a: str
    response_b: str
    label: str
    kind: str = ""
    criteria: str | None = None  # the pair's judge inputs (PairRecord)
    reference: str | None = None
    thoughts: dict | None = None  # the pair's thoughts, keyed by the better response's shown letter (PairRecord)

    @property
    def guidance(self) -> Guidance:
        return Guidance(self.criteria, self.reference)

    def unseen_input(self, inputs: Iterable[str]) -> str | None:
        """The first input the pair's thoughts quote that a judge shown ``inputs`` does not see; None if none.

        >>> p = PlacedPair("p", "q", "x", "y", "B", thoughts={"A": "t1", "B": "t2", "reads": ["reference"]})
        >>> p.unseen_input(["reference"]), p.unseen_input([])
        (None, 'reference')
        """
        shown = set(inputs)
        return next((name for name in (self.thoughts or {}).get("reads", []) if name not in shown), None)

    def thought(self, order: str, inputs: Iterable[str]) -> str | None:
        """The thought for ``order`` when the judge is shown ``inputs``: None without thoughts.

        Raises:
            ValueError: the thoughts quote an input the judge is not shown (a reference it cannot see).

        >>> p = PlacedPair("p", "q", "x", "y", "B", thoughts={"A": "t1", "B": "t2", "reads": []})
        >>> p.thought("AB", ()), p.thought("BA", ())
        ('t2', 't1')
        """
        if self.thoughts is None:
            return None
        unseen = self.unseen_input(inputs)
        if unseen is not None:
            raise ValueError(f"pair {self.pair_id!r}: its thoughts quote the {unseen}, which the judge is not shown; "
                             f"pass --judge_inputs {unseen}, or rebuild them without it (j1 synth thoughts "
                             f"--reference_share 0)")
        return self.thoughts[shown_label(self.label, order)]

    @classmethod
    def from_record(cls, pair: PairRecord, seed: int) -> PlacedPair:
        """``pair`` with chosen placed as A or B by a coin seeded with ``seed`` and the pair id, the
        coin ``j1 synth mix`` uses, so a pair file and its mix place every pair alike.

        >>> p = PlacedPair.from_record(PairRecord("id1", "q", "good", "bad", "chat", "s"), 0)
        >>> (p.response_a, p.response_b, p.label) in (("good", "bad", "A"), ("bad", "good", "B"))
        True
        """
        chosen_first = random.Random(f"{seed}:{pair.id}").random() < 0.5
        a, b, label = (pair.chosen, pair.rejected, "A") if chosen_first else (pair.rejected, pair.chosen, "B")
        return cls(pair.id, pair.prompt, a, b, label, pair.kind, pair.criteria, pair.reference, pair.thoughts)

    @classmethod
    def from_train_row(cls, row: TrainRow) -> PlacedPair:
        """The pair a mix line shows (either order: a line keeps the original placement).

        >>> row = TrainRow("m1", "BA", "q", "x", "y", "B", "A", "chat", "s")
        >>> PlacedPair.from_train_row(row)
        PlacedPair(pair_id='m1', prompt='q', response_a='x', response_b='y', label='B', kind='chat', criteria=None, reference=None, thoughts=None)
        """
        return cls(row.pair_id, row.prompt, row.response_a, row.response_b, row.label, row.kind, row.criteria,
                   row.reference, row.thoughts)

    def train_rows(self, source: str) -> list[TrainRow]:
        """The pair's AB and BA lines of a mix file (``source``: the pair's data source).

        >>> [(r.order, r.label, r.label_shown) for r in PlacedPair("p", "q", "x", "y", "B").train_rows("s")]
        [('AB', 'B', 'B'), ('BA', 'B', 'A')]
        """
        return [TrainRow(self.pair_id, o.value, self.prompt, self.response_a, self.response_b, self.label,
                         shown_label(self.label, o), self.kind, source, criteria=self.criteria,
                         reference=self.reference, thoughts=self.thoughts) for o in ORDERS]


def placed_pairs(rows: Iterable[TrainRow], where: str) -> list[PlacedPair]:
    """The pairs of a mix file's rows, in first-seen order: each from its AB and BA lines.

    Args:
        rows: the lines, both orders of every pair.
        where: the file, for error messages.

    Raises:
        RowError: a pair id twice in one order, two orders that disagree on the pair, or a pair with
            one order only; the message starts with ``where``.

    >>> pair = PlacedPair("p", "q", "x", "y", "A")
    >>> placed_pairs(pair.train_rows("s"), "f") == [pair]
    True
    >>> placed_pairs(pair.train_rows("s")[:1], "f")
    Traceback (most recent call last):
    j1.schema.rows.RowError: f: pair 'p' has only order ['AB']; need AB and BA
    """
    pairs: dict[str, PlacedPair] = {}
    orders: dict[str, set[str]] = {}
    for r in rows:
        pair = PlacedPair.from_train_row(r)
        if r.order in orders.setdefault(r.pair_id, set()):
            raise RowError(f"{where}: pair id {r.pair_id!r} appears twice in order {r.order}")
        if r.pair_id in pairs and pairs[r.pair_id] != pair:
            raise RowError(f"{where}: the two orders of pair {r.pair_id!r} disagree on the pair")
        orders[r.pair_id].add(r.order)
        pairs[r.pair_id] = pair
    lonely = [pid for pid, o in orders.items() if len(o) != 2]
    if lonely:
        raise RowError(f"{where}: pair {lonely[0]!r} has only order {sorted(orders[lonely[0]])}; need AB and BA")
    return list(pairs.values())


@dataclass
class Dropped:
    """A synthesis prompt that gave no pair, and why: a line of ``OUT.dropped.jsonl`` (``j1.data.store``)."""

    id: str
    prompt: str
    kind: str
    source: str
    reason: str
    meta: dict = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def from_row(cls, obj: Mapping, where: str) -> Dropped:
        return cls(**string_fields(cls, obj, where), meta=meta_field(obj, where),
                   schema_version=row_version(obj, where))
