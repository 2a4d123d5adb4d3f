"""From DIR/judgments.jsonl to DIR/metrics.json: read the judged prompts back, group them per item,
parse the raw texts and aggregate the first k samples (no model needed: ``j1 score``).

A judgments line (:class:`j1.schema.JudgmentLine`) is one judged prompt (a "slot": one order of
one pair, or one response scored alone) with every sample's raw text, plus what scoring needs of its
item (category and pairs)::

    {"schema_version": 1, "item": "…", "category": "…", "pairs": [["A", "B", "A"]], "slot": "AB",
     "texts": ["<think>…", …], "finish_reasons": ["stop", …], "completion_tokens": [412, …],
     "error": null}

A slot whose request failed for good has ``"error": "…"`` and no texts; a resumed run asks it
again and a later line for the same slot replaces it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from j1.eval import metrics as M
from j1.eval.items import pair_slot, required_slots
from j1.formats import JudgeFormat
from j1.formats.thoughts import thought_spread
from j1.judging.judge import compare_means, majority, to_sample
from j1.pairs import ORDERS
from j1.schema import JudgmentLine, RowError, iter_jsonl

log = logging.getLogger(__name__)


@dataclass
class ItemRecord:
    """An item's judged slots as read back from judgments.jsonl."""

    id: str
    category: str
    pairs: list[tuple[str, str, str]]
    slots: dict[str, JudgmentLine] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # slot -> its line in judgments.jsonl (1-based)

    def complete(self, pairwise: bool) -> bool:
        return all(s in self.slots for s in required_slots(self.pairs, pairwise))


def judgment_line(item, slot: str, completions=None, error: str | None = None) -> JudgmentLine:
    """The judgments.jsonl record of one judged prompt (or of one that failed, with ``error``)."""
    comps = completions or []
    return JudgmentLine(
        item=item.id,
        category=item.category,
        pairs=[tuple(p) for p in item.pairs],
        slot=slot,
        texts=[c.text for c in comps],
        finish_reasons=[c.finish_reason for c in comps],
        completion_tokens=[c.completion_tokens for c in comps],
        error=error,
    )


def read_judgments(path: str | Path) -> dict[str, ItemRecord]:
    """Items by id, in first-seen order. A later line for a slot replaces an earlier *error* line;
    a second successful line for a slot is a duplicate and raises (it would mean a judgment was
    asked twice). Tolerates a torn last line (a crash mid-append).

    Raises:
        RowError: a malformed line (``path:line: field …``) or inconsistent item metadata.
    """
    records: dict[str, ItemRecord] = {}
    for lineno, obj in iter_jsonl(path, allow_torn_tail=True):
        where = f"{path}:{lineno}"
        line = JudgmentLine.from_row(obj, where)
        rec = records.get(line.item)
        if rec is None:
            rec = records[line.item] = ItemRecord(line.item, line.category, line.pairs)
        elif rec.pairs != line.pairs or rec.category != line.category:
            raise RowError(f"{where}: item {line.item!r} has different 'pairs'/'category' than on an earlier line")
        old = rec.slots.get(line.slot)
        if old is not None and old.error is None:
            raise RowError(f"{where}: slot {line.slot!r} of item {line.item!r} was already judged on an earlier line")
        rec.slots[line.slot] = line
        rec.lines[line.slot] = lineno
    return records


def pair_outcome(fmt: JudgeFormat, rec: ItemRecord, p: int, k: int) -> M.PairOutcome:
    """The verdicts of pair ``p`` from the first ``k`` samples of each of its slots."""
    first, second, label = rec.pairs[p]
    if fmt.pairwise:
        ab, ba = (majority(to_sample(fmt, t, order).verdict
                           for t in rec.slots[pair_slot(rec.pairs, p, order)].texts[:k]).value
                  for order in ORDERS)
        return M.PairOutcome(label, ab=ab, ba=ba)
    # Pointwise: each response's mean score over its valid samples; the higher mean wins.
    _, _, verdict = compare_means(*([to_sample(fmt, t, "A") for t in rec.slots[name].texts[:k]] for name in (first, second)))
    return M.PairOutcome(label, verdict=verdict.value)


def outcomes(fmt: JudgeFormat, records: Sequence[ItemRecord], k: int) -> list[M.ItemOutcome]:
    return [M.ItemOutcome(r.id, r.category, tuple(pair_outcome(fmt, r, p, k) for p in range(len(r.pairs))))
            for r in records]


def thought_stats(fmt: JudgeFormat, records: Sequence[ItemRecord]) -> dict | None:
    """How the judge's thoughts vary over the first sample of every judged prompt: ``thought_spread``'s keys
    (median words, share distinct, share another prompt also got) and ``with_thought``, the share of prompts
    whose answer has a thought; None when no answer has one (a format or judge that writes none).

    >>> from j1.formats import get_format
    >>> line = lambda slot, t: JudgmentLine("i", "c", [("A", "B", "A")], slot, [t])
    >>> rec = ItemRecord("i", "c", [("A", "B", "A")], {"AB": line("AB", "<think>x y</think>"), "BA": line("BA", "z")})
    >>> thought_stats(get_format("pav"), [rec])
    {'thought_median_words': 2.0, 'thought_distinct': 1.0, 'thought_shared': 0.0, 'with_thought': 0.5}
    """
    slots = [(f"{r.id}|{name}", line.texts[0]) for r in records for name, line in r.slots.items() if line.texts]
    thoughts = [(key, t) for key, t in ((key, fmt.parse(text).thought) for key, text in slots) if t and t.strip()]
    if not thoughts:
        return None
    return {**thought_spread(thoughts), "with_thought": len(thoughts) / len(slots)}


def compute_metrics(
    fmt: JudgeFormat,
    records: dict[str, ItemRecord],
    *,
    benchmark: str,
    scheme: str,
    model: str,
    samples: int,
    seed: int = 0,
    n_boot: int = 1000,
) -> dict:
    """The metrics.json document for the complete items in ``records``.

    Scaling: metrics at k = 1, 2, 4, …, ``samples`` from the first k samples of each prompt.
    """
    # Sorted by id: the bootstrap resamples by position, so the file's (completion) order must not
    # matter, or a resumed run would get other intervals than an uninterrupted one.
    done = sorted((r for r in records.values() if r.complete(fmt.pairwise)), key=lambda r: r.id)
    if len(done) < len(records):
        log.warning("%d of %d items are not fully judged yet; scoring the %d complete ones",
                    len(records) - len(done), len(records), len(done))
    if not done:
        raise ValueError("no fully judged items to score")
    errors = sum(s.error is not None for r in done for s in r.slots.values())
    full = outcomes(fmt, done, samples)
    return {
        "benchmark": benchmark,
        "format": fmt.name,
        "model": model,
        "n": len(done),
        "overall": M.metric_block(full, scheme, seed=seed, n_boot=n_boot),
        "categories": M.category_blocks(full, scheme, seed=seed, n_boot=n_boot),
        "scaling": {str(k): M.metric_block(outcomes(fmt, done, k), scheme, seed=seed, n_boot=n_boot)
                    for k in M.scaling_ks(samples)},
        "samples": samples,
        "thoughts": thought_stats(fmt, done),
        "errors": errors,
        "incomplete": len(records) - len(done),
    }
