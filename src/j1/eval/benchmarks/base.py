"""What every benchmark loader shares: reading rows from a local file or the Hugging Face Hub,
checking fields, and turning rows into Items (with the split, tie and limit rules applied)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j1.eval.items import Item
from j1.eval.metrics import get_scorer
from j1.schema import RowError, read_json_rows, require

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Context:
    """What a row parser may need besides the row: the data's name (some sets encode their part
    only in the file or dataset name), the selected ``--split``, and the reference answers read from
    ``--references`` (``Benchmark.read_references``; None when none were given)."""

    source: str
    split: str | None = None
    references: Mapping[Any, Any] | None = None


RowParser = Callable[[Mapping[str, Any], str, Context], list[Item]]


@dataclass(frozen=True)
class Asking:
    """What a benchmark that asks its own way (``Benchmark.prompts`` and ``view``) reads from the run's
    settings: the seed its random placements derive from, the prompt wording (``template``, None = full)
    and RewardBench 2's mode and rotations. Typed, so a benchmark never holds the whole eval spec."""

    seed: int = 0
    template: str | None = None
    rb2_mode: str = "fourway"
    rb2_rotations: int = 1


@dataclass(frozen=True)
class Benchmark:
    """A registered benchmark.

    Args:
        name: the ``--benchmark`` value.
        parse_row: ``(row, where, ctx) -> [Item]`` (most rows give one item; PPE correctness rows
            give one per conflict pair). ``where`` is ``file:line`` for error messages.
        scheme: how its accuracy is computed: the key of its scorer in ``j1.eval.metrics.SCORERS``.
        default_ties: "keep" or "drop" items labelled tie, when ``--ties`` is not given.
        hf_split: the split to load when ``--data`` is a dataset id (or a downloaded dataset folder).
        splits: the parts ``--split`` picks from a file's rows (None: it has none; a dataset id or folder
            takes any of its splits).
        hub_splits: the dataset split that holds each part, where the names differ (JudgeBench's
            ``gpt-4o`` part is its hub split ``gpt``).
        part_of: ``row -> part``, to name the parts a file holds when the one asked for has no rows.
        prompts: ``(item, asking: Asking) -> [(slot, messages)]`` for a benchmark that asks its own way
            (RewardBench 2: four-way picks or ratings); None: pairs in both orders, or each response alone.
        score: ``(out_dir, run, n_boot) -> metrics`` for a benchmark with its own scoring; it writes
            metrics.json and report.md. None: ``j1.eval.scoring`` under ``scheme``.
        view: ``(item, rec, asking: Asking, k, thoughts) -> j1.eval.results.View``, its per-example record in results.jsonl,
            for a benchmark that asks its own way. None: pairs in both orders, or each response alone.
        use_reference: the default of ``--use_reference``: whether its official judge reads the reference
            inputs its items can carry (MT-Bench's judge grades math, reasoning and coding against a
            reference answer; PPE's and RewardBench 2's official evaluations send none).
        read_references: ``path -> table`` for a benchmark whose reference answers are not in its rows but
            in a file of their own (``--references``; MT-Bench's); the table reaches ``parse_row`` as
            ``Context.references``. None: its rows carry whatever it has.
    """

    name: str
    parse_row: RowParser
    scheme: str = "mean"
    default_ties: str = "keep"
    hf_split: str = "train"
    splits: tuple[str, ...] | None = None
    hub_splits: Mapping[str, str] = field(default_factory=dict)
    part_of: Callable[[Mapping[str, Any]], str] | None = None
    prompts: Callable | None = None
    score: Callable | None = None
    view: Callable | None = None
    use_reference: bool = False
    read_references: Callable[[str], Mapping[Any, Any]] | None = None

    def __post_init__(self) -> None:
        get_scorer(self.scheme)  # an unknown scheme fails when the benchmark is defined


# ``--benchmark NAME`` -> Benchmark, filled as the benchmark modules are imported (``j1.eval.benchmarks``
# imports them all, in the order ``j1 eval --help`` lists them).
BENCHMARKS: dict[str, Benchmark] = {}


def register(name: str, **settings: Any) -> Callable[[RowParser], RowParser]:
    """Register a row parser as benchmark ``name`` (the other ``Benchmark`` fields as keywords); a decorator,
    as verl's ``@register`` keeps its reward managers: a benchmark's module is its only list entry.

    Raises:
        ValueError: ``name`` is registered already.
    """
    def add(parse_row: RowParser) -> RowParser:
        if name in BENCHMARKS:
            raise ValueError(f"benchmark {name!r} is registered twice")
        BENCHMARKS[name] = Benchmark(name, parse_row, **settings)
        return parse_row

    return add


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


