"""What judging writes: ``JudgmentLine`` (a line of ``judgments.jsonl``, one judged prompt) and
``ResultRecord`` (a line of ``results.jsonl``, one judged item as a person reads it)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from j1.schema.rows import SCHEMA_VERSION, RowError, iter_jsonl, require, row_version


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
