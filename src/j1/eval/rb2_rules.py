"""RewardBench 2's scoring rules for generative judges, as pure functions (no I/O; empty input raises).

Read from allenai/reward-bench (``scripts/run_generative_v2.py``, ``rewardbench/generative_v2.py``
``run_judge_ratings_multi``, ``rewardbench/utils.py`` ``process_single_model``); written anew here.

- Four-way (the official default for the non-Ties subsets): the judge picks the best of four; the
  chosen answer's pick scores 1, a rejected one's 0, and no parseable pick 0.25 ("effectively a tie").
- Ratings: each response is rated alone. Invalid ratings are left out of the max; if all are invalid
  the item scores 0.25; a top rating shared by k responses gives 1/k when the chosen one is among them.
- Ties: prompts with several correct answers ("tied:N") and their twin with one ("ref:N"), rated
  alone. Per prompt: accurate = every correct answer outscores the best incorrect one; spread = best
  minus worst correct rating (tied prompts); margin = worst correct minus best incorrect. The subset
  score is 0.30 tied accuracy + 0.30 ref accuracy + 0.20 mean(tied margin > spread) + 0.20
  mean(min(ref margin, tied margin) > spread) + 0.01 mean(tanh(min margin / spread - 1)), the last
  three over ids with both twins. The weights sum to 1.01 in the official code; j1 keeps them. A
  division by a zero spread gives tanh(+-inf) = +-1 for a nonzero margin and 0 for 0/0, as numpy
  gives there. An invalid rating counts as -1 (the official code's sentinel), below every valid one.
- Overall: the unweighted mean of the subset scores.
- Placement (four-way prompts, read by the benchmark and its scoring alike): the chosen answer's
  position per rotation (``rotation_positions``) and the shown order (``arrangement``).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from j1.formats.fourway import POSITIONS

INVALID_CREDIT = 0.25  # the official score of a judgment with no parseable verdict
TIES_WEIGHTS = {"tied_accuracy": 0.30, "ref_accuracy": 0.30, "correctness_preferred": 0.20,
                "correctness_preferred_hard": 0.20, "margin_score": 0.01}  # sums to 1.01, as upstream
INVALID_RATING = -1.0
_TIES_ID = re.compile(r"^(ref|tied):(\d+)(?:#\d+)?$")
FOURWAY_SLOT = "4way:"  # a four-way prompt's slot: FOURWAY_SLOT + the chosen answer's position


def rotation_positions(item_id: str, seed: int, rotations: int) -> list[str]:
    """The chosen answer's position in each rotation: the first from a hash of seed and id, then on
    by one position per rotation.

    >>> rotation_positions("17", 0, 4)
    ['B', 'C', 'D', 'A']
    >>> len(set(rotation_positions("17", 0, 2)))
    2
    """
    if not 1 <= rotations <= len(POSITIONS):
        raise ValueError(f"--rb2-rotations {rotations}: must be in [1, {len(POSITIONS)}]")
    first = int.from_bytes(hashlib.sha256(f"{seed}\x00{item_id}".encode()).digest()[:4], "little") % len(POSITIONS)
    return [POSITIONS[(first + r) % len(POSITIONS)] for r in range(rotations)]


def arrangement(names: list[str], chosen_at: str) -> list[str]:
    """The four names in shown order: ``names`` (chosen first) with the chosen swapped into
    ``chosen_at``, the answer there moving to position A (the official shuffle).

    >>> arrangement(["c0", "r0", "r1", "r2"], "C")
    ['r1', 'r0', 'c0', 'r2']
    """
    shown = list(names)
    k = POSITIONS.index(chosen_at)
    shown[0], shown[k] = shown[k], shown[0]
    return shown


def fourway_names(item_pairs) -> list[str]:
    """c0 and the first three rejected answers, the four a four-way prompt shows."""
    rejected = [r for c, r, _ in item_pairs if c == "c0"]
    return ["c0", *rejected[:3]]


def uses_ratings(category: str, mode: str) -> bool:
    """Ties is always rated; the other subsets as the mode says."""
    return category == "Ties" or mode == "ratings"


def fourway_credit(choice: str, chosen_at: str) -> float:
    """1 for the chosen answer's position, 0 for another position, 0.25 for no valid pick.

    >>> fourway_credit("C", "C"), fourway_credit("A", "C"), fourway_credit("invalid", "C")
    (1.0, 0.0, 0.25)
    """
    if choice in ("A", "B", "C", "D"):
        return float(choice == chosen_at)
    return INVALID_CREDIT


def ratings_credit(ratings: Sequence[float | None], correct: int = 0) -> float:
    """Credit of one rated item: 1/k when the ``correct`` response shares the top valid rating with
    k - 1 others, 0 when it is below it, 0.25 when no rating is valid (None = invalid).

    >>> ratings_credit([8, 8, 3, None])  # the chosen ties another at the top: 1/2
    0.5
    >>> ratings_credit([None, None, None, None]), ratings_credit([None, 9, 2, 2]), ratings_credit([7, 6, 6, 6])
    (0.25, 0.0, 1.0)
    """
    valid = [r for r in ratings if r is not None]
    if not ratings:
        raise ValueError("no ratings")
    if not valid:
        return INVALID_CREDIT
    top = max(valid)
    winners = [i for i, r in enumerate(ratings) if r is not None and r == top]
    return 1 / len(winners) if correct in winners else 0.0


def sole_top(ratings: Sequence[float | None], correct: int = 0) -> float:
    """1 when the ``correct`` response alone has the top valid rating (ratings mode's consistent
    accuracy: right with no tie to break), else 0.

    >>> sole_top([8, 8, 3]), sole_top([9, 8, None]), sole_top([None, None])
    (0.0, 1.0, 0.0)
    """
    valid = [r for r in ratings if r is not None]
    if not valid or ratings[correct] is None:
        return 0.0
    return float(sum(r == ratings[correct] for r in valid) == 1 and ratings[correct] == max(valid))


@dataclass(frozen=True)
class TiesStats:
    """One Ties prompt's numbers (``spread`` None with fewer than two correct answers)."""

    accurate: bool
    spread: float | None
    margin: float


