"""What every benchmark loader shares: reading rows from a local file or the Hugging Face Hub,
checking fields, and turning rows into Items (with the split, tie and limit rules applied)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j1.eval.items import Item
from j1.eval.metrics import get_scorer
from j1.schema import RowError, read_json_rows, require

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Context:
    """What a row parser may need besides the row: the data's name (some sets encode their part
    only in the file or dataset name) and the selected ``--split``."""

    source: str
    split: str | None = None


RowParser = Callable[[Mapping[str, Any], str, Context], list[Item]]


@dataclass(frozen=True)
class Benchmark:
    """A registered benchmark.

    Args:
        name: the ``--benchmark`` value.
        parse_row: ``(row, where, ctx) -> [Item]`` (most rows give one item; PPE correctness rows
            give one per conflict pair). ``where`` is ``file:line`` for error messages.
        scheme: how its accuracy is computed: the key of its scorer in ``j1.eval.metrics.SCORERS``.
        default_ties: "keep" or "drop" items labelled tie, when ``--ties`` is not given.
        hf_split: the Hub split to load when ``--data`` is a dataset id.
        splits: the ``--split`` values it accepts (None: it takes none).
        prompts: ``(item, cfg) -> [(slot, messages)]`` for a benchmark that asks its own way
            (RewardBench 2: four-way picks or ratings); None: pairs in both orders, or each response alone.
        score: ``(out_dir, run, n_boot) -> metrics`` for a benchmark with its own scoring; it writes
            metrics.json and report.md. None: ``j1.eval.scoring`` under ``scheme``.
    """

    name: str
    parse_row: RowParser
    scheme: str = "mean"
    default_ties: str = "keep"
    hf_split: str = "train"
    splits: tuple[str, ...] | None = None
    prompts: Callable | None = None
    score: Callable | None = None

    def __post_init__(self) -> None:
        get_scorer(self.scheme)  # an unknown scheme fails when the benchmark is defined


def str_field(row: Mapping, key: str, where: str) -> str:
    return require(row, key, str, where)


def int_label(row: Mapping, key: str, where: str, allowed: Mapping[Any, str]) -> str:
    """A label stored as int or numeric string, mapped through ``allowed``."""
    value = require(row, key, (int, str), where)
    try:
        norm = int(value)
    except ValueError:
        norm = None
    if norm not in allowed or isinstance(value, bool):
        raise RowError(f"{where}: field {key!r} is {value!r}; expected one of {sorted(allowed)}")
    return allowed[norm]


def iter_rows(data: str, hf_split: str) -> Iterator[tuple[str, dict]]:
    """``(where, row)`` from a local JSONL/JSON/Parquet file, or from the Hub when ``data`` is not a
    local path (``where`` is ``file:line`` or ``id[split]:row``)."""
    path = Path(data)
    if path.exists():
        if path.is_dir():
            raise RowError(f"--data {data}: is a folder; give a .jsonl, .json or .parquet file")
        for lineno, row in read_json_rows(path):
            yield f"{path}:{lineno}", row
        return
    if data.count("/") != 1 or data.startswith((".", "/")) or Path(data).suffix in {".jsonl", ".json", ".parquet"}:
        raise FileNotFoundError(f"--data {data}: no such file (and not a Hugging Face dataset id 'owner/name')")
    try:
        from datasets import load_dataset

        dataset = load_dataset(data, split=hf_split)
    except Exception as exc:  # noqa: BLE001 - datasets raises many types (network, auth, missing split)
        raise RuntimeError(
            f"--data {data}: not a local file, and loading it from the Hugging Face Hub (split {hf_split!r}) "
            f"failed: {type(exc).__name__}: {exc}. Without network, download the dataset elsewhere and pass "
            f"the file (JSONL/JSON/Parquet); pick another split with --hf-split."
        ) from exc
    for i, row in enumerate(dataset, start=1):
        yield f"{data}[{hf_split}]:{i}", dict(row)


def load_items(
    bench: Benchmark,
    data: str,
    *,
    split: str | None = None,
    ties: str | None = None,
    limit: int | None = None,
    hf_split: str | None = None,
) -> list[Item]:
    """The benchmark's items from ``data``.

    ``--limit K`` keeps the first K rows in file order among the rows that pass the split and tie
    filters (a PPE correctness row yields one item per conflict pair; all of its pairs are kept).
    Item ids are made unique by appending ``#n`` to repeats.

    Raises:
        RowError: a malformed row (``file:line: field ...``), or no rows left after the filters.
    """
    if split is not None and (bench.splits is None or split not in bench.splits):
        raise ValueError(f"--split {split!r}: benchmark {bench.name!r} accepts {list(bench.splits or [])}")
    ties = ties or bench.default_ties
    if ties not in ("keep", "drop"):
        raise ValueError(f"--ties {ties!r}: choose keep or drop")
    ctx = Context(source=data, split=split)
    items: list[Item] = []
    rows = dropped = 0
    for where, row in iter_rows(data, hf_split or bench.hf_split):
        if limit is not None and rows >= limit:
            break
        got = bench.parse_row(row, where, ctx)
        if ties == "drop":
            kept = [it for it in got if not it.has_tie]
            dropped += len(got) - len(kept)
            got = kept
        if got:
            rows += 1
            items.extend(got)
    if dropped:
        log.info("%s: dropped %d tie-labelled items (--ties drop)", bench.name, dropped)
    if not items:
        raise RowError(f"--data {data}: no {bench.name} items" + (f" in split {split!r}" if split else ""))
    seen: Counter = Counter()
    for it in items:
        seen[it.id] += 1
        if seen[it.id] > 1:
            it.id = f"{it.id}#{seen[it.id]}"
    return items
