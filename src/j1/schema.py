"""Record types and the only JSONL reader in j1 (``j1.runs.atomic`` writes the files).

Every artefact line carries ``schema_version``. Readers validate line by line and raise
``ValueError("path:lineno: ...")`` naming the field, so a malformed row is found at once. A crash
loses at most the line being written, which the reader of a resumed run discards (a torn last line
is the only tolerated defect, see ``iter_jsonl``).

A pair with a known winner has one record, :class:`PairRecord` (prompt, chosen, rejected, as ``j1 synth``
writes it); the other pair types are views of it, each where it must differ:

- :class:`PlacedPair` (``j1.train.data.Pair``): the record with its responses placed as A and B by a
  seeded coin and ``label`` naming the better one, so train, probe and export never assume chosen is A.
- :class:`TrainRow`: a placed pair shown in one order, a line of ``j1 synth mix`` (its file format).
- ``j1.attack.attacks.AttackPair``: a record's chosen answer against an attack on its rejected one,
  whose text may depend on the letter it is shown as.
- ``j1.eval.items.Item``: a benchmark item, which may hold more than two responses (RM-Bench's 3x3).
- ``j1.serve.protocol.Task``: a request to judge, with no known winner (``response_b`` None: score one).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from j1.formats.base import INPUTS, Guidance
from j1.pairs import LABELS, ORDERS, shown, shown_label

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1


class RowError(ValueError):
    """A malformed input row; the message starts with ``path:lineno:``."""


def iter_jsonl(path: str | os.PathLike, *, allow_torn_tail: bool = False) -> Iterator[tuple[int, dict]]:
    """Yield ``(lineno, object)`` for each non-blank line of a JSONL file.

    Args:
        path: the file.
        allow_torn_tail: tolerate an unparseable *last* line with no trailing newline (what a
            crash during an append leaves behind); it is skipped with a warning.

    Raises:
        RowError: a line is not UTF-8 text or not a JSON object; the message names ``path:lineno``.
    """
    path = Path(path)
    with path.open("rb") as fh:
        raw_lines = fh.read().split(b"\n")
    # split() leaves "" after a final newline; keep the "\n" on every line that had one (torn-tail check).
    lines = [raw + b"\n" for raw in raw_lines[:-1]] + ([raw_lines[-1]] if raw_lines[-1] else [])
    for i, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if allow_torn_tail and i == len(lines) and not raw.endswith(b"\n"):
                log.warning("%s:%d: ignoring a torn last line (interrupted write)", path, i)
                return
            raise RowError(f"{path}:{i}: not UTF-8 text (byte {exc.start + 1} of the line)") from None
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            if allow_torn_tail and i == len(lines) and not line.endswith("\n"):
                log.warning("%s:%d: ignoring a torn last line (interrupted write)", path, i)
                return
            raise RowError(f"{path}:{i}: not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise RowError(f"{path}:{i}: expected a JSON object, got {type(obj).__name__}")
        yield i, obj


def read_json_rows(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """Rows of a JSONL, JSON (array, or object holding one array) or Parquet file, as ``(row_no, dict)``.

    Line numbers are 1-based file lines for JSONL and 1-based row indices otherwise.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in {".jsonl", ".ndjson"}:
        yield from iter_jsonl(path)
    elif suffix == ".json":
        try:
            data = json.loads(path.read_bytes().decode("utf-8"))
        except UnicodeDecodeError:
            raise RowError(f"{path}: not UTF-8 text") from None
        except json.JSONDecodeError as exc:
            raise RowError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        if isinstance(data, dict):
            arrays = [v for v in data.values() if isinstance(v, list)]
            if len(arrays) != 1:
                raise RowError(f"{path}: a JSON object must hold exactly one array of rows")
            data = arrays[0]
        if not isinstance(data, list):
            raise RowError(f"{path}: expected a JSON array of rows")
        for i, obj in enumerate(data, start=1):
            if not isinstance(obj, dict):
                raise RowError(f"{path}:{i}: expected a JSON object, got {type(obj).__name__}")
            yield i, obj
    elif suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except ValueError as exc:  # pyarrow's ArrowInvalid: not a Parquet file, or a damaged one
            raise RowError(f"{path}: not a readable Parquet file ({' '.join(str(exc).split())})") from None
        for i, obj in enumerate(table.to_pylist(), start=1):
            yield i, obj
    else:
        raise RowError(f"{path}: unknown file type {suffix!r}; use .jsonl, .json or .parquet")


