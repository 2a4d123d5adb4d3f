"""The verdict vocabulary: what a judgment says (``Verdict``) and one parsed completion (``Parsed``).

A leaf: it imports nothing of j1, so the formats that parse and ``j1.pairs``, which maps a parse back to a
pair's original labels, both read it without importing each other.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Verdict(enum.StrEnum):
    """What a judgment says. Every parser maps every string to exactly one of its format's verdicts:
    a shown position (A, B; C and D only in the four-way format, ``JudgeFormat.positions``), tie or
    invalid. ``inconsistent`` is never parsed: it is the verdict of a pair whose two orders disagree
    (``combine_orders``)."""

    A = "A"
    B = "B"
    C = "C"
    D = "D"
    TIE = "tie"
    INVALID = "invalid"
    INCONSISTENT = "inconsistent"


@dataclass(frozen=True)
class Parsed:
    """One parsed completion, in the positions *as shown* to the judge.

    Attributes:
        verdict: A, B, tie or invalid (four-way: the pick, A to D, or invalid). For the pointwise
            format a valid parse is ``A`` (the single response, shown as A) and the score is in
            ``scores["A"]``.
        scores: ``{"A": x, "B": y}`` (pairwise score formats) or ``{"A": x}`` (pointwise), else None.
        thought: the text inside the think block, None when there is none.
        error: why the text is invalid (None when valid); for logs and error analysis.
    """

    verdict: Verdict
    scores: dict[str, float] | None = None
    thought: str | None = None
    error: str | None = field(default=None, compare=False)

    @property
    def valid(self) -> bool:
        return self.verdict is not Verdict.INVALID