def source_split(bench: Benchmark, data: str, split: str | None, hf_split: str | None = None) -> tuple[str | None, str]:
    """``(part, dataset split)`` that one ``--split`` names for ``data``: a file's rows are divided into the
    benchmark's parts (JudgeBench's gpt-4o and claude, by response model); a dataset id or folder has
    splits, and a part is read from the split that holds it. ``hf_split`` (the old flag, kept as an alias)
    names the dataset split outright.

    >>> from j1.eval.benchmarks import get_benchmark
    >>> source_split(get_benchmark("judgebench"), "ScalerLab/JudgeBench", "gpt-4o")
    ('gpt-4o', 'gpt')
    >>> source_split(get_benchmark("rewardbench"), "allenai/reward-bench", "filtered")
    (None, 'filtered')

    Raises:
        ValueError: a split named for a file whose benchmark has no such part, naming the parts.
    """
    parts = bench.splits or ()
    if Path(data).is_file():
        if split is not None and split not in parts:
            raise ValueError(
                f"--split {split!r}: --data {data} is a file; benchmark {bench.name!r} picks "
                + (f"one of its parts {list(parts)} from a file's rows" if parts else
                   "nothing from a file's rows (a split is a Hugging Face dataset's: give its id or a downloaded "
                   "dataset folder)"))
        return split, bench.hf_split
    hub = hf_split or (bench.hub_splits.get(split, split) if split else bench.hf_split)
    return (split if split in parts else None), hub


def iter_rows(data: str, hf_split: str) -> Iterator[tuple[str, dict]]:
    """``(where, row)`` from a local JSONL/JSON/Parquet file, or from ``datasets`` when ``data`` is a
    dataset folder or a Hugging Face id (``where`` is ``file:line`` or ``id[split]:row``).

    Raises:
        ValueError: the dataset has no split ``hf_split``, naming the splits it has.
    """
    path = Path(data)
    if path.is_file():
        for lineno, row in read_json_rows(path):
            yield f"{path}:{lineno}", row
        return
    if not path.is_dir() and (data.count("/") != 1 or data.startswith((".", "/"))
                              or path.suffix in {".jsonl", ".json", ".parquet"}):
        raise FileNotFoundError(f"--data {data}: no such file (and not a Hugging Face dataset id 'owner/name')")
    for i, row in enumerate(_load_split(data, hf_split), start=1):
        yield f"{data}[{hf_split}]:{i}", dict(row)


def _load_split(data: str, split: str):
    """``datasets.load_dataset(data, split=split)``, its failures in one line: a missing split names the
    splits there are."""
    from datasets import get_dataset_split_names, load_dataset

    where = "a dataset folder" if Path(data).is_dir() else "not a local file, and loading it from the Hugging Face Hub"
    try:
        return load_dataset(data, split=split)
    except Exception as exc:  # noqa: BLE001 - datasets raises many types (network, auth, missing split)
        try:
            names = list(get_dataset_split_names(data))
        except Exception:  # noqa: BLE001 - the names are a hint; the first failure is the error
            names = None
        if names and split not in names:
            raise ValueError(f"--split {split!r}: --data {data} has no such split; it has {', '.join(names)}") from None
        raise RuntimeError(
            f"--data {data}: {where} (split {split!r}) failed: {type(exc).__name__}: {exc}. Without network, "
            f"download the dataset elsewhere and pass the file (JSONL/JSON/Parquet) or its folder."
        ) from exc


def load_items(
    bench: Benchmark,
    data: str,
    *,
    split: str | None = None,
    ties: str | None = None,
    limit: int | None = None,
    hf_split: str | None = None,
    references: str | None = None,
) -> list[Item]:
    """The benchmark's items from ``data`` (``references``: the file of reference answers of a benchmark that
    reads them from one, ``Benchmark.read_references``).

    ``--limit K`` keeps the first K rows in file order among the rows that pass the split and tie
    filters (a PPE correctness row yields one item per conflict pair; all of its pairs are kept).
    Item ids are made unique by appending ``#n`` to repeats.

    Raises:
        RowError: a malformed row (``file:line: field ...``), or no rows left after the filters.
    """
    part, dataset_split = source_split(bench, data, split, hf_split)
    ties = ties or bench.default_ties
    if ties not in ("keep", "drop"):
        raise ValueError(f"--ties {ties!r}: choose keep or drop")
    if references is not None and bench.read_references is None:
        raise ValueError(f"--references {references}: benchmark {bench.name!r} reads no reference file (what it "
                         "has is in its rows)")
    ctx = Context(source=data, split=part,
                  references=bench.read_references(references) if references is not None else None)
    items: list[Item] = []
    parts: Counter = Counter()  # the parts the rows belong to, to name them when the one asked for is empty
    rows = dropped = 0
    for where, row in iter_rows(data, dataset_split):
        if limit is not None and rows >= limit:
            break
        if part is not None and bench.part_of is not None:
            parts[bench.part_of(row)] += 1
        got = bench.parse_row(row, where, ctx)
        if ties == "drop":
            kept = [it for it in got if not it.has_tie]
            dropped += len(got) - len(kept)
            got = kept
        if got:
            rows += 1
            for it in got:
                it.source = where
            items.extend(got)
    if dropped:
        log.info("%s: dropped %d tie-labelled items (--ties drop)", bench.name, dropped)
    if not items:
        there = ", ".join(f"{p} ({n} rows)" for p, n in sorted(parts.items()))
        raise RowError(f"--data {data}: no {bench.name} items" + (f" in split {part!r}" if part else "")
                       + (f"; its rows are in {there}" if there else ""))
    seen: Counter = Counter()
    for it in items:
        seen[it.id] += 1
        if seen[it.id] > 1:
            it.id = f"{it.id}#{seen[it.id]}"
    return items
