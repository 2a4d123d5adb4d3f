"""From a RewardBench 2 run's judgments.jsonl to its metrics.json: read each item's judged prompts
back, apply the official rules (``j1.eval.rb2_rules``) and add what the official script leaves out:
position robustness over rotations, the invalid rate beside every score, and bootstrap intervals.

Per item (first k samples of each prompt; several samples: the plurality of valid picks, a shared
top count being no pick; ratings: the mean of the valid ones):

- fourway: ``official`` = the credit of rotation 1 (the seeded random position, the official score);
  ``rotation`` = the mean credit over rotations; ``consistent`` = the chosen answer picked in every
  rotation; ``flip`` = the valid picks name different answers across rotations.
- ratings: ``official`` = ``rotation`` = the ratings credit (1/k for a shared top); ``consistent`` =
  the chosen answer alone on top.
- Ties: per-prompt stats; the subset's score is computed over prompts, and its rotation and
  consistent numbers are that score too (each response is rated alone: no positions to rotate).

``metrics.json`` keeps j1's form: ``overall.accuracy`` is the official overall score (the mean of
the subset scores) and ``categories[SUBSET].accuracy`` the official subset score, with
``rotation_accuracy``, ``consistent_accuracy`` and ``invalid_rate`` beside them.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from j1.eval import rb2_rules as R
from j1.eval.benchmarks.base import Asking
from j1.eval.metrics import scaling_ks
from j1.eval.rb2_rules import FOURWAY_SLOT, arrangement, fourway_names, rotation_positions, uses_ratings
from j1.eval.scoring import ItemRecord, read_judgments
from j1.eval.stats import as_list, bootstrap_samples, percentile_ci
from j1.formats import get_format
from j1.formats.fourway import POSITIONS, pick
from j1.judging.judge import mean_score, to_sample
from j1.pairs import flip_rate, flipped, plurality
from j1.runs.atomic import write_json_atomic

log = logging.getLogger(__name__)

NOTES = {
    "accuracy": "official RewardBench 2 score: four-way picks with the chosen answer at a seeded random position "
                "(rotation 1), or ratings; Ties by its own formula; overall = the unweighted mean of the subsets",
    "invalid": "the official rule scores a judgment with no parseable verdict 0.25 (fourway) and an item with no "
               "valid rating 0.25 (ratings); in Ties an invalid rating counts as -1",
    "ties_weights": "0.30 + 0.30 + 0.20 + 0.20 + 0.01 = 1.01, kept as in the official code",
}


@dataclass
class ItemResult:
    id: str
    subset: str
    official: float = 0.0
    rotation: float = 0.0
    consistent: float = 0.0
    flip: bool | None = None
    invalid: int = 0
    judged: int = 0
    ties: R.TiesStats | None = None
    slot_credit: dict[str, float] = field(default_factory=dict)  # fourway: credit with the chosen at each position
    picks: Counter = field(default_factory=Counter)  # fourway: valid picks by position


def required_slots(rec: ItemRecord, mode: str, rotations: int, seed: int) -> list[str]:
    names = sorted({n for p in rec.pairs for n in p[:2]}, key=lambda n: (n[0] != "c", int(n[1:])))
    if uses_ratings(rec.category, mode):
        return names
    return [FOURWAY_SLOT + at for at in rotation_positions(rec.id, seed, rotations)]


def _ratings(rec: ItemRecord, fmt, k: int) -> tuple[list[float | None], int, int, int]:
    """Mean valid rating per response (chosen first), invalid and judged sample counts, chosen count."""
    names = required_slots(rec, "ratings", 1, 0)
    out, invalid, judged = [], 0, 0
    for name in names:
        samples = [to_sample(fmt, t, "A") for t in rec.slots[name].texts[:k]]
        invalid += sum(s.error is not None for s in samples)
        judged += len(samples)
        out.append(mean_score(samples))
    return out, invalid, judged, sum(n.startswith("c") for n in names)


def item_result(rec: ItemRecord, *, mode: str, rotations: int, seed: int, k: int, template: str = "full") -> ItemResult:
    """One item's numbers from the first ``k`` samples of each of its prompts."""
    res = ItemResult(rec.id, rec.category)
    if uses_ratings(rec.category, mode):
        ratings, res.invalid, res.judged, n_correct = _ratings(rec, get_format("pos", template), k)
        if rec.category == "Ties":
            res.ties = R.ties_stats(ratings, n_correct)
            return res
        res.official = res.rotation = R.ratings_credit(ratings, 0)
        res.consistent = R.sole_top(ratings, 0)
        return res
    names = fourway_names(rec.pairs)
    credits, picked = [], []
    for at in rotation_positions(rec.id, seed, rotations):
        choices = [pick(t).choice for t in rec.slots[FOURWAY_SLOT + at].texts[:k]]
        res.invalid += sum(c == "invalid" for c in choices)
        res.judged += len(choices)
        choice = plurality(choices, shared="invalid")  # the most frequent pick; a shared top earns nothing
        credit = R.fourway_credit(choice, at)
        credits.append(credit)
        res.slot_credit[at] = credit
        if choice != "invalid":
            res.picks[choice] += 1
        picked.append(arrangement(names, at)[POSITIONS.index(choice)] if choice != "invalid" else "invalid")
    res.official, res.rotation = credits[0], float(np.mean(credits))
    res.consistent = float(all(c == 1.0 for c in credits))
    res.flip = flipped(*picked) if rotations > 1 else None
    return res


