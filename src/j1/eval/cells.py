"""How every report writes a rate and its interval: the one formatter behind eval's, consistency's, RewardBench
2's and attack's report.md and the exported judge's card. A leaf (pure: numbers in, text out).
"""

from __future__ import annotations

from typing import Any

NONE = "–"  # a rate or interval metrics.json holds as null


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def pct(x: Any, unit: str = "") -> str:
    """A rate in [0, 1] as a percentage with one decimal; ``NONE`` for a missing one.

    >>> pct(0.8125), pct(0.5, "%"), pct(None)
    ('81.2', '50.0%', '–')
    """
    return f"{100 * x:.1f}{unit}" if _number(x) else NONE


def interval(ci: Any, missing: str = NONE) -> str:
    """A 95% interval of a rate as ``[lo, hi]`` in percent; ``missing`` where there is none (null in
    metrics.json: too few items, ``j1.eval.stats.MIN_CI_N``).

    >>> interval([0.25, 0.5]), interval(None), interval(None, "n < 10")
    ('[25.0, 50.0]', '–', 'n < 10')
    """
    ok = isinstance(ci, list | tuple) and len(ci) == 2 and all(_number(v) for v in ci)
    return f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ok else missing
