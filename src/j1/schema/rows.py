"""Reading j1's row files: the only JSONL reader (a torn last line is the one tolerated defect), JSON and
Parquet rows, and the field checks every record's ``from_row`` uses (``RowError`` names ``path:line`` and the
field)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from j1.formats.base import INPUTS

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


THOUGHT_KEYS = ("A", "B")  # the letter the better response is shown under (j1.data.rationales)


def thoughts_field(obj: Mapping, where: str) -> dict | None:
    """A row's optional ``thoughts``: ``{"A": str, "B": str, "reads": [input, ...]}``, the thought for each
    letter the better response may be shown under and the judge inputs they quote (``j1.data.rationales``).

    >>> thoughts_field({"thoughts": {"A": "x", "B": "y"}}, "f:1")
    {'A': 'x', 'B': 'y', 'reads': []}
    >>> thoughts_field({"thoughts": {"A": "x"}}, "f:1")
    Traceback (most recent call last):
    j1.schema.rows.RowError: f:1: field 'thoughts' must hold a string 'A' and a string 'B' (the thought for each letter the better response is shown under)
    """
    value = obj.get("thoughts")
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(value.get(k), str) and value[k].strip() for k in THOUGHT_KEYS):
        raise RowError(f"{where}: field 'thoughts' must hold a string 'A' and a string 'B' (the thought for each "
                       "letter the better response is shown under)")
    reads = value.get("reads", [])
    if not isinstance(reads, list) or any(r not in INPUTS for r in reads):
        raise RowError(f"{where}: field 'thoughts.reads' must be a list of {list(INPUTS)}, got {reads!r}")
    extra = sorted(set(value) - {*THOUGHT_KEYS, "reads"})
    if extra:
        raise RowError(f"{where}: field 'thoughts' has unknown key {extra[0]!r}; it holds 'A', 'B' and 'reads'")
    return {"A": value["A"], "B": value["B"], "reads": list(reads)}


def meta_field(obj: Mapping, where: str) -> dict:
    """A row's optional ``meta`` object (absent or null: empty)."""
    meta = obj.get("meta")
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise RowError(f"{where}: field 'meta' must be an object, got {type(meta).__name__}")
    return dict(meta)
