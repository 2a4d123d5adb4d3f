"""The one reader of pair rows that every pair-reading command shares (eval, attack, probe, export verl,
warmup, train, consistency): a row with a prompt and a chosen and a rejected response, in any of the
forms people already have.

Forms read (issue 45):

- plain: ``{"prompt": str, "chosen": str, "rejected": str}``; ``id``, ``kind`` (or ``category``),
  ``source`` and ``meta`` are optional. A row without ``id`` gets one from a hash of its content, so
  the same pair keeps its id across files and runs (resume, pair seeds).
- TRL's preference form, standard (the plain form) or conversational: ``prompt`` a list of chat
  messages ``{"role", "content"}``, ``chosen``/``rejected`` lists of assistant messages. TRL's implicit
  prompt form (no ``prompt``; ``chosen``/``rejected`` whole conversations) takes the messages both
  share as the prompt.
- j1's own pair rows (``j1 synth``: :class:`j1.schema.PairRecord`), read unchanged.

Every form may carry what the judge reads besides the responses (issue 54): ``criteria`` (a string, or a
rubric object ``{"criteria", "levels"}``, written out by :func:`j1.formats.templates.rubric_text`) and
``reference`` (a gold answer, a string).

A conversational prompt of one user message is that message's text; a longer one keeps its turns as a
transcript (:func:`j1.formats.base.request_text`, what the judge formats show). A malformed row raises
``RowError("file:line: field ...")``.
``j1 synth mix`` rows (both orders of each pair) are read by :func:`j1.schema.read_train_rows`; the
callers that take them check for ``order`` first.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from j1.formats.base import request_text
from j1.formats.templates import rubric_text
from j1.schema import PairRecord, RowError, input_fields, meta_field, read_json_rows, row_version
from j1.schema.rows import thoughts_field


def content_id(prompt: str, chosen: str, rejected: str) -> str:
    """A pair id from its content: 16 hex digits of SHA-256 over the three texts.

    >>> content_id("q", "good", "bad") == content_id("q", "good", "bad") != content_id("q", "bad", "good")
    True
    >>> len(content_id("q", "good", "bad"))
    16
    """
    blob = json.dumps([prompt, chosen, rejected], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _messages(value: list, key: str, where: str) -> list[dict[str, str]]:
    """``value`` checked as a list of ``{"role": str, "content": str}`` chat messages."""
    if not value:
        raise RowError(f"{where}: field {key!r} is an empty list; give a string or a list of chat messages")
    for n, m in enumerate(value, start=1):
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise RowError(f"{where}: field {key!r} message {n} must be an object with string 'role' and "
                           f"'content', got {json.dumps(m, ensure_ascii=False)[:80]}")
    return [{"role": m["role"], "content": m["content"]} for m in value]


def prompt_text(value: Any, where: str, key: str = "prompt") -> str:
    """A prompt given as a string or a list of chat messages, as the judge reads it
    (:func:`j1.formats.base.request_text`: a conversation keeps its turns).

    >>> prompt_text([{"role": "user", "content": "2+2?"}], "f:1")
    '2+2?'
    """
    try:
        return request_text(value)
    except ValueError as exc:
        raise RowError(f"{where}: field {key!r} {exc}") from None


def response_text(value: Any, key: str, where: str) -> str:
    """A response given as a string or as TRL's list of assistant messages (their texts, joined).

    >>> response_text([{"role": "assistant", "content": "4"}], "chosen", "f:1")
    '4'
    """
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        messages = _messages(value, key, where)
        roles = sorted({m["role"] for m in messages} - {"assistant"})
        if roles:
            raise RowError(f"{where}: field {key!r} holds {roles[0]!r} messages; a response is assistant "
                           f"messages only (put the conversation before it in 'prompt')")
        return "\n\n".join(m["content"] for m in messages)
    raise RowError(f"{where}: field {key!r} must be a string or a list of assistant messages, "
                   f"got {type(value).__name__}")


def response_list(value: Any, key: str, where: str) -> list[str]:
    """The responses a field holds: one string, one response as assistant messages, or a list of
    strings (RewardBench 2's ``chosen``/``rejected``: several answers).

    >>> response_list("4", "chosen", "f:1"), response_list(["4", "four"], "chosen", "f:1")
    (['4'], ['4', 'four'])
    >>> response_list([{"role": "assistant", "content": "4"}], "chosen", "f:1")
    ['4']
    """
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value)
    if isinstance(value, list) and value and any(isinstance(v, str) for v in value):
        raise RowError(f"{where}: field {key!r} mixes strings and other values; give strings only "
                       f"(several responses) or chat messages only (one response)")
    return [response_text(value, key, where)]


def _split_implicit(row: Mapping, where: str) -> tuple[list, list, list]:
    """TRL's implicit-prompt form: the messages ``chosen`` and ``rejected`` share before they differ
    are the prompt."""
    chosen = _messages(_field(row, "chosen", where), "chosen", where)
    rejected = _messages(_field(row, "rejected", where), "rejected", where)
    n = 0
    while n < min(len(chosen), len(rejected)) and chosen[n] == rejected[n]:
        n += 1
    if n == 0:
        raise RowError(f"{where}: missing field 'prompt' (and 'chosen'/'rejected' share no opening messages "
                       f"to take it from)")
    return chosen[:n], chosen[n:], rejected[n:]


def _field(row: Mapping, key: str, where: str) -> Any:
    if key not in row:
        raise RowError(f"{where}: missing field {key!r}")
    return row[key]


def _optional_str(row: Mapping, keys: tuple[str, ...], where: str, default: str) -> str:
    """The first of ``keys`` present and not null, as a string (a number is accepted and written out)."""
    for key in keys:
        value = row.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise RowError(f"{where}: field {key!r} must be a string, got {type(value).__name__}")
        return str(value)
    return default


def row_inputs(row: Mapping, where: str) -> dict[str, str | None]:
    """A row's ``criteria`` (a string, or a rubric object written out as text) and ``reference`` (a string).

    >>> row_inputs({"criteria": {"criteria": "Brief?", "levels": {10: "One line."}}}, "f:1")["criteria"]
    'Brief?\\nScore levels (0-10):\\n10: One line.'
    """
    criteria = row.get("criteria")
    if isinstance(criteria, Mapping):
        try:
            row = {**row, "criteria": rubric_text(criteria, f"{where}: field 'criteria'")}
        except ValueError as exc:
            raise RowError(str(exc)) from None
    return input_fields(row, where)


def pair_from_row(row: Mapping, where: str, *, source: str = "") -> PairRecord:
    """One pair row, in any form the module docstring lists, as a :class:`j1.schema.PairRecord`.

    Args:
        row: the parsed row.
        where: ``file:line``, for error messages.
        source: the ``source`` of a row without one (the file's name, say).

    Raises:
        RowError: a missing or mistyped field, naming ``where`` and the field.

    >>> p = pair_from_row({"prompt": "q", "chosen": "good", "rejected": "bad"}, "f:1", source="f")
    >>> (p.prompt, p.chosen, p.rejected, p.kind, p.source, p.id == content_id("q", "good", "bad"))
    ('q', 'good', 'bad', '', 'f', True)
    """
    if "prompt" not in row and isinstance(row.get("chosen"), list) and isinstance(row.get("rejected"), list):
        prompt_msgs, chosen_msgs, rejected_msgs = _split_implicit(row, where)
        prompt = request_text(prompt_msgs)
        chosen, rejected = response_text(chosen_msgs, "chosen", where), response_text(rejected_msgs, "rejected", where)
    else:
        prompt = prompt_text(_field(row, "prompt", where), where)
        chosen = response_text(_field(row, "chosen", where), "chosen", where)
        rejected = response_text(_field(row, "rejected", where), "rejected", where)
    pid = _optional_str(row, ("id",), where, "") or content_id(prompt, chosen, rejected)
    return PairRecord(
        id=pid,
        prompt=prompt,
        chosen=chosen,
        rejected=rejected,
        kind=_optional_str(row, ("kind", "category"), where, ""),
        source=_optional_str(row, ("source",), where, source),
        meta=meta_field(row, where),
        schema_version=row_version(row, where),
        **row_inputs(row, where),
        thoughts=thoughts_field(row, where),
    )


def read_pair_file(path: str | os.PathLike) -> list[PairRecord]:
    """Every pair of a JSONL, JSON or Parquet pair file (any form the module docstring lists).

    Raises:
        RowError: a malformed row (``file:line: field ...``), or a file with no rows.
    """
    path = Path(path)
    pairs = [pair_from_row(row, f"{path}:{i}", source=path.stem) for i, row in read_json_rows(path)]
    if not pairs:
        raise RowError(f"{path}: no pairs")
    return pairs