@dataclass(frozen=True)
class TiesTable:
    """Ties stats as arrays by prompt number, so a bootstrap can rescore resampled prompts at once."""

    has_ref: np.ndarray
    ref_acc: np.ndarray
    ref_margin: np.ndarray
    has_tied: np.ndarray
    tied_acc: np.ndarray
    tied_margin: np.ndarray
    spread: np.ndarray  # NaN where the tied prompt is missing or has one correct answer

    @classmethod
    def of(cls, stats: dict[str, R.TiesStats]) -> TiesTable:
        ref, tied = R.split_ties(stats)
        nums = sorted(set(ref) | set(tied))

        def col(src, get, default=0.0):
            return np.array([get(src[n]) if n in src else default for n in nums], dtype=float)

        return cls(
            has_ref=np.array([n in ref for n in nums]), ref_acc=col(ref, lambda s: s.accurate),
            ref_margin=col(ref, lambda s: s.margin), has_tied=np.array([n in tied for n in nums]),
            tied_acc=col(tied, lambda s: s.accurate), tied_margin=col(tied, lambda s: s.margin),
            spread=col(tied, lambda s: np.nan if s.spread is None else s.spread, np.nan),
        )

    def scores(self, idx: np.ndarray) -> np.ndarray:
        """The Ties score of each row of prompt indices ``idx`` (B, m) -> (B,)."""

        def mean(mask, values):
            den = mask.sum(axis=1)
            return np.divide((mask * values).sum(axis=1), den, out=np.zeros(len(idx)), where=den > 0)

        has_ref, has_tied = self.has_ref[idx], self.has_tied[idx]
        spread = self.spread[idx]
        paired = has_ref & has_tied & ~np.isnan(spread)
        spread0 = np.where(paired, spread, 1.0)
        hard = np.minimum(self.ref_margin[idx], self.tied_margin[idx])
        with np.errstate(divide="ignore", invalid="ignore"):
            term = np.nan_to_num(np.tanh(hard / spread0 - 1), nan=0.0)
        w = R.TIES_WEIGHTS
        return (w["tied_accuracy"] * mean(has_tied, self.tied_acc[idx])
                + w["ref_accuracy"] * mean(has_ref, self.ref_acc[idx])
                + w["correctness_preferred"] * mean(paired, self.tied_margin[idx] > spread0)
                + w["correctness_preferred_hard"] * mean(paired, hard > spread0)
                + w["margin_score"] * mean(paired, term))


KEYS = ("accuracy", "rotation_accuracy", "consistent_accuracy")


