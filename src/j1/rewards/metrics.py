"""Per-batch training metrics over rewarded rollouts: accuracy per order, flip rate, invalid rate,
position bias and thought length. Pure: records in, numbers out."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from j1.formats import Verdict, get_format
from j1.formats.thoughts import thought_spread
from j1.pairs import ORDERS, Order, flip_rate, flipped, other, share
from j1.rewards.core import Judged, RewardParts, Rollout


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def batch_metrics(rollouts: Sequence[Rollout], judged: Sequence[Judged], parts: Sequence[RewardParts]) -> dict[str, float]:
    """Metrics of one batch; a metric with nothing to count is left out (never reported as 0).

    Keys: ``acc/AB``, ``acc/BA`` (pairwise: mean correctness of the rollouts shown in that order),
    ``acc/pos`` (pointwise ranking reward), ``invalid_rate``, ``flip_rate`` (``j1.pairs.flipped``
    over rollout k of AB and rollout k of BA: of those both valid, the share whose verdicts differ), ``shown_A_share`` (share of
    valid pairwise verdicts naming the FIRST shown response: 0.5 is unbiased), ``thought_words`` and the keys of
    ``thought_spread`` (over the rollouts that wrote a thought),
    ``missing_partner`` (share of rollouts whose pair's other order/slot is not in the batch).

    Raises:
        ValueError: on an empty batch.

    >>> r = [Rollout("p", o, "A", "<think>a b</think><answer>[[A]]</answer>", "pav") for o in ("AB", "BA")]
    >>> from j1.rewards.core import judge_rollout, score_rollouts
    >>> j = [judge_rollout(x) for x in r]
    >>> m = batch_metrics(r, j, score_rollouts(r))
    >>> m["acc/AB"], m["acc/BA"], m["flip_rate"], m["shown_A_share"], m["thought_words"]
    (1.0, 0.0, 1.0, 1.0, 2.0)
    """
    if not rollouts:
        raise ValueError("batch_metrics: empty batch")
    by_order: dict[str, list[float]] = defaultdict(list)
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    shown_a: list[float] = []
    thoughts: list[float] = []
    texts: list[tuple[str, str]] = []
    for i, (r, j, p) in enumerate(zip(rollouts, judged, parts, strict=True)):
        groups[(r.format, r.pair_id, r.order)].append(i)
        pairwise = get_format(r.format).pairwise
        by_order[r.order if pairwise else "pos"].append(p.correctness)
        if pairwise and j.shown_verdict in (Verdict.A, Verdict.B):
            shown_a.append(1.0 if j.shown_verdict is Verdict.A else 0.0)
        if j.thought is not None:
            thoughts.append(float(len(j.thought.split())))
            texts.append((f"{r.format}|{r.pair_id}|{r.order}", j.thought))
    flips: list[bool | None] = []
    missing = 0
    for (fmt, pid, order), idxs in groups.items():
        partner = groups.get((fmt, pid, other(order)))
        if partner is None:
            missing += len(idxs)
            continue
        if order != Order.AB:
            continue
        for a, b in zip(idxs, partner, strict=False):  # index-paired; extra rollouts of one order are not paired
            flips.append(flipped(judged[a].verdict, judged[b].verdict))
    out = {
        "invalid_rate": share([j.verdict for j in judged], Verdict.INVALID),
        "missing_partner": missing / len(rollouts),
    }
    for key, xs in (
        *((f"acc/{o}", by_order.get(o, [])) for o in ORDERS),
        ("acc/pos", by_order.get("pos", [])),
        ("shown_A_share", shown_a),
        ("thought_words", thoughts),
    ):
        m = _mean(xs)
        if m is not None:
            out[key] = m
    flip = flip_rate(flips)
    if flip is not None:
        out["flip_rate"] = flip
    if texts:
        out.update(thought_spread(texts))
    return out