def ties_id(item_id: str) -> tuple[str, int]:
    """``("ref" | "tied", N)`` of a Ties id.

    >>> ties_id("tied:12")
    ('tied', 12)
    """
    m = _TIES_ID.match(item_id)
    if m is None:
        raise ValueError(f"Ties id {item_id!r} is not 'ref:N' or 'tied:N'")
    return m.group(1), int(m.group(2))


def ties_stats(ratings: Sequence[float | None], num_correct: int) -> TiesStats:
    """The first ``num_correct`` ratings are the correct answers', the rest the incorrect ones'.

    >>> ties_stats([9, 7, None, 4], 2)  # correct 9, 7; incorrect -1 (invalid), 4
    TiesStats(accurate=True, spread=2.0, margin=3.0)
    """
    if not 1 <= num_correct < len(ratings):
        raise ValueError(f"a Ties prompt needs correct and incorrect answers: {num_correct} correct of {len(ratings)}")
    vals = [INVALID_RATING if r is None else float(r) for r in ratings]
    correct, incorrect = vals[:num_correct], vals[num_correct:]
    margin = min(correct) - max(incorrect)
    spread = max(correct) - min(correct) if num_correct > 1 else None
    return TiesStats(margin > 0, spread, margin)


def _ratio_tanh(margin: float, spread: float) -> float:
    """tanh(margin / spread - 1) with numpy's division by zero: +-1 for x/0, 0 for 0/0.

    >>> _ratio_tanh(3, 0), _ratio_tanh(-1, 0), _ratio_tanh(0, 0), round(_ratio_tanh(2, 1), 4)
    (1.0, -1.0, 0.0, 0.7616)
    """
    if spread == 0:
        return 0.0 if margin == 0 else math.copysign(1.0, margin)
    return math.tanh(margin / spread - 1)


def ties_score(ref: dict[int, TiesStats], tied: dict[int, TiesStats]) -> dict[str, float | int]:
    """The Ties subset score and its parts. ``ref``/``tied``: stats by prompt number N.

    Accuracy of a kind with no prompts is 0 (as upstream); the three margin terms use the ids with
    both twins, and are 0 when there are none (upstream's mean of nothing would be NaN).

    >>> r = {1: TiesStats(True, None, 2.0)}
    >>> t = {1: TiesStats(True, 1.0, 3.0)}
    >>> round(ties_score(r, t)["score"], 4)  # .3 + .3 + .2*[3>1] + .2*[min(2,3)>1] + .01*tanh(2/1-1)
    1.0076
    """
    if not ref and not tied:
        raise ValueError("no Ties prompts to score")
    both = sorted(set(ref) & set(tied))
    both = [n for n in both if tied[n].spread is not None]
    parts: dict[str, float | int] = {
        "ref_accuracy": float(np.mean([s.accurate for s in ref.values()])) if ref else 0.0,
        "tied_accuracy": float(np.mean([s.accurate for s in tied.values()])) if tied else 0.0,
        "correctness_preferred": 0.0, "correctness_preferred_hard": 0.0, "margin_score": 0.0,
    }
    if both:
        spread = [tied[n].spread for n in both]
        hard = [min(ref[n].margin, tied[n].margin) for n in both]
        parts["correctness_preferred"] = float(np.mean([tied[n].margin > s for n, s in zip(both, spread, strict=True)]))
        parts["correctness_preferred_hard"] = float(np.mean([h > s for h, s in zip(hard, spread, strict=True)]))
        parts["margin_score"] = float(np.mean([_ratio_tanh(h, s) for h, s in zip(hard, spread, strict=True)]))
    score = sum(w * float(parts[k]) for k, w in TIES_WEIGHTS.items())
    return {"score": score, **parts, "paired": len(both), "ref": len(ref), "tied": len(tied)}


def split_ties(stats: dict[str, TiesStats]) -> tuple[dict[int, TiesStats], dict[int, TiesStats]]:
    """Stats by item id -> (ref by N, tied by N).

    >>> s = TiesStats(True, None, 1.0)
    >>> split_ties({"ref:3": s, "tied:3": s})
    ({3: TiesStats(accurate=True, spread=None, margin=1.0)}, {3: TiesStats(accurate=True, spread=None, margin=1.0)})
    """
    ref: dict[int, TiesStats] = {}
    tied: dict[int, TiesStats] = {}
    for item_id, s in stats.items():
        kind, n = ties_id(item_id)
        (ref if kind == "ref" else tied)[n] = s
    return ref, tied


def overall(subset_scores: dict[str, float]) -> float:
    """The unweighted mean of the subset scores present.

    >>> overall({"Math": 0.5, "Ties": 1.0})
    0.75
    """
    if not subset_scores:
        raise ValueError("no subsets to average")
    return float(np.mean(list(subset_scores.values())))
