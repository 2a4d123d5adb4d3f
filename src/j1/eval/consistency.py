"""Label-free consistency of a judge over a set of K responses to one prompt (Sage: Feng et al., 2025,
arXiv 2512.16041): pure functions from the verdict matrix to numbers (no I/O; empty input raises).

The verdict matrix ``y`` is K x K: ``y[i][j]`` is the judge's verdict with response i shown first
(as A) and j second, for every ordered pair i != j:

- ``1``: the first shown (i) is better, ``-1``: the second (j) is, ``0``: a tie;
- ``None``: no valid verdict (the judge's output did not parse). The diagonal is unused.

A judge that sees the content, not the position, gives ``y[j][i] == -y[i][j]``, and a judge with one
view of quality gives verdicts that some weak order (a ranking with ties) explains. Measures:

- IPI (intra-pair instability) = (1/C(K,2)) * sum_{i<j} 1[y_ij != -y_ji]. An invalid verdict in
  either order makes the pair unstable (invalid is never the mirror of anything).
- TOV (weak total order violation) = min over weak orders W of the number of ordered pairs (i, j)
  whose verdict differs from the one W implies (1 if i ranks above j, -1 below, 0 same tier). An
  invalid verdict differs from every order, so each adds exactly 1. Exact: by enumerating every weak
  order for K <= 7 (at most 47,293 of them), and beyond that by dynamic programming over subsets
  (``tov_dp``; O(3^K * K), exact, up to K = ``MAX_K``). Both agree on every K they share (tested).
- intransitive triples: among triples whose three pairs are each *determined* (both orders valid and
  mirror images), the share whose three relations no weak order satisfies (a cycle a>b>c>a, or
  a>b, b>c, a=c, or a=b, b=c, a>c and the like). Pairs that are undetermined are left out here and
  counted by IPI and the invalid rate instead.

Pointwise judges give ``y_ij = sign(score_i - score_j)`` (equal scores: 0), from one score per
response, so IPI, TOV and intransitive triples are 0 by construction apart from invalid scores.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from j1.eval.stats import as_list, bootstrap_ci, bootstrap_mean_ci
from j1.pairs import compare_scores

Verdicts = Sequence[Sequence[int | None]]
ENUMERATE_MAX_K = 7  # enumeration of weak orders up to here; DP over subsets beyond
MAX_K = 12  # the DP's 3^K * K steps stay near a second per prompt up to here
_INVALID = 2  # the code of an invalid verdict in the int matrices below; it equals no order's verdict


def verdict_code(v: str | None) -> int | None:
    """A judge verdict in shown positions (A, B, tie, invalid) as y: 1, -1, 0, None.

    >>> [verdict_code(v) for v in ("A", "B", "tie", "invalid")]
    [1, -1, 0, None]
    """
    return {"A": 1, "B": -1, "tie": 0}.get(v) if v is not None else None


def score_verdicts(scores: Sequence[float | None]) -> list[list[int | None]]:
    """The verdict matrix a pointwise judge's scores imply: ``compare_scores(s_i, s_j)`` as a code
    (sign(s_i - s_j)), None where a score is missing.

    >>> score_verdicts([7, 3, 7, None])[0]
    [0, 1, 0, None]
    """
    k = len(scores)
    out: list[list[int | None]] = []
    for i in range(k):
        row: list[int | None] = []
        for j in range(k):
            row.append(0 if i == j else verdict_code(compare_scores(scores[i], scores[j]).value))
        out.append(row)
    return out


def _matrix(y: Verdicts) -> np.ndarray:
    k = len(y)
    if k < 2:
        raise ValueError(f"need at least 2 responses, got {k}")
    if any(len(row) != k for row in y):
        raise ValueError("the verdict matrix must be K x K")
    m = np.zeros((k, k), dtype=np.int8)
    for i in range(k):
        for j in range(k):
            if i == j:
                continue
            v = y[i][j]
            if v is not None and v not in (-1, 0, 1):
                raise ValueError(f"verdict y[{i}][{j}] = {v!r}: must be 1, 0, -1 or None")
            m[i, j] = _INVALID if v is None else v
    return m


def ipi(y: Verdicts) -> float:
    """Intra-pair instability: the share of unordered pairs whose two orders are not mirror images.

    >>> ipi([[0, 1, 1], [-1, 0, 1], [1, -1, 0]])  # pair (0,2): 1 and 1 -> unstable; 1 of 3 pairs
    0.3333333333333333
    """
    m = _matrix(y)
    k = len(m)
    bad = sum(not (m[i, j] != _INVALID and m[j, i] != _INVALID and m[i, j] == -m[j, i])
              for i, j in itertools.combinations(range(k), 2))
    return bad / (k * (k - 1) // 2)


def invalid_rate(y: Verdicts) -> float:
    """The share of the K(K-1) ordered verdicts that are invalid.

    >>> invalid_rate([[0, None], [1, 0]])
    0.5
    """
    m = _matrix(y)
    k = len(m)
    return float((m == _INVALID).sum()) / (k * (k - 1))


@functools.lru_cache(maxsize=ENUMERATE_MAX_K + 1)
def weak_orders(k: int) -> np.ndarray:
    """Every weak order of k items as a (W, k) array of tier ranks (0 = the best tier; tiers used
    are 0..t-1 without gaps). W is the ordered Bell (Fubini) number: 1, 3, 13, 75, 541, 4683, 47293.

    >>> weak_orders(2).tolist()
    [[0, 0], [0, 1], [1, 0]]
    >>> len(weak_orders(3)), len(weak_orders(7))
    (13, 47293)
    """
    if not 1 <= k <= ENUMERATE_MAX_K:
        raise ValueError(f"weak orders are enumerated for 1 <= K <= {ENUMERATE_MAX_K}, got {k}")
    rows = [r for r in itertools.product(range(k), repeat=k) if set(r) == set(range(max(r) + 1))]
    return np.array(rows, dtype=np.int8)


def _implied(ranks: np.ndarray) -> np.ndarray:
    """(W, K, K) verdicts the orders imply: 1 where i ranks above j (smaller tier), -1 below, 0 same."""
    return np.sign(ranks[:, None, :].astype(np.int16) - ranks[:, :, None]).astype(np.int8)


def tov_enumerate(y: Verdicts) -> tuple[int, list[int]]:
    """Exact TOV by trying every weak order (K <= 7). Returns (violations, tier ranks of a best order;
    the first in enumeration order among ties).

    >>> tov_enumerate([[0, 1, -1], [-1, 0, 1], [1, -1, 0]])  # a 3-cycle: at best 2 ordered pairs disagree
    (2, [0, 1, 2])
    """
    m = _matrix(y)
    k = len(m)
    orders = weak_orders(k)
    off = ~np.eye(k, dtype=bool)
    cost = ((_implied(orders) != m[None]) & off[None]).sum(axis=(1, 2))
    best = int(np.argmin(cost))
    return int(cost[best]), orders[best].tolist()


def _pair_costs(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``above[i, j]``: violations of the ordered pairs (i, j) and (j, i) when i's tier is above j's;
    ``same[i, j]``: when they share a tier."""
    k = len(m)
    above = np.zeros((k, k), dtype=np.int64)
    same = np.zeros((k, k), dtype=np.int64)
    for i in range(k):
        for j in range(k):
            if i != j:
                above[i, j] = int(m[i, j] != 1) + int(m[j, i] != -1)
                same[i, j] = int(m[i, j] != 0) + int(m[j, i] != 0)
    return above, same


