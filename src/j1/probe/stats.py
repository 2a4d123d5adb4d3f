"""The statistics of ``j1 probe`` (``j1.probe.runner``), pure functions of per-pair readings: a pav judge's
verdict log-odds in both orders (``PairLogOdds``, ``summarise``) and a pos judge's expected scores
(``expected_score``, ``PairScores``, ``summarise_scores``), each mean with its standard error over pairs."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from j1.eval.stats import mean_se
from j1.pairs import Order, shown_label
from j1.pairs import order as parse_order

DIGITS = tuple(str(d) for d in range(10))  # the scores a pos probe reads, one token each


@dataclass(frozen=True)
class PairLogOdds:
    """One pair's verdict log-odds, log p(A)/p(B) of the letter *as shown*, in each order.

    Attributes:
        pair_id: the pair.
        label: the better response in the original placement (``A`` or ``B``).
        ab: log-odds of the first-shown response in order AB (A shown first).
        ba: log-odds of the first-shown response in order BA (B shown first).
        kind: the pair's kind (``math-mismatch``, ``chat``, ...), for the per-kind breakdown.
    """

    pair_id: str
    label: str
    ab: float
    ba: float
    kind: str = ""

    def better(self, order: str) -> float:
        """Log-odds of the better response in ``order``.

        >>> PairLogOdds("p", "A", ab=2.0, ba=1.0).better("BA")
        -1.0
        """
        logodds = self.ab if parse_order(order) is Order.AB else self.ba
        return logodds if shown_label(self.label, order) == "A" else -logodds

    @property
    def margin(self) -> float:
        """The content margin: the better response's log-odds averaged over both orders, so a
        preference for a position (which adds the same amount to both orders' first-shown log-odds)
        cancels.

        >>> PairLogOdds("p", "A", ab=2.0, ba=1.0).margin
        0.5
        """
        return (self.better(Order.AB) + self.better(Order.BA)) / 2

    @property
    def first_shown(self) -> float:
        """The position preference: the first-shown response's log-odds averaged over both orders.

        >>> PairLogOdds("p", "A", ab=2.0, ba=1.0).first_shown
        1.5
        """
        return (self.ab + self.ba) / 2


@dataclass(frozen=True)
class ProbeStats:
    """What the probe reports for a set of pairs; ``*_se`` is the standard error of the mean over
    pairs (None for a single pair)."""

    pairs: int
    content_margin: float
    content_margin_se: float | None
    content_acc: float
    content_acc_se: float | None
    position_bias: float
    position_bias_se: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _content_stats(pairs: Sequence, third: Callable[[Any], float]) -> tuple:
    """(pairs, margin, its se, accuracy, its se, mean of ``third``, its se): what both probes report,
    from records with a ``margin`` (> 0: the better response preferred; a zero margin is not right).

    Raises:
        ValueError: no pairs.
    """
    if not pairs:
        raise ValueError("the probe needs at least one pair")
    margin, margin_se = mean_se([p.margin for p in pairs])
    acc, acc_se = mean_se([float(p.margin > 0) for p in pairs])
    value, value_se = mean_se([third(p) for p in pairs])
    return len(pairs), margin, margin_se, acc, acc_se, value, value_se


def summarise(pairs: Sequence[PairLogOdds]) -> ProbeStats:
    """Content margin, content accuracy (share of pairs with a positive margin; a zero margin is
    not counted) and position bias over ``pairs``, each with its standard error.

    Raises:
        ValueError: no pairs.
    """
    return ProbeStats(*_content_stats(pairs, lambda p: p.first_shown))


def summarise_by_kind(pairs: Sequence, summary: Callable[[Sequence], Any] = summarise) -> dict[str, Any]:
    """``summary`` (``summarise``, or ``summarise_scores`` for ``PairScores``) per pair kind, kinds in
    sorted order."""
    kinds = sorted({p.kind for p in pairs})
    return {k: summary([p for p in pairs if p.kind == k]) for k in kinds}


def expected_score(logprobs: Sequence[float]) -> float:
    """The expected digit from the log-probabilities of the digits 0-9 as the next token, renormalised
    over the ten (the rest of the vocabulary is left out, so the scale is 0-9 whatever mass it has).

    >>> expected_score([0.0] * 10)  # uniform: (0 + 1 + ... + 9) / 10
    4.5

    Raises:
        ValueError: not ten values, or none of them finite (no digit has any probability).
    """
    if len(logprobs) != len(DIGITS):
        raise ValueError(f"expected_score needs {len(DIGITS)} log-probabilities (digits 0-9), got {len(logprobs)}")
    top = max(logprobs)
    if not math.isfinite(top):
        raise ValueError(f"expected_score: no digit has a finite log-probability ({list(logprobs)})")
    weights = [math.exp(x - top) for x in logprobs]  # shifted by the largest: no overflow, same ratios
    return sum(d * w for d, w in enumerate(weights)) / sum(weights)


@dataclass(frozen=True)
class PairScores:
    """One pair's expected scores from a pointwise judge, each response shown alone.

    Attributes:
        pair_id: the pair.
        label: the better response (``A`` or ``B``).
        a, b: the expected scores of response A and response B (``expected_score``).
        kind: the pair's kind, for the per-kind breakdown.
    """

    pair_id: str
    label: str
    a: float
    b: float
    kind: str = ""

    @property
    def margin(self) -> float:
        """Expected score of the better response minus the worse one's (> 0: ranked right).

        >>> PairScores("p", "B", a=6.0, b=4.5).margin
        -1.5
        """
        return self.a - self.b if self.label == "A" else self.b - self.a

    @property
    def mean(self) -> float:
        """The mean of the two expected scores.

        >>> PairScores("p", "A", a=6.0, b=4.5).mean
        5.25
        """
        return (self.a + self.b) / 2


@dataclass(frozen=True)
class ScoreStats:
    """What the probe reports for a pointwise judge on a set of pairs (``*_se`` as in ``ProbeStats``):
    margins in score points, and the mean expected score over both responses of every pair."""

    pairs: int
    content_margin: float
    content_margin_se: float | None
    content_acc: float
    content_acc_se: float | None
    mean_score: float
    mean_score_se: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarise_scores(pairs: Sequence[PairScores]) -> ScoreStats:
    """Content margin, content accuracy (share of pairs with a positive margin) and mean score over
    ``pairs``, each with its standard error over pairs.

    Raises:
        ValueError: no pairs.
    """
    return ScoreStats(*_content_stats(pairs, lambda p: p.mean))