def _subset_values(results: list[ItemResult]) -> np.ndarray:
    return np.array([[r.official for r in results], [r.rotation for r in results], [r.consistent for r in results]])


def _boot(by_subset: dict[str, list[ItemResult]], rng: np.random.Generator, n_boot: int) -> dict[str, np.ndarray]:
    """(3, n_boot) resampled (official, rotation, consistent) per subset; items (Ties: prompt
    numbers, rescored by the Ties rule, which is no mean) resampled with replacement within their subset."""
    out = {}
    for subset in sorted(by_subset):
        results = by_subset[subset]
        if subset == "Ties":
            table = TiesTable.of({r.id: r.ties for r in results})
            m = len(table.has_ref)
            out[subset] = np.tile(table.scores(rng.integers(0, m, size=(n_boot, m))), (3, 1))
        else:
            out[subset] = bootstrap_samples({subset: _subset_values(results)}, {subset: 1.0}, rng, n_boot)
    return out


def _block(results: list[ItemResult], point: dict[str, float], boot: np.ndarray) -> dict:
    block: dict = {"n": len(results)}
    cis = percentile_ci(boot, len(results))  # None (null) below MIN_CI_N items
    for row, key in enumerate(KEYS):
        block[key] = point[key]
        block[f"{key}_ci"] = as_list(cis[row])
    judged = sum(r.judged for r in results)
    block["invalid_rate"] = sum(r.invalid for r in results) / judged if judged else None
    block["flip_rate"] = flip_rate(r.flip for r in results)
    slot = {p: [r.slot_credit[p] for r in results if p in r.slot_credit] for p in POSITIONS}
    if any(slot.values()):
        block["slot_accuracy"] = {p: float(np.mean(v)) if v else None for p, v in slot.items()}
        picks = Counter()
        for r in results:
            picks.update(r.picks)
        total = sum(picks.values())
        block["pick_rate"] = {p: picks[p] / total if total else None for p in POSITIONS}
    return block


def rb2_blocks(results: list[ItemResult], *, seed: int, n_boot: int) -> tuple[dict, dict]:
    """(overall block, subset blocks) for these item results."""
    if not results:
        raise ValueError("no items to score")
    by_subset: dict[str, list[ItemResult]] = {}
    for r in results:
        by_subset.setdefault(r.subset, []).append(r)
    boot = _boot(by_subset, np.random.default_rng(seed), n_boot)
    subsets: dict[str, dict] = {}
    points: dict[str, dict[str, float]] = {}
    for subset in sorted(by_subset):
        rs = by_subset[subset]
        if subset == "Ties":
            parts = R.ties_score(*R.split_ties({r.id: r.ties for r in rs}))
            points[subset] = dict.fromkeys(KEYS, parts["score"])
            subsets[subset] = _block(rs, points[subset], boot[subset]) | {"ties": parts}
        else:
            vals = _subset_values(rs).mean(axis=1)
            points[subset] = {k: float(v) for k, v in zip(KEYS, vals, strict=True)}
            subsets[subset] = _block(rs, points[subset], boot[subset])
    overall_point = {k: R.overall({s: p[k] for s, p in points.items()}) for k in KEYS}
    overall_boot = np.mean([boot[s] for s in sorted(boot)], axis=0)
    overall = _block(results, overall_point, overall_boot) | {"subsets": {s: p["accuracy"] for s, p in points.items()}}
    return overall, subsets