def tov_dp(y: Verdicts) -> int:
    """Exact TOV by dynamic programming over subsets, for any K <= ``MAX_K``.

    A weak order is a sequence of tiers, best first. Placing tier T below the set S of items already
    placed adds the violations inside T (``same``) and those of every (i in S, j in T) pair
    (``above``); nothing else changes, so f(S u T) = min over T of f(S) + within(T) + cross(S, T), with
    f(empty) = 0 and TOV = f(all). Each (S, T) pair of disjoint sets is visited once: O(3^K) steps,
    each summing over T's items with a per-(S, item) table.

    >>> tov_dp([[0, 1, -1], [-1, 0, 1], [1, -1, 0]])
    2
    """
    m = _matrix(y)
    k = len(m)
    if k > MAX_K:
        raise ValueError(f"exact TOV is computed for K <= {MAX_K} responses, got {k}")
    above, same = _pair_costs(m)
    full = (1 << k) - 1
    bits = [[i for i in range(k) if s >> i & 1] for s in range(full + 1)]
    within = [0] * (full + 1)
    for s in range(1, full + 1):
        low = (s & -s).bit_length() - 1  # within(s) = within(s without its lowest item) + its pairs
        within[s] = within[s & (s - 1)] + sum(int(same[low, j]) for j in bits[s] if j > low)
    # below[s][j]: violations of j's pairs with every item of s when s's items rank above j.
    below = np.zeros((full + 1, k), dtype=np.int64)
    for s in range(1, full + 1):
        low = (s & -s).bit_length() - 1
        below[s] = below[s & (s - 1)] + above[low]
    inf = np.iinfo(np.int64).max // 4
    f = [inf] * (full + 1)
    f[0] = 0
    for s in range(full):
        if f[s] >= inf:
            continue
        rest = full & ~s
        row = below[s]
        t = rest
        while t:  # every nonempty subset t of rest
            cost = f[s] + within[t] + int(sum(row[j] for j in bits[t]))
            if cost < f[s | t]:
                f[s | t] = cost
            t = (t - 1) & rest
    return int(f[full])


