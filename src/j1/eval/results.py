"""DIR/results.jsonl: every judged item once, in the source's order, as a person reads it (``j1 show``) and
as pandas or ``datasets`` load it. judgments.jsonl is the run's log (one raw line per judged prompt, in
the order they finished, for ``--resume``); results.jsonl is its reading, rewritten whole (temp + rename)
when a run ends, so a resumed run's file is the same as an uninterrupted one's.

A line (:class:`j1.schema.ResultRecord`, fields in docs/evaluation.md) holds the item (id, category,
where it was read, prompt and responses), one ``judgments`` entry per judge prompt (the order shown, the
parsed verdict or scores over the first ``k`` samples, valid or the reason it is not, right or wrong,
the margin where the format gives scores, the first sample's thought and the judgments.jsonl line with
every sample), one ``pairs`` entry per pair (the verdict of its orders together, right in both,
flipped) and the item's accuracy under the benchmark's own rule. Verdicts name the original responses:
``A`` is a pair's first response, ``pick`` its name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from j1.eval import metrics as M
from j1.eval.items import Item, pair_slot, scored_responses
from j1.eval.scoring import ItemRecord
from j1.formats import JudgeFormat
from j1.judging.judge import Sample, compare_means, first_error, majority, mean_score, mean_scores, to_sample
from j1.pairs import ORDERS, Verdict, combine_orders, flipped
from j1.runs.atomic import write_jsonl_atomic
from j1.schema import ResultRecord

NOT_JUDGED = "not judged (the run stopped before this prompt; --resume asks it)"


@dataclass(frozen=True)
class View:
    """What the judge said about one item: ``judgments`` (one entry per judge prompt), ``pairs`` (one per
    pair; none where the prompts are not pairs, as RewardBench 2's four-way picks), the item's
    ``accuracy`` under the benchmark's rule, whether it was right in every order or rotation
    (``consistent``) and whether a verdict changed with the order (``flipped``). The last three are None
    where there is no label, or the item is not fully judged."""

    judgments: list[dict]
    pairs: list[dict]
    complete: bool
    accuracy: float | None = None
    consistent: bool | None = None
    flipped: bool | None = None


def slot_samples(fmt: JudgeFormat, rec: ItemRecord | None, slot: str, shown_as: str, k: int) -> list[Sample]:
    """The first ``k`` samples of one judged prompt, parsed (``shown_as``: its order, or ``A`` for a response
    scored alone); none when it was not judged or its request failed."""
    line = rec.slots.get(slot) if rec is not None else None
    return [] if line is None else [to_sample(fmt, t, shown_as) for t in line.texts[:k]]


def entry(rec: ItemRecord | None, slot: str, shown: list[str], samples: Sequence[Sample], *, order: str | None,
          verdict: str | None, pick: str | None, scores: dict | None, right: bool | None, margin: float | None,
          thoughts: bool, invalid: bool) -> dict:
    """One ``judgments`` entry. ``invalid``: the prompt gave no verdict or score; its ``reason`` is the
    failed request's error, or the first invalid sample's parser reason."""
    line = rec.slots.get(slot) if rec is not None else None
    if line is None:
        reason = NOT_JUDGED
    elif line.error is not None:
        reason = line.error
    else:
        # Every sample valid but no verdict: a four-way item's picks split evenly (no plurality).
        reason = (first_error(samples) or "no single verdict: the samples' picks split evenly") if invalid else None
    return {
        "slot": slot, "order": order, "shown": shown, "verdict": verdict, "pick": pick, "scores": scores,
        "votes": [s.verdict for s in samples], "valid": reason is None, "reason": reason,
        "right": right, "margin": margin,
        "thought": samples[0].thought if thoughts and samples else None,
        "line": rec.lines.get(slot) if rec is not None else None,
    }


def _margin(scores: dict | None, first: str, second: str) -> float | None:
    if not scores or scores.get(first) is None or scores.get(second) is None:
        return None
    return scores[first] - scores[second]


def pair_view(fmt: JudgeFormat, item: Item, rec: ItemRecord | None, *, k: int, scheme: str | None,
              thoughts: bool = True) -> View:
    """The view of an item judged pair by pair: each pair in both orders, or each response alone
    (pointwise). ``scheme``: the benchmark's scoring rule; None when the labels mean nothing (``j1
    consistency``, ``j1 label``), so nothing is right or wrong."""
    labelled = scheme is not None
    judgments: list[dict] = []
    pairs: list[dict] = []
    outcomes: list[M.PairOutcome] = []
    if not fmt.pairwise:
        per_name = {}
        scored = set(scored_responses(item.pairs))
        for name in (n for n in item.responses if n in scored):  # in the item's order
            samples = slot_samples(fmt, rec, name, "A", k)
            score = mean_score(samples)
            per_name[name] = samples
            judgments.append(entry(rec, name, [name], samples, order=None, verdict=None, pick=None,
                                   scores={name: score}, right=None, margin=None, thoughts=thoughts,
                                   invalid=score is None))
    for p, (first, second, label) in enumerate(item.pairs):
        names = {"A": first, "B": second}
        if fmt.pairwise:
            verdicts = {}
            margins = []
            for o in ORDERS:
                slot = pair_slot(item.pairs, p, o)
                samples = slot_samples(fmt, rec, slot, o.value, k)
                verdict = majority(s.verdict for s in samples).value
                means = mean_scores(samples)
                scores = None if means is None else {names[x]: v for x, v in means.items()}
                margin = _margin(scores, first, second)
                margins.append(margin)
                verdicts[o] = verdict
                shown = [first, second] if o.value == "AB" else [second, first]
                judgments.append(entry(rec, slot, shown, samples, order=o.value, verdict=verdict,
                                       pick=names.get(verdict), scores=scores,
                                       right=verdict == label if labelled else None, margin=margin,
                                       thoughts=thoughts, invalid=verdict == Verdict.INVALID))
            ab, ba = (verdicts[o] for o in ORDERS)
            both = [m for m in margins if m is not None]
            pairs.append({"first": first, "second": second, "label": label if labelled else None,
                          "verdict": combine_orders(ab, ba),
                          "right": (ab == label == ba) if labelled else None, "flipped": flipped(ab, ba),
                          "margin": sum(both) / len(both) if len(both) == len(margins) else None})
            outcomes.append(M.PairOutcome(label, ab=ab, ba=ba))
        else:
            sa, sb, verdict = compare_means(per_name[first], per_name[second])
            pairs.append({"first": first, "second": second, "label": label if labelled else None,
                          "verdict": verdict.value, "right": verdict.value == label if labelled else None,
                          "flipped": None, "margin": None if sa is None or sb is None else sa - sb})
            outcomes.append(M.PairOutcome(label, verdict=verdict.value))
    complete = rec is not None and rec.complete(fmt.pairwise)
    flips = [p["flipped"] for p in pairs if p["flipped"] is not None]
    flip = any(flips) if complete and flips else None
    if not (labelled and complete):
        return View(judgments, pairs, complete, flipped=flip)
    scores = M.get_scorer(scheme).item_scores(M.ItemOutcome(item.id, item.category, tuple(outcomes)))
    return View(judgments, pairs, complete, scores["accuracy"], scores["consistent_accuracy"] == 1.0, flip)


def one_label(item: Item, labelled: bool) -> str | None:
    """The item's label when all its pairs share one (a pair's own label is in ``pairs``)."""
    labels = {label for _, _, label in item.pairs}
    return labels.pop() if labelled and len(labels) == 1 else None


def result_record(command: str, index: int, item: Item, view: View, *, labelled: bool, texts: bool,
                  outcome: dict | None = None) -> ResultRecord:
    """The results.jsonl line of ``item`` (``index``: its place in the source's order); ``texts`` False
    keeps the responses' names only."""
    return ResultRecord(
        command=command, index=index, id=item.id, category=item.category, source=item.source,
        prompt=item.prompt if texts else None,
        responses=[{"name": name, "text": text if texts else None} for name, text in item.responses.items()],
        label=one_label(item, labelled), judgments=view.judgments, pairs=view.pairs, accuracy=view.accuracy,
        consistent=view.consistent, flipped=view.flipped, complete=view.complete, outcome=outcome,
        meta=dict(item.meta) or None, criteria=item.criteria if texts else None,
        reference=item.reference if texts else None,
    )


Viewer = Callable[[Item, "ItemRecord | None"], View]


def write_results(path: str | Path, command: str, items: Sequence[Item], records: dict[str, ItemRecord],
                  view: Viewer, *, labelled: bool, texts: bool, outcomes: dict[str, dict] | None = None) -> int:
    """Write ``path`` whole (temp + rename): one line per item of ``items``, in their order. ``view`` reads an
    item's judgments (its record, None if none was judged); ``outcomes``: a command's own result per item id
    (``j1 label``'s preference, ``j1 attack``'s attack). Returns the count."""
    outcomes = outcomes or {}
    rows = [result_record(command, index, item, view(item, records.get(item.id)), labelled=labelled, texts=texts,
                          outcome=outcomes.get(item.id)) for index, item in enumerate(items)]
    return write_jsonl_atomic(path, rows)
