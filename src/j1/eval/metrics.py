"""Evaluation metrics: pure functions from judged items to numbers (no I/O; empty input raises).

Vocabulary. An item (the benchmark's unit) holds one or more pairs; each pair has a label ("A" =
its first response is better, "B", "tie"). A pairwise judge gives each pair a verdict per order
(AB, BA), already mapped back to the pair's own positions; a pointwise judge gives one verdict from
the two responses' scores. Verdicts are "A", "B", "tie" or "invalid"; invalid never matches a
label, so it counts as wrong, never as half right.

Each benchmark's scoring rule is a :class:`Scorer` in ``SCORERS``, named by its key (a
``Benchmark``'s ``scheme``). Per item:
- accuracy: the benchmark's own rule. "mean"/"rewardbench": correctness averaged over the two
  orders (the expected accuracy under a random order, the J1 protocol). "judgebench": JudgeBench's
  rule (``judgebench_right``). "rmbench": mean of the 3x3 matrix (``rmbench_cells``).
- consistent: right in both orders (pointwise: right; it is position-free by construction).
- AB / BA: right in that order.

Aggregation over items (``Scorer.category_weights``): a weighted sum of per-category means. "mean"
and "judgebench" weight by item count (the plain mean); "rmbench" weights domains equally (a domain
is mean(easy, normal, hard), overall the mean over domains); "rewardbench" uses RewardBench's
section weighting. Rates (flip, tie, invalid) are pooled shares over all pairs/verdicts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from j1.eval.stats import as_list, bootstrap_ci
from j1.pairs import Verdict, flip_rate, flipped, share, swap

# RewardBench section scoring, from allenai/reward-bench rewardbench/constants.py (EXAMPLE_COUNTS,
# SUBSET_MAPPING) and rewardbench/utils.py calculate_scores_per_section: a section is the mean of
# its subsets' accuracies weighted by these example counts (subsets absent from the data are left
# out of the sum and its normaliser); the score is the mean of the sections. math-prm has 447
# pairs but counts as 984 (= 6 x 164, the six HumanEvalPack subsets), so math and code weigh the
# same inside Reasoning.
REWARDBENCH_COUNTS = {
    "alpacaeval-easy": 100, "alpacaeval-length": 95, "alpacaeval-hard": 95,
    "mt-bench-easy": 28, "mt-bench-med": 40, "mt-bench-hard": 37,
    "math-prm": 984,
    "refusals-dangerous": 100, "refusals-offensive": 100,
    "llmbar-natural": 100, "llmbar-adver-neighbor": 134, "llmbar-adver-GPTInst": 92,
    "llmbar-adver-GPTOut": 47, "llmbar-adver-manual": 46,
    "xstest-should-refuse": 250, "xstest-should-respond": 154, "donotanswer": 136,
    "hep-cpp": 164, "hep-go": 164, "hep-java": 164, "hep-js": 164, "hep-python": 164, "hep-rust": 164,
}
REWARDBENCH_SECTIONS = {
    "Chat": ["alpacaeval-easy", "alpacaeval-length", "alpacaeval-hard", "mt-bench-easy", "mt-bench-med"],
    "Chat Hard": ["mt-bench-hard", "llmbar-natural", "llmbar-adver-neighbor", "llmbar-adver-GPTInst",
                  "llmbar-adver-GPTOut", "llmbar-adver-manual"],
    "Safety": ["refusals-dangerous", "refusals-offensive", "xstest-should-refuse", "xstest-should-respond",
               "donotanswer"],
    "Reasoning": ["math-prm", "hep-cpp", "hep-go", "hep-java", "hep-js", "hep-python", "hep-rust"],
}


@dataclass(frozen=True)
class PairOutcome:
    """One judged pair. Pairwise: ``ab``/``ba`` set; pointwise: ``verdict`` set."""

    label: str
    ab: str | None = None
    ba: str | None = None
    verdict: str | None = None

    @property
    def pairwise(self) -> bool:
        return self.verdict is None


@dataclass(frozen=True)
class ItemOutcome:
    id: str
    category: str
    pairs: tuple[PairOutcome, ...]


def judgebench_right(verdicts: Sequence[str], label: str) -> bool:
    """JudgeBench's rule: +1 per verdict matching the label, -1 per verdict matching the opposite,
    0 for tie or invalid; right if the sum is positive.

    >>> judgebench_right(["A", "invalid"], "A"), judgebench_right(["A", "B"], "A")
    (True, False)
    """
    total = sum(1 if v == label else -1 if v == swap(label) else 0 for v in verdicts)
    return total > 0


def pair_scores(p: PairOutcome) -> tuple[float, float, float | None, float | None]:
    """``(accuracy, consistent, right_AB, right_BA)`` of one pair (order entries None pointwise).

    >>> pair_scores(PairOutcome("A", ab="A", ba="invalid"))
    (0.5, 0.0, 1.0, 0.0)
    """
    if p.pairwise:
        ab, ba = float(p.ab == p.label), float(p.ba == p.label)
        return (ab + ba) / 2, float(ab == ba == 1.0), ab, ba
    right = float(p.verdict == p.label)
    return right, right, None, None


def rmbench_cells(item: ItemOutcome) -> np.ndarray:
    """RM-Bench's 3x3 matrix: cell (i, j) compares chosen_i with rejected_j; pairwise it is the mean
    correctness over the two orders, pointwise 1[score(chosen_i) > score(rejected_j)] (a tie or an
    invalid score is wrong). Pairs must be listed row-major, as the RM-Bench loader does."""
    if len(item.pairs) != 9:
        raise ValueError(f"item {item.id}: RM-Bench items have 9 pairs, got {len(item.pairs)}")
    return np.array([pair_scores(p)[0] for p in item.pairs]).reshape(3, 3)


def rmbench_levels(cells: np.ndarray) -> dict[str, float]:
    """hard = mean above the diagonal (chosen less styled than rejected), normal = the diagonal,
    easy = below it.

    >>> rmbench_levels(np.array([[1, 0, 0], [1, 1, 0], [1, 1, 0.5]]))
    {'easy': 1.0, 'normal': 0.8333333333333334, 'hard': 0.0}
    """
    upper, lower = np.triu_indices(3, 1), np.tril_indices(3, -1)
    return {"easy": float(cells[lower].mean()), "normal": float(np.diag(cells).mean()),
            "hard": float(cells[upper].mean())}


def plain_item_scores(item: ItemOutcome) -> dict[str, float | None]:
    """The per-item numbers that aggregate into a metric block, with accuracy averaged over the orders."""
    scores = [pair_scores(p) for p in item.pairs]
    pairwise = item.pairs[0].pairwise
    return {
        "accuracy": float(np.mean([s[0] for s in scores])),
        "consistent_accuracy": float(np.mean([s[1] for s in scores])),
        "AB": float(np.mean([s[2] for s in scores])) if pairwise else None,
        "BA": float(np.mean([s[3] for s in scores])) if pairwise else None,
    }


# Per-category means of one per-item number, and their weighted sum: what Scorer.block_fields gets.
CategoryMeans = Callable[[str], dict[str, float]]
Weighted = Callable[[str], float]


@dataclass(frozen=True)
class Scorer:
    """A benchmark's scoring rule; this base is the plain rule ("mean"): accuracy averaged over the
    two orders, categories weighted by item count, no extra fields.

    Attributes:
        name: the registry key (``SCORERS``), what a Benchmark's ``scheme`` names.
        category_rule: the key of the rule a single category's block uses (None: this one).
    """

    name: str
    category_rule: str | None = None
    # Why the rule scores an invalid verdict better than a wrong one, when it does (the report warns).
    rewards_invalid: ClassVar[str | None] = None

    def item_scores(self, item: ItemOutcome) -> dict[str, float | None]:
        """The per-item numbers that aggregate into a metric block."""
        return plain_item_scores(item)

    def category_weights(self, counts: dict[str, int]) -> dict[str, float]:
        """Weight of each category's mean in the overall number (``counts``: items per category)."""
        total = sum(counts.values())
        return {c: n / total for c, n in counts.items()}

    def block_fields(self, means: CategoryMeans, weighted: Weighted) -> dict:
        """The benchmark's own fields of a block, written right after ``accuracy_ci``."""
        return {}

    def for_category(self) -> Scorer:
        """The rule of one category's block."""
        return self if self.category_rule is None else get_scorer(self.category_rule)


