"""j1's statistics of a sample: the one bootstrap (items, or clusters of items such as the pairs built
from one question), its percentile intervals, the small-n rule under which no interval is given, and
the mean with its standard error. Pure functions of arrays and a seeded generator (no I/O)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np

# Below this many independent units (items, prompts, source questions) no interval is given: a
# percentile bootstrap of 3 items mostly replays the sample (n = 3 gave [50.0, 50.0]), so it would
# claim a precision the data do not have. Reports print "n < 10" and JSON holds null there.
MIN_CI_N = 10


def bootstrap_samples(
    values: dict[str, np.ndarray],
    weights: dict[str, float],
    rng: np.random.Generator,
    n_boot: int = 1000,
    *,
    clusters: dict[str, Sequence[Hashable]] | None = None,
    units: Sequence[Hashable] | None = None,
) -> np.ndarray:
    """``(M, n_boot)`` bootstrap replicates of weighted stratum means; the one bootstrap of j1 (eval
    categories, attack pairs, consistency prompts and RewardBench 2 subsets all resample here).

    Without ``clusters`` each item is a unit, resampled with replacement within its stratum (so every
    stratum stays present, as the weighting needs). With ``clusters`` the units are clusters: one
    draw of them (with replacement) is shared by every stratum, each drawn cluster brings all its
    items, and a stratum's mean is the sum over the drawn items over their count (a ratio estimator).
    Use it when items are not independent, e.g. the 14 attack pairs built from one source question.
    A replicate where a stratum got no item is NaN (``percentile_ci`` leaves it out).

    Args:
        values: stratum -> array (M, n_s) of M per-item metrics; all metrics share each resample.
        weights: stratum -> weight of its mean.
        rng: the seeded generator (same seed, same replicates).
        clusters: stratum -> the cluster of each of its items (n_s ids).
        units: every cluster, in draw order (default: first appearance over the sorted strata); a
            cluster with no item (a prompt with nothing to count) still takes its share of draws.

    >>> v = {"x": np.array([[1.0, 1.0, 0.0, 0.0]])}
    >>> sorted(set(bootstrap_samples(v, {"x": 1.0}, np.random.default_rng(0), 200,
    ...                              clusters={"x": ["q1", "q1", "q2", "q2"]})[0].tolist()))
    [0.0, 0.5, 1.0]
    """
    if not values:
        raise ValueError("no values to bootstrap")
    if clusters is None:
        total = None
        for cat in sorted(values):
            arr = values[cat]
            idx = rng.integers(0, arr.shape[1], size=(n_boot, arr.shape[1]))
            means = arr[:, idx].mean(axis=2)  # (M, n_boot)
            total = weights[cat] * means if total is None else total + weights[cat] * means
        return total
    ids = list(dict.fromkeys(units if units is not None else (c for cat in sorted(values) for c in clusters[cat])))
    index = {c: k for k, c in enumerate(ids)}
    K = len(ids)
    draws = rng.integers(0, K, size=(n_boot, K))
    # times[b, k]: how often replicate b drew cluster k.
    times = np.bincount((draws + K * np.arange(n_boot)[:, None]).ravel(), minlength=n_boot * K).reshape(n_boot, K)
    total = None
    for cat in sorted(values):
        arr = np.asarray(values[cat], dtype=float)
        col = np.array([index[c] for c in clusters[cat]], dtype=int)
        sums = np.zeros((arr.shape[0], K))
        np.add.at(sums.T, col, arr.T)  # sums[:, k]: the items of cluster k, summed
        counts = np.bincount(col, minlength=K).astype(float)
        num, den = sums @ times.T, counts @ times.T  # (M, n_boot), (n_boot,)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        total = weights[cat] * means if total is None else total + weights[cat] * means
    return total


def percentile_ci(samples: np.ndarray, n: int, alpha: float = 0.05,
                  min_n: int = MIN_CI_N) -> list[tuple[float, float] | None]:
    """Percentile intervals of replicates ``samples`` (M, n_boot), one per row; None for every row when
    the units they rest on are fewer than ``min_n`` (``MIN_CI_N``), or a row has no finite replicate.

    >>> percentile_ci(np.array([[0.0, 1.0, 0.5]]), n=12), percentile_ci(np.array([[0.0, 1.0]]), n=3)
    ([(0.025, 0.975)], [None])
    """
    samples = np.atleast_2d(np.asarray(samples, dtype=float))
    out: list[tuple[float, float] | None] = []
    for row in samples:
        row = row[np.isfinite(row)]
        if n < min_n or row.size == 0:
            out.append(None)
            continue
        lo, hi = np.quantile(row, [alpha / 2, 1 - alpha / 2])
        out.append((float(lo), float(hi)))
    return out


def bootstrap_ci(
    values: dict[str, np.ndarray],
    weights: dict[str, float],
    rng: np.random.Generator,
    n_boot: int = 1000,
    alpha: float = 0.05,
    *,
    clusters: dict[str, Sequence[Hashable]] | None = None,
    units: Sequence[Hashable] | None = None,
    min_n: int = MIN_CI_N,
) -> list[tuple[float, float] | None]:
    """Percentile bootstrap intervals of weighted stratum means (``bootstrap_samples``), one per metric
    row; None per row when there are fewer than ``min_n`` units (items, or clusters with ``clusters``).

    Returns:
        ``[(lo, hi) | None]`` per metric row.

    >>> bootstrap_ci({"x": np.ones((1, 12))}, {"x": 1.0}, np.random.default_rng(0), 50)
    [(1.0, 1.0)]
    >>> bootstrap_ci({"x": np.ones((1, 3))}, {"x": 1.0}, np.random.default_rng(0), 50)
    [None]
    """
    if clusters is None:
        n = sum(np.shape(v)[1] for v in values.values())
    else:
        n = len(set(units) if units is not None else {c for cat in values for c in clusters[cat]})
    samples = bootstrap_samples(values, weights, rng, n_boot, clusters=clusters, units=units)
    return percentile_ci(samples, n, alpha, min_n)


def as_list(ci: tuple[float, float] | None) -> list[float] | None:
    """An interval as metrics.json holds it: ``[lo, hi]``, or null when there is none (n too small)."""
    return None if ci is None else list(ci)


def bootstrap_mean_ci(values: Sequence[float], rng: np.random.Generator, n_boot: int = 1000,
                      alpha: float = 0.05, min_n: int = MIN_CI_N) -> tuple[float, float] | None:
    """Percentile bootstrap interval of a mean, resampling prompts with replacement
    (``bootstrap_ci``); None below ``min_n`` prompts.

    >>> bootstrap_mean_ci([0.5] * 10, np.random.default_rng(0), 100), bootstrap_mean_ci([0.5] * 3, np.random.default_rng(0))
    ((0.5, 0.5), None)
    """
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        raise ValueError("no values to bootstrap")
    return bootstrap_ci({"prompts": arr[None, :]}, {"prompts": 1.0}, rng, n_boot, alpha, min_n=min_n)[0]


def mean_se(values: Sequence[float]) -> tuple[float, float | None]:
    """The mean and its standard error (sample standard deviation, n - 1, over sqrt(n)); the error
    is None for one value, which has no spread to estimate it from.

    >>> mean_se([1.0, 3.0])
    (2.0, 1.0)

    Raises:
        ValueError: no values.
    """
    n = len(values)
    if n == 0:
        raise ValueError("mean_se of no values")
    mean = sum(values) / n
    if n == 1:
        return mean, None
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def paired_sign_test(gained: int, lost: int) -> float:
    """Two-sided exact McNemar test of two judges on the same items: ``gained`` items only the second gets right,
    ``lost`` only the first; the p-value of so lopsided a split if each discordant item were a fair coin (items
    both get right, or both wrong, carry no evidence). 1.0 with no discordant items.

    >>> paired_sign_test(0, 0), paired_sign_test(8, 2), paired_sign_test(2, 8)  # 2 * (1 + 10 + 45) / 2**10
    (1.0, 0.109375, 0.109375)
    >>> paired_sign_test(20, 3)  # 2 * (C(23,0) + C(23,1) + C(23,2) + C(23,3)) / 2**23 = 2 * 2048 / 2**23
    0.00048828125

    Raises:
        ValueError: a negative count.
    """
    if gained < 0 or lost < 0:
        raise ValueError(f"counts must be >= 0, got {gained} and {lost}")
    n, k = gained + lost, min(gained, lost)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)