def compute_rb2_metrics(records: dict[str, ItemRecord], cfg: dict, *, model: str, n_boot: int = 1000) -> dict:
    """The metrics.json document of a RewardBench 2 run (complete items only)."""
    mode, rotations, seed, samples = cfg["rb2_mode"], cfg["rb2_rotations"], cfg["seed"], cfg["samples"]
    template = cfg.get("template") or "full"
    done = sorted((r for r in records.values()
                   if all(s in r.slots for s in required_slots(r, mode, rotations, seed))), key=lambda r: r.id)
    if len(done) < len(records):
        log.warning("%d of %d items are not fully judged yet; scoring the %d complete ones",
                    len(records) - len(done), len(records), len(done))
    if not done:
        raise ValueError("no fully judged items to score")

    def blocks(k: int) -> tuple[dict, dict]:
        results = [item_result(r, mode=mode, rotations=rotations, seed=seed, k=k, template=template) for r in done]
        return rb2_blocks(results, seed=seed, n_boot=n_boot)

    overall, subsets = blocks(samples)
    return {
        "benchmark": "rewardbench2",
        "format": "fourway" if mode == "fourway" else "pos",
        "model": model,
        "n": len(done),
        "overall": overall,
        "categories": subsets,
        "scaling": {str(k): blocks(k)[0] for k in scaling_ks(samples)},
        "samples": samples,
        "errors": sum(s.error is not None for r in done for s in r.slots.values()),
        "incomplete": len(records) - len(done),
        "rb2": {"mode": mode, "rotations": rotations, "notes": NOTES},
    }


def score_rb2_run(out_dir: str | Path, run: dict, *, n_boot: int = 1000) -> dict:
    """(Re)compute DIR/metrics.json and DIR/report.md of a RewardBench 2 run."""
    from j1.eval.report_extra import write_rb2_report

    out_dir = Path(out_dir)
    cfg = run["config"]
    metrics = compute_rb2_metrics(read_judgments(out_dir / "judgments.jsonl"), cfg,
                                  model=run.get("model") or cfg.get("model") or "default", n_boot=n_boot)
    write_json_atomic(out_dir / "metrics.json", metrics)
    write_rb2_report(out_dir, metrics, run)
    return metrics


def rb2_view(item, rec: ItemRecord | None, asking: Asking, k: int, thoughts: bool = True):
    """The results.jsonl view of a RewardBench 2 item (``j1.eval.results.View``): one entry per four-way
    rotation (the four answers as shown, the pick, right when it is the chosen answer) or per rated
    answer; no pairs (the item is not judged pair by pair); accuracy = the official credit of rotation 1
    (None for Ties, which is scored over prompts), consistent = the chosen answer picked in every rotation."""
    from j1.eval.results import View, entry, slot_samples
    from j1.judging.judge import Sample

    mode, rotations, seed = asking.rb2_mode, asking.rb2_rotations, asking.seed
    template = asking.template or "full"
    judgments = []
    if uses_ratings(item.category, mode):
        pos = get_format("pos", template)
        for name in item.responses:
            samples = slot_samples(pos, rec, name, "A", k)
            score = mean_score(samples)
            judgments.append(entry(rec, name, [name], samples, order=None, verdict=None, pick=None,
                                   scores={name: score}, right=None, margin=None, thoughts=thoughts,
                                   invalid=score is None))
    else:
        names = fourway_names(item.pairs)
        for at in rotation_positions(item.id, seed, rotations):
            slot = FOURWAY_SLOT + at
            shown = arrangement(names, at)
            line = rec.slots.get(slot) if rec is not None else None
            texts = line.texts[:k] if line is not None else []
            picks = [pick(t) for t in texts]
            samples = [Sample(p.choice, None, p.thought, t, p.error) for p, t in zip(picks, texts, strict=True)]
            choice = plurality([p.choice for p in picks], shared="invalid")  # as item_result reads it
            valid = choice != "invalid"
            judgments.append(entry(rec, slot, shown, samples, order=None, verdict=choice,
                                   pick=shown[POSITIONS.index(choice)] if valid else None, scores=None,
                                   right=choice == at if line is not None else None, margin=None,
                                   thoughts=thoughts, invalid=not valid))
    complete = rec is not None and all(s in rec.slots for s in required_slots(rec, mode, rotations, seed))
    if not complete:
        return View(judgments, [], False)
    res = item_result(rec, mode=mode, rotations=rotations, seed=seed, k=k, template=template)
    if res.ties is not None:
        return View(judgments, [], True)
    return View(judgments, [], True, res.official, res.consistent == 1.0, res.flip)