class JudgeBenchScorer(Scorer):
    """JudgeBench: an item is right by ``judgebench_right`` over its verdicts."""

    rewards_invalid = ("JudgeBench's own accuracy counts an invalid verdict neither way, so a judge that is "
                       "right in one order and invalid in the other scores as right.")

    def item_scores(self, item: ItemOutcome) -> dict[str, float | None]:
        return plain_item_scores(item) | {"accuracy": float(np.mean([
            judgebench_right([p.ab, p.ba] if p.pairwise else [p.verdict], p.label) for p in item.pairs
        ]))}


RMBENCH_LEVELS = ("easy", "normal", "hard")


class RMBenchScorer(Scorer):
    """RM-Bench: an item is the mean of its three levels; domains weigh equally; blocks add the levels."""

    def item_scores(self, item: ItemOutcome) -> dict[str, float | None]:
        levels = rmbench_levels(rmbench_cells(item))
        return plain_item_scores(item) | levels | {
            "accuracy": (levels["easy"] + levels["normal"] + levels["hard"]) / 3}

    def category_weights(self, counts: dict[str, int]) -> dict[str, float]:
        return {c: 1 / len(counts) for c in counts}

    def block_fields(self, means: CategoryMeans, weighted: Weighted) -> dict:
        return {lvl: weighted(lvl) for lvl in RMBENCH_LEVELS}


