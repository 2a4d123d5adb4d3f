"""A pairwise judge as a reference-free reward: each completion against the others of its prompt's group.

Each comparison is one pair ``(i, j)`` judged in both orders; every judge sample is one vote in the
original naming (``A``: ``i`` is better, ``B``: ``j`` is). A completion's reward is its win rate:

- a win counts 1, a tie 0.5 (to each side), a loss 0;
- an invalid vote is dropped from the denominator (the judge said nothing about the pair; INVALID is
  counted in the logs, not turned into a tie);
- a completion with no valid vote at all gets ``NO_CONTEST`` (0.5, the rate of a group where no one
  wins) and is counted in ``no_contest_rate``.

Which pairs are judged is ``opponent_pairs``: all pairs, or ``k`` random opponents per completion (the
choice seeded by the seed and the group's texts, so the same batch gets the same pairs).
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Sequence

from j1.pairs import Verdict

NO_CONTEST = 0.5
_POINTS = {Verdict.A: (1.0, 0.0), Verdict.B: (0.0, 1.0), Verdict.TIE: (0.5, 0.5)}


def prompt_groups(prompts: Sequence[str]) -> list[list[int]]:
    """Indices of the completions of each distinct prompt, in first-seen order (GRPO's groups are
    contiguous, online DPO's are ``i`` and ``i + B``: grouping by text serves both).

    >>> prompt_groups(["p", "q", "p", "q"])
    [[0, 2], [1, 3]]
    """
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(prompts):
        groups.setdefault(p, []).append(i)
    return list(groups.values())


def group_seed(seed: int, texts: Sequence[str]) -> int:
    """A stable seed for one group's opponent draw from ``seed`` and the group's texts (no ``hash()``,
    which changes between processes).

    >>> group_seed(0, ["p", "a"]) == group_seed(0, ["p", "a"]) != group_seed(1, ["p", "a"])
    True
    """
    digest = hashlib.sha256("\x00".join([str(seed), *texts]).encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big")


def opponent_pairs(n: int, opponents: int | None, rng: random.Random) -> list[tuple[int, int]]:
    """The pairs ``(i, j)``, ``i < j``, to judge in a group of ``n`` completions: every pair when
    ``opponents`` is None or at least ``n - 1``; else each completion draws ``opponents`` distinct others
    and the union is judged once each (so a completion may meet more than ``opponents``).

    >>> opponent_pairs(3, None, random.Random(0))
    [(0, 1), (0, 2), (1, 2)]
    >>> len(opponent_pairs(1, None, random.Random(0)))
    0
    """
    if opponents is not None and opponents < 1:
        raise ValueError(f"opponents {opponents}: must be >= 1 (or None for all pairs)")
    if opponents is None or opponents >= n - 1:
        return list(itertools.combinations(range(n), 2))
    chosen: set[tuple[int, int]] = set()
    for i in range(n):
        for j in rng.sample([j for j in range(n) if j != i], opponents):
            chosen.add((min(i, j), max(i, j)))
    return sorted(chosen)


def win_rates(n: int, outcomes: Sequence[tuple[int, int, Sequence[str]]],
              no_contest: float | None = NO_CONTEST) -> list[float | None]:
    """Each of ``n`` completions' win rate over its judged pairs (the module's rule).

    Args:
        n: completions in the group.
        outcomes: ``(i, j, votes)`` per judged pair; votes in original naming (``A``: ``i`` better).
        no_contest: the rate of a completion without a valid vote (None leaves it None).

    >>> win_rates(3, [(0, 1, ["A", "A"]), (0, 2, ["tie", "B"]), (1, 2, ["invalid", "invalid"])])
    [0.625, 0.0, 0.75]
    """
    points = [0.0] * n
    votes = [0] * n
    for i, j, vs in outcomes:
        for v in vs:
            verdict = Verdict(v)
            if verdict not in _POINTS:
                continue
            pi, pj = _POINTS[verdict]
            points[i] += pi
            points[j] += pj
            votes[i] += 1
            votes[j] += 1
    return [points[k] / votes[k] if votes[k] else no_contest for k in range(n)]


def group_plan(prompts: Sequence[str], responses: Sequence[str], opponents: int | None,
               seed: int = 0) -> list[tuple[int, int]]:
    """Every comparison of a batch, as pairs of batch indices ``(i, j)`` (``i`` first in the batch):
    ``opponent_pairs`` within each ``prompt_groups`` group, the draw seeded by ``group_seed``.

    >>> group_plan(["p", "q", "p", "q", "p"], ["a", "b", "c", "d", "e"], None)
    [(0, 2), (0, 4), (2, 4), (1, 3)]
    """
    plan: list[tuple[int, int]] = []
    for members in prompt_groups(prompts):
        rng = random.Random(group_seed(seed, [prompts[members[0]], *(responses[m] for m in members)]))
        plan += [(members[a], members[b]) for a, b in opponent_pairs(len(members), opponents, rng)]
    return plan
