"""J1 rewards as pure functions over a batch of rollouts: the one implementation that ``j1 train``
(TRL), ``j1 reward`` (offline) and any other engine call.

A *rollout* is one judge completion for one prompt of one pair. Pairwise formats (pav, pas, pavs)
judge every pair in both orders: ``order`` is ``AB`` (the pair's first response shown first) or
``BA``. The pointwise format (pos) judges each response alone: ``order`` is then the slot ``A`` or
``B`` (which of the pair's responses was scored). ``label`` names the better response in the
original AB naming, whatever order it was shown in.

Rewards (issue #5, J1 paper sec. 2):

- correctness (pav, pavs): 1 if the rollout's verdict picks the better response in the order shown,
  else 0; a tie or an unparseable output is 0 (never 0.5).
- correctness (pas): 1[score of the better > score of the worse]; equal scores are 0.
- consistency (pairwise), mode ``expected``: the rollout's correctness x the mean correctness of the
  other order's rollouts of the same pair (the expected value of "both orders right" against a
  random rollout of the other order); mode ``index``: rollout k of one order is paired with rollout k
  of the other, 1 if both are right. ``None`` when the other order is not in the batch.
- pos: a rollout's score is set against the other response's rollouts (their mean valid score in
  ``expected`` mode, rollout k in ``index`` mode); 1 if that ranks the better response above the
  worse, else 0 (ties, invalid). It is reported as ``correctness``; ``consistency`` is None.
- total = w_correct x correctness + w_consistency x consistency (a None component adds nothing).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from j1.formats import JudgeFormat, Verdict, get_format, require_arity
from j1.pairs import LABELS, compare_scores, orient, other, slots

CONSISTENCY_MODES = ("expected", "index")
# What a judge is trained to answer: a format the rewards score, or ``multitask`` (pas and pos rows in
# one run, j1.train.data.formulation_formats). j1 train, warmup and export verl check against it.
FORMULATIONS = ("pav", "pas", "pavs", "pos", "multitask")
# The rewards score a response alone (pointwise) or a pair in both orders; a four-way pick has neither
# a pair's label nor a partner order, so its formats are refused (issue 44).
REWARD_ARITIES = (1, 2)


def reward_format(name: str) -> JudgeFormat:
    """The format ``name`` if the J1 rewards can score it; ValueError in one line otherwise.

    >>> reward_format("pas").arity
    2
    >>> reward_format("fourway")
    Traceback (most recent call last):
    ...
    ValueError: format 'fourway' shows 4 responses per prompt; the J1 rewards can score only formats that show 1 or 2 (pas, pav, pavs or pos)
    """
    return require_arity(name, REWARD_ARITIES, "the J1 rewards")


@dataclass(frozen=True)
class Rollout:
    """One completion to reward. See the module docstring for ``order`` and ``label``."""

    pair_id: str
    order: str
    label: str
    completion: str
    format: str


@dataclass(frozen=True)
class Judged:
    """A rollout's parse in ORIGINAL naming (A = the pair's first response)."""

    verdict: Verdict
    shown_verdict: Verdict  # as shown to the judge; for position-bias metrics
    score: float | None  # pos: the score of the response in this slot
    thought: str | None


@dataclass(frozen=True)
class RewardParts:
    correctness: float
    consistency: float | None
    total: float


def default_consistency_weight(fmt: str) -> float:
    """The consistency weight when none is given: 1 for a pair format whose answer names the verdict
    (pav, pavs), 0 for pas (scores only: its J1 reward is the score comparison alone) and pos (no
    consistency component). ``j1 reward`` and verl's reward use it.

    >>> default_consistency_weight("pavs"), default_consistency_weight("pas")
    (1.0, 0.0)
    """
    shape = reward_format(fmt)
    return 1.0 if shape.pairwise and shape.names_position else 0.0


def check_rollout(r: Rollout) -> None:
    """Raise ValueError naming the field when a rollout cannot be rewarded."""
    fmt = reward_format(r.format)
    allowed = slots(fmt.pairwise)
    if r.order not in allowed:
        raise ValueError(f"order {r.order!r} is not valid for format {r.format!r}; use one of {allowed}")
    if r.label not in LABELS:
        raise ValueError(f"label {r.label!r}: must be 'A' or 'B' (the better response, in AB naming)")


def judge_rollout(r: Rollout) -> Judged:
    """Parse ``r.completion`` with its format and map the result to original naming (ValueError for a
    format the rewards cannot score)."""
    fmt = reward_format(r.format)
    parsed = fmt.parse(r.completion)
    if fmt.pairwise:
        verdict, _ = orient(parsed, r.order)
        return Judged(verdict, parsed.verdict, None, parsed.thought)
    score = parsed.scores["A"] if parsed.valid else None
    return Judged(parsed.verdict, parsed.verdict, score, parsed.thought)


def _groups(rollouts: Sequence[Rollout]) -> dict[tuple[str, str, str], list[int]]:
    """Indices of the rollouts of each (format, pair_id, order), in batch order (rollout k = k-th)."""
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for i, r in enumerate(rollouts):
        groups[(r.format, r.pair_id, r.order)].append(i)
    return groups


def score_rollouts(
    rollouts: Sequence[Rollout],
    *,
    consistency: str = "expected",
    w_correct: float = 1.0,
    w_consistency: float = 1.0,
    judged: Sequence[Judged] | None = None,
) -> list[RewardParts]:
    """Reward every rollout of a batch; both orders (slots) of a pair must be in the same batch.

    Args:
        rollouts: the batch, any order; the k-th rollout of a (pair, order) is its rollout k.
        consistency: ``expected`` or ``index`` (see the module docstring).
        w_correct, w_consistency: weights of the two components in ``total``.
        judged: ``[judge_rollout(r) for r in rollouts]`` if already computed.

    Returns:
        One RewardParts per rollout, in input order.

    >>> ab = Rollout("p", "AB", "A", "<think>x</think><answer>[[A]]</answer>", "pav")
    >>> ba = Rollout("p", "BA", "A", "<think>x</think><answer>[[A]]</answer>", "pav")
    >>> [(p.correctness, p.consistency, p.total) for p in score_rollouts([ab, ba])]
    [(1.0, 0.0, 1.0), (0.0, 0.0, 0.0)]
    """
    if consistency not in CONSISTENCY_MODES:
        raise ValueError(f"consistency {consistency!r}: choose one of {CONSISTENCY_MODES}")
    judged = list(judged) if judged is not None else [judge_rollout(r) for r in rollouts]
    groups = _groups(rollouts)
    correct = [0.0] * len(rollouts)
    cons: list[float | None] = [None] * len(rollouts)
    rank_in_group: dict[int, int] = {i: k for idxs in groups.values() for k, i in enumerate(idxs)}

    for i, (r, j) in enumerate(zip(rollouts, judged, strict=True)):
        if reward_format(r.format).pairwise:
            correct[i] = 1.0 if j.verdict.value == r.label else 0.0

    for i, (r, j) in enumerate(zip(rollouts, judged, strict=True)):
        partner = groups.get((r.format, r.pair_id, other(r.order)), [])
        k = rank_in_group[i]
        if reward_format(r.format).pairwise:
            if not partner:
                continue  # partner order missing: consistency undefined (None)
            if consistency == "expected":
                cons[i] = correct[i] * (sum(correct[o] for o in partner) / len(partner))
            elif k < len(partner):
                cons[i] = correct[i] * correct[partner[k]]
        else:
            correct[i] = _pointwise_rank(r, j, [judged[o] for o in partner], k, consistency)

    return [
        RewardParts(c, s, w_correct * c + (0.0 if s is None else w_consistency * s))
        for c, s in zip(correct, cons, strict=True)
    ]


def _pointwise_rank(r: Rollout, j: Judged, others: list[Judged], k: int, mode: str) -> float:
    """1 if this rollout's score, against the other response's, ranks the better one higher."""
    if j.score is None:
        return 0.0
    if mode == "expected":
        scores = [o.score for o in others if o.score is not None]
        if not scores:
            return 0.0  # nothing valid to rank against (or partner missing): no ranking shown
        other = sum(scores) / len(scores)
    else:
        if k >= len(others) or others[k].score is None:
            return 0.0
        other = others[k].score
    # This slot's score against the other response's (mean): right when it names the better one (strict).
    wanted = Verdict.A if r.order == r.label else Verdict.B
    return 1.0 if compare_scores(j.score, other) is wanted else 0.0


def shown_positions(rollouts: Sequence[Rollout], judged: Sequence[Judged] | None = None) -> list[float]:
    """Which shown position each pairwise verdict names: +1 the response shown first, -1 the one shown
    second, 0 for a tie, an invalid output or a pointwise rollout (no position to prefer).

    >>> shown_positions([Rollout("p", o, "A", f"<think>x</think><answer>[[{v}]]</answer>", "pav")
    ...                  for o, v in (("AB", "A"), ("BA", "A"), ("BA", "B"), ("AB", "C"))])
    [1.0, 1.0, -1.0, 0.0]
    """
    judged = judged if judged is not None else [judge_rollout(r) for r in rollouts]
    sign = {Verdict.A: 1.0, Verdict.B: -1.0}
    return [sign.get(j.shown_verdict, 0.0) if get_format(r.format).pairwise else 0.0
            for r, j in zip(rollouts, judged, strict=True)]


def format_reward(rollouts: Sequence[Rollout], judged: Sequence[Judged] | None = None) -> list[float]:
    """1 for a completion its format parses, else 0 (the optional ablation reward).

    >>> format_reward([Rollout("p", "AB", "A", "[[A]]", "pav")])
    [0.0]
    """
    judged = judged if judged is not None else [judge_rollout(r) for r in rollouts]
    return [0.0 if j.verdict is Verdict.INVALID else 1.0 for j in judged]