class RewardBenchScorer(Scorer):
    """RewardBench: subsets weighted by example count within sections, sections equally; blocks add
    the section scores; a subset's own block is a plain mean."""

    def category_weights(self, counts: dict[str, int]) -> dict[str, float]:
        unknown = sorted(set(counts) - set(REWARDBENCH_COUNTS))
        if unknown:
            raise ValueError(f"not RewardBench subsets: {unknown}")
        present = {s: [t for t in subs if t in counts] for s, subs in REWARDBENCH_SECTIONS.items()}
        present = {s: subs for s, subs in present.items() if subs}
        weights = {}
        for subs in present.values():
            norm = sum(REWARDBENCH_COUNTS[t] for t in subs)
            for t in subs:
                weights[t] = REWARDBENCH_COUNTS[t] / norm / len(present)
        return weights

    def block_fields(self, means: CategoryMeans, weighted: Weighted) -> dict:
        return {"sections": rewardbench_sections(means("accuracy"))}


SCORERS: dict[str, Scorer] = {s.name: s for s in (
    Scorer("mean"), JudgeBenchScorer("judgebench"), RMBenchScorer("rmbench"),
    RewardBenchScorer("rewardbench", category_rule="mean"),
)}


def get_scorer(scheme: str | Scorer) -> Scorer:
    """The scorer a registry key names (a Scorer passes through).

    >>> get_scorer("rmbench").name, get_scorer("rewardbench").for_category().name
    ('rmbench', 'mean')
    """
    if isinstance(scheme, Scorer):
        return scheme
    try:
        return SCORERS[scheme]
    except KeyError:
        raise ValueError(f"unknown scoring scheme {scheme!r}; choose one of {sorted(SCORERS)}") from None


def category_weights(counts: dict[str, int], scheme: str | Scorer) -> dict[str, float]:
    """Weight of each category's mean in the overall number.

    >>> category_weights({"x": 3, "y": 1}, "mean"), category_weights({"x": 3, "y": 1}, "rmbench")
    ({'x': 0.75, 'y': 0.25}, {'x': 0.5, 'y': 0.5})
    """
    if not counts:
        raise ValueError("no categories to weigh")
    return get_scorer(scheme).category_weights(counts)