def tov(y: Verdicts) -> int:
    """Exact weak total order violation: enumeration for K <= 7, the subset DP beyond.

    >>> tov([[0, 1], [1, 0]])  # both orders say "the first shown wins": one of the two must give
    1
    """
    return tov_enumerate(y)[0] if len(y) <= ENUMERATE_MAX_K else tov_dp(y)


def _relation(m: np.ndarray, i: int, j: int) -> int | None:
    """The pair's verdict for i over j when both orders are valid and mirror images, else None."""
    a, b = int(m[i, j]), int(m[j, i])
    return a if a != _INVALID and b != _INVALID and a == -b else None


def intransitive_triples(y: Verdicts) -> tuple[int, int]:
    """``(intransitive, determined)``: of the triples whose three pairs are determined, how many no
    weak order satisfies.

    >>> intransitive_triples([[0, 1, -1], [-1, 0, 1], [1, -1, 0]])  # 0 > 1 > 2 > 0
    (1, 1)
    >>> intransitive_triples([[0, 1, 0], [-1, 0, 0], [0, 0, 0]])  # 0 > 1, 1 = 2, 0 = 2: no weak order
    (1, 1)
    """
    m = _matrix(y)
    k = len(m)
    orders = weak_orders(3)
    implied = _implied(orders)  # (13, 3, 3)
    bad = determined = 0
    for tri in itertools.combinations(range(k), 3):
        rel = np.zeros((3, 3), dtype=np.int8)
        ok = True
        for a, b in itertools.permutations(range(3), 2):
            r = _relation(m, tri[a], tri[b])
            if r is None:
                ok = False
                break
            rel[a, b] = r
        if not ok:
            continue
        determined += 1
        off = ~np.eye(3, dtype=bool)
        if not ((implied == rel[None]) | ~off[None]).all(axis=(1, 2)).any():
            bad += 1
    return bad, determined


@dataclass(frozen=True)
class PromptConsistency:
    """The measures of one prompt's K responses."""

    k: int
    ipi: float
    tov: int
    tov_rate: float  # tov / K(K-1): the share of ordered verdicts no weak order explains
    intransitive: int
    determined_triples: int
    invalid_rate: float

    @property
    def intransitive_rate(self) -> float | None:
        return self.intransitive / self.determined_triples if self.determined_triples else None


def prompt_consistency(y: Verdicts) -> PromptConsistency:
    """All measures of one verdict matrix.

    >>> p = prompt_consistency([[0, 1, -1], [-1, 0, 1], [1, -1, 0]])
    >>> p.ipi, p.tov, p.intransitive_rate
    (0.0, 2, 1.0)
    """
    k = len(y)
    bad, det = intransitive_triples(y) if k >= 3 else (0, 0)
    t = tov(y)
    return PromptConsistency(k, ipi(y), t, t / (k * (k - 1)), bad, det, invalid_rate(y))


def summarize(per_prompt: Sequence[PromptConsistency], *, seed: int = 0, n_boot: int = 1000) -> dict:
    """Means over prompts with 95% bootstrap intervals (one seeded generator per measure, so adding a
    measure never moves another's interval). The intransitive rate pools triples over prompts.

    >>> s = summarize([prompt_consistency([[0, 1, -1], [-1, 0, 1], [1, -1, 0]])], n_boot=10)
    >>> s["tov"], s["intransitive_rate"], s["n"]
    (2.0, 1.0, 1)
    """
    if not per_prompt:
        raise ValueError("no prompts to summarize")
    out: dict = {"n": len(per_prompt)}
    for key in ("ipi", "tov", "tov_rate", "invalid_rate"):
        vals = [float(getattr(p, key)) for p in per_prompt]
        out[key] = float(np.mean(vals))
        out[f"{key}_ci"] = as_list(bootstrap_mean_ci(vals, np.random.default_rng(seed), n_boot))
    det = sum(p.determined_triples for p in per_prompt)
    out["intransitive_triples"] = sum(p.intransitive for p in per_prompt)
    out["determined_triples"] = det
    out["intransitive_rate"] = out["intransitive_triples"] / det if det else None
    # Interval of the pooled rate: each determined triple is an item (1 if intransitive), its prompt
    # the cluster; resampling prompts gives the ratio of the resampled sums.
    if det:
        values = np.array([[float(k < p.intransitive) for p in per_prompt for k in range(p.determined_triples)]])
        clusters = [i for i, p in enumerate(per_prompt) for _ in range(p.determined_triples)]
        (ci,) = bootstrap_ci({"triples": values}, {"triples": 1.0}, np.random.default_rng(seed), n_boot,
                             clusters={"triples": clusters}, units=range(len(per_prompt)))
        out["intransitive_rate_ci"] = as_list(ci)
    else:
        out["intransitive_rate_ci"] = None
    return out