def require(obj: Mapping, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``obj[key]`` checked for presence and type; ``where`` is ``path:lineno``."""
    if key not in obj:
        raise RowError(f"{where}: missing field {key!r}")
    value = obj[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise RowError(f"{where}: field {key!r} must be {names}, got {type(value).__name__}")
    return value


def string_fields(cls: type, obj: Mapping, where: str) -> dict[str, str]:
    """Every ``str`` field of the record dataclass ``cls`` from ``obj``, checked with ``require`` in
    declaration order (so the first missing field is the one named)."""
    return {f.name: require(obj, f.name, str, where) for f in dataclasses.fields(cls) if f.type == "str"}


def row_version(obj: Mapping, where: str) -> int:
    """A row's ``schema_version`` (rows written before it existed count as the current one).

    Raises:
        RowError: it is not a whole number >= 1, naming ``where`` and the field.
    """
    version = obj.get("schema_version", SCHEMA_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise RowError(f"{where}: field 'schema_version' must be a whole number >= 1, got {version!r}")
    return version


def input_fields(obj: Mapping, where: str) -> dict[str, str | None]:
    """A row's optional judge inputs (``j1.formats.base.INPUTS``: ``criteria``, ``reference``), each a string;
    absent or null is not given.

    >>> input_fields({"reference": "42"}, "f:1")
    {'criteria': None, 'reference': '42'}
    """
    out = {}
    for key in INPUTS:
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            raise RowError(f"{where}: field {key!r} must be a string, got {type(value).__name__}")
        out[key] = value
    return out


def meta_field(obj: Mapping, where: str) -> dict:
    """A row's optional ``meta`` object (absent or null: empty)."""
    meta = obj.get("meta")
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise RowError(f"{where}: field 'meta' must be an object, got {type(meta).__name__}")
    return dict(meta)


@dataclass
class PairRecord:
    """A training/evaluation pair with a known winner: one line of a pair file (``j1 synth``), and the
    one pair record the other pair types are views of (module docstring).

    ``criteria`` (what to judge by) and ``reference`` (a gold answer to the prompt) are what a judge may read
    besides the responses (``j1.formats.base.Guidance``); a file leaves them out when unset."""

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

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = INPUTS

    @property
    def guidance(self) -> Guidance:
        return Guidance(self.criteria, self.reference)

    @classmethod
    def from_row(cls, obj: Mapping, where: str) -> PairRecord:
        return cls(**string_fields(cls, obj, where), meta=meta_field(obj, where),
                   schema_version=row_version(obj, where), **input_fields(obj, where))


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

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = INPUTS

    def shown(self) -> tuple[str, str]:
        """``(first, second)``: the responses in the order the judge sees them."""
        return shown(self.response_a, self.response_b, self.order)

    @classmethod
    def from_row(cls, obj: Mapping, where: str) -> TrainRow:
        row = cls(**string_fields(cls, obj, where), schema_version=row_version(obj, where), **input_fields(obj, where))
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

    @property
    def guidance(self) -> Guidance:
        return Guidance(self.criteria, self.reference)

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
        return cls(pair.id, pair.prompt, a, b, label, pair.kind, pair.criteria, pair.reference)

    @classmethod
    def from_train_row(cls, row: TrainRow) -> PlacedPair:
        """The pair a mix line shows (either order: a line keeps the original placement).

        >>> row = TrainRow("m1", "BA", "q", "x", "y", "B", "A", "chat", "s")
        >>> PlacedPair.from_train_row(row)
        PlacedPair(pair_id='m1', prompt='q', response_a='x', response_b='y', label='B', kind='chat', criteria=None, reference=None)
        """
        return cls(row.pair_id, row.prompt, row.response_a, row.response_b, row.label, row.kind, row.criteria,
                   row.reference)

    def train_rows(self, source: str) -> list[TrainRow]:
        """The pair's AB and BA lines of a mix file (``source``: the pair's data source).

        >>> [(r.order, r.label, r.label_shown) for r in PlacedPair("p", "q", "x", "y", "B").train_rows("s")]
        [('AB', 'B', 'B'), ('BA', 'B', 'A')]
        """
        return [TrainRow(self.pair_id, o.value, self.prompt, self.response_a, self.response_b, self.label,
                         shown_label(self.label, o), self.kind, source, criteria=self.criteria,
                         reference=self.reference) for o in ORDERS]


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
    j1.schema.RowError: f: pair 'p' has only order ['AB']; need AB and BA
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


@dataclass
class JudgmentLine:
    """One judged prompt of ``j1 eval``: a line of ``DIR/judgments.jsonl`` (see ``j1.eval.scoring``).

    A "slot" is one order of one pair, or one response scored alone. ``pairs`` and ``category``
    repeat the item's, so scoring needs nothing but this file. A prompt whose request failed for
    good has ``error`` set and no texts.
    """

    # schema_version is written first (kw_only keeps it out of the positional arguments).
    schema_version: int = field(default=SCHEMA_VERSION, kw_only=True)
    item: str
    category: str
    pairs: list[tuple[str, ...]]
    slot: str
    texts: list[str]
    finish_reasons: list = field(default_factory=list)
    completion_tokens: list = field(default_factory=list)
    error: str | None = None

    def __getitem__(self, key: str) -> Any:
        """A field by its JSON key (``line["texts"]``), for code written against the raw lines."""
        return getattr(self, key)

    @classmethod
    def from_row(cls, obj: Mapping, where: str) -> JudgmentLine:
        """Raises RowError naming ``where`` and the field; ``texts`` may be empty only with ``error`` set."""
        item = require(obj, "item", str, where)
        slot = require(obj, "slot", str, where)
        texts = require(obj, "texts", list, where)
        if not all(isinstance(t, str) for t in texts):
            raise RowError(f"{where}: field 'texts' must be a list of strings")
        error = obj.get("error")
        if error is None and not texts:
            raise RowError(f"{where}: field 'texts' is empty but 'error' is not set")
        if error is not None and not isinstance(error, str):
            raise RowError(f"{where}: field 'error' must be a string or null, got {type(error).__name__}")
        pairs = require(obj, "pairs", list, where)
        if not all(isinstance(p, list) and len(p) == 3 and all(isinstance(x, str) for x in p) for p in pairs):
            raise RowError(f"{where}: field 'pairs' must be a list of [first, second, label] string triples")
        lists = {}
        for name in ("finish_reasons", "completion_tokens"):
            value = obj.get(name)
            if value is not None and not isinstance(value, list):
                raise RowError(f"{where}: field {name!r} must be a list, got {type(value).__name__}")
            lists[name] = list(value or [])
        return cls(
            item=item,
            category=require(obj, "category", str, where),
            pairs=[tuple(p) for p in pairs],
            slot=slot,
            texts=texts,
            error=error,
            schema_version=row_version(obj, where),
            **lists,
        )


@dataclass
class ResultRecord:
    """One judged item as a person reads it: a line of ``DIR/results.jsonl``, written in the source's order
    by ``j1 eval``, ``j1 attack``, ``j1 consistency`` and ``j1 label`` (``j1.eval.results``; the fields are
    in docs/evaluation.md). ``judgments`` has one entry per judge prompt (an order of a pair, a response
    scored alone, a four-way rotation), ``pairs`` one per pair of the item; texts are None with ``--no_texts``.
    """

    schema_version: int = field(default=SCHEMA_VERSION, kw_only=True)
    command: str
    index: int
    id: str
    category: str
    source: str | None
    prompt: str | None
    responses: list[dict]
    label: str | None
    judgments: list[dict]
    pairs: list[dict]
    accuracy: float | None
    consistent: bool | None
    flipped: bool | None
    complete: bool
    outcome: dict | None = None
    meta: dict | None = None
    criteria: str | None = None  # what the judge read besides the responses (None: not given, or --no_texts)
    reference: str | None = None

    # Each JSON key's type(s); None is allowed where the type tuple holds type(None).
    TYPES: ClassVar[dict[str, tuple[type, ...]]] = {
        "command": (str,), "index": (int,), "id": (str,), "category": (str,), "source": (str, type(None)),
        "prompt": (str, type(None)), "responses": (list,), "label": (str, type(None)), "judgments": (list,),
        "pairs": (list,), "accuracy": (int, float, type(None)), "consistent": (bool, type(None)),
        "flipped": (bool, type(None)), "complete": (bool,), "outcome": (dict, type(None)), "meta": (dict, type(None)),
        "criteria": (str, type(None)), "reference": (str, type(None)),
    }
    # Keys a line may leave out (None): added after the first files were written.
    OPTIONAL: ClassVar[tuple[str, ...]] = ("outcome", "meta", "criteria", "reference")
    # What each entry of a list field must hold (the rest is documented, not required).
    ENTRY_KEYS: ClassVar[dict[str, tuple[str, ...]]] = {
        "responses": ("name", "text"), "judgments": ("slot", "shown", "verdict", "valid", "right", "line"),
        "pairs": ("first", "second", "label", "verdict", "right", "flipped"),
    }

    @classmethod
    def from_row(cls, obj: Mapping, where: str) -> ResultRecord:
        """Raises RowError naming ``where`` and the field (``judgments[2]: missing 'valid'``)."""
        values = {}
        for key, kinds in cls.TYPES.items():
            if key not in obj and key in cls.OPTIONAL:
                values[key] = None
                continue
            value = require(obj, key, kinds, where)
            if isinstance(value, bool) and bool not in kinds:  # JSON true is no index or accuracy
                raise RowError(f"{where}: field {key!r} must be {kinds[0].__name__}, got bool")
            values[key] = value
        for key, needed in cls.ENTRY_KEYS.items():
            for k, entry in enumerate(values[key]):
                if not isinstance(entry, dict):
                    raise RowError(f"{where}: field '{key}[{k}]' must be an object, got {type(entry).__name__}")
                missing = [n for n in needed if n not in entry]
                if missing:
                    raise RowError(f"{where}: field '{key}[{k}]' has no {missing[0]!r}")
        return cls(**values, schema_version=row_version(obj, where))


def read_results(path: str | os.PathLike) -> list[ResultRecord]:
    """Every line of a ``results.jsonl``, validated, in file (source) order.

    Raises:
        RowError: a malformed line, naming ``path:line`` and the field.
    """
    return [ResultRecord.from_row(obj, f"{path}:{i}") for i, obj in iter_jsonl(path)]