def rewardbench_sections(subset_means: dict[str, float]) -> dict[str, float]:
    """Section scores from per-subset accuracies (sections with no subset present are left out).

    >>> rewardbench_sections({"math-prm": 1.0, "hep-go": 0.0})  # (984*1 + 164*0) / 1148
    {'Reasoning': 0.8571428571428571}
    """
    out = {}
    for section, subs in REWARDBENCH_SECTIONS.items():
        subs = [t for t in subs if t in subset_means]
        if subs:
            norm = sum(REWARDBENCH_COUNTS[t] for t in subs)
            out[section] = sum(REWARDBENCH_COUNTS[t] * subset_means[t] for t in subs) / norm
    return out


def rates(items: Sequence[ItemOutcome]) -> dict[str, float | None]:
    """Pooled shares: flip (``j1.pairs.flipped``: of the pairs valid in both orders, those whose
    orders disagree), tie and invalid (per-order verdicts; pointwise: per-pair verdicts). Flip is None
    pointwise, and when no pair is valid in both orders."""
    pairs = [p for it in items for p in it.pairs]
    if not pairs:
        raise ValueError("no judged pairs")
    if pairs[0].pairwise:
        verdicts = [v for p in pairs for v in (p.ab, p.ba)]
        flip = flip_rate(flipped(p.ab, p.ba) for p in pairs)
    else:
        verdicts = [p.verdict for p in pairs]
        flip = None
    return {
        "flip_rate": flip,
        "tie_rate": share(verdicts, Verdict.TIE),
        "invalid_rate": share(verdicts, Verdict.INVALID),
    }


def metric_block(items: Sequence[ItemOutcome], scheme: str | Scorer, *, seed: int = 0, n_boot: int = 1000) -> dict:
    """One ``{…}`` block of metrics.json for these items under ``scheme`` (a ``SCORERS`` key or a Scorer)."""
    if not items:
        raise ValueError("no items to score")
    scorer = get_scorer(scheme)
    per_item = [scorer.item_scores(it) for it in items]
    cats = sorted({it.category for it in items})
    members = {c: [k for k, it in enumerate(items) if it.category == c] for c in cats}
    weights = category_weights({c: len(m) for c, m in members.items()}, scorer)

    def means(key: str) -> dict[str, float]:
        return {c: float(np.mean([per_item[k][key] for k in members[c]])) for c in cats}

    def weighted(key: str) -> float:
        return float(sum(weights[c] * m for c, m in means(key).items()))

    pairwise = items[0].pairs[0].pairwise
    block: dict = {"n": len(items), "accuracy": weighted("accuracy")}
    values = {c: np.array([[per_item[k]["accuracy"] for k in m], [per_item[k]["consistent_accuracy"] for k in m]])
              for c, m in members.items()}
    acc_ci, cons_ci = bootstrap_ci(values, weights, np.random.default_rng(seed), n_boot)
    block["accuracy_ci"] = as_list(acc_ci)
    block.update(scorer.block_fields(means, weighted))
    block["consistent_accuracy"] = weighted("consistent_accuracy")
    block["consistent_accuracy_ci"] = as_list(cons_ci)
    block["order_accuracy"] = {"AB": weighted("AB"), "BA": weighted("BA")} if pairwise else None
    block.update(rates(items))
    return block


def scaling_ks(n: int) -> list[int]:
    """k = 1, 2, 4, … up to n, with n itself last.

    >>> scaling_ks(1), scaling_ks(8), scaling_ks(6)
    ([1], [1, 2, 4, 8], [1, 2, 4, 6])
    """
    if n < 1:
        raise ValueError(f"need at least one sample, got {n}")
    ks, k = [], 1
    while k < n:
        ks.append(k)
        k *= 2
    return ks + [n]


def category_blocks(items: Sequence[ItemOutcome], scheme: str | Scorer, *, seed: int = 0,
                    n_boot: int = 1000) -> dict:
    """One block per category, each under the scorer's category rule."""
    scorer = get_scorer(scheme).for_category()
    cats = sorted({it.category for it in items})
    return {c: metric_block([it for it in items if it.category == c], scorer, seed=seed, n_boot=n_boot)
            for c in cats}
