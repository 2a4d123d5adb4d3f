"""What ``j1 serve`` computes, as pure functions: the prompt-prefix stripping of OpenRLHF queries, the
unit of work it batches (``Task``), and the reward arithmetic shared with ``j1.integrations.trl``.
The bodies it takes and answers are ``j1.serve.bodies``.

An item of a ``/get_reward`` batch that cannot be judged (its prompt does not fit the judge's context) gets
``error_reward`` instead of failing the batch; ``extra_logs["error_rate"]`` counts such items and ``errors``
says which and why.

Both endpoints take what the judge reads besides the responses (issue 54): ``criteria`` (what to judge by)
and ``reference`` (a gold answer to the prompt). They are not OpenRLHF's ``labels``, which are the responses
a pairwise judge compares each response against.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from j1.formats import JudgeFormat, require_arity
from j1.formats.base import Guidance
from j1.judging.judge import Judgment
from j1.pairs import Verdict, flip_rate, flipped, share

# A request holds one response (rated alone) or two (a pair, judged in both orders); a four-way
# format has no request to answer, so it is refused when the server starts (issue 44).
SERVED_ARITIES = (1, 2)


def served_format(name: str) -> JudgeFormat:
    """The format ``name`` if ``j1 serve`` can judge requests in it; ValueError in one line otherwise.

    >>> served_format("pos").name
    'pos'
    """
    return require_arity(name, SERVED_ARITIES, "j1 serve")


class RequestError(ValueError):
    """A malformed request; the message says which field and why (the 400 answer), ``code`` the
    machine-readable kind (``invalid_json``, ``invalid_request``, ``unknown_field``)."""

    def __init__(self, message: str, code: str = "invalid_request"):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ItemError:
    """Why one item of a ``/get_reward`` batch was not judged (it gets the error reward)."""

    index: int
    code: str
    message: str

    def to_json(self) -> dict:
        return {"index": self.index, "code": self.code, "message": self.message}


@dataclass(frozen=True)
class Task:
    """One judgment ``j1 serve`` batches: a ``/v1/judge`` request, or one item of a ``/get_reward``
    batch. A pair to compare in both orders (``response_b`` set) or one response to score alone
    (``response_b`` None, pointwise); ``samples`` None uses the judge's own. ``j1.serve.tasks`` runs it."""

    prompt: str
    response_a: str
    response_b: str | None = None
    samples: int | None = None
    criteria: str | None = None  # what to judge by
    reference: str | None = None  # a gold answer to the prompt

    @property
    def guidance(self) -> Guidance:
        return Guidance(self.criteria, self.reference)


def strip_prompt(query: str, prompt: str) -> str:
    """The response in an OpenRLHF query: the query with its prompt prefix removed.

    >>> strip_prompt("Q: 2+2? A: 4", "Q: 2+2? ")
    'A: 4'
    >>> strip_prompt("A: 4", "Q: 2+2? ")
    Traceback (most recent call last):
    j1.serve.protocol.RequestError: the query does not start with its prompt
    """
    if not query.startswith(prompt):
        raise RequestError("the query does not start with its prompt")
    return query[len(prompt):]


def pairwise_reward(verdicts: Sequence[str]) -> float:
    """The share of a pair's judge samples (both orders) that prefer the response (A, in original
    naming) over the reference (B); tie and invalid do not prefer it.

    >>> pairwise_reward(["A", "A"]), pairwise_reward(["A", "B"]), pairwise_reward(["A", "invalid", "tie", "A"])
    (1.0, 0.5, 0.5)
    """
    if not verdicts:
        raise ValueError("no judge samples to reward")
    return sum(Verdict(v) is Verdict.A for v in verdicts) / len(verdicts)


def pointwise_reward(score: float | None) -> float:
    """A 0-10 score scaled to 0-1; no valid score (None) gives 0.0 (and is counted as invalid).

    >>> pointwise_reward(8.0), pointwise_reward(None)
    (0.8, 0.0)
    """
    return 0.0 if score is None else score / 10


@dataclass(frozen=True)
class Rewards:
    """One reward per item and the batch's logs: ``invalid_rate`` (share of judge samples without a
    valid answer), ``flip_rate`` (pairwise: ``j1.pairs.flip_rate``, the share of the items valid in
    both orders whose orders disagree; 0.0 when none is) and ``n`` (items)."""

    rewards: list[float]
    logs: dict[str, float]

    def to_json(self) -> dict:
        """The ``/get_reward`` answer; ``scores`` (OpenRLHF's 0-1 filter value) equals ``rewards``."""
        return {"rewards": self.rewards, "scores": self.rewards, "extra_logs": self.logs}


def pairwise_rewards(judgments: Sequence[Judgment]) -> Rewards:
    """Rewards of (response, reference) pairs judged with the response as A.

    >>> from j1.judging.judge import OrderResult, Sample
    >>> s = lambda v: Sample(v, None, None, "")
    >>> both = Judgment("pav", "A", [OrderResult("AB", "A", [s("A")]), OrderResult("BA", "A", [s("A")])], None)
    >>> biased = Judgment("pav", "inconsistent", [OrderResult("AB", "A", [s("A")]), OrderResult("BA", "B", [s("B")])], None)
    >>> pairwise_rewards([both, biased])
    Rewards(rewards=[1.0, 0.5], logs={'invalid_rate': 0.0, 'flip_rate': 0.5, 'n': 2})
    """
    if not judgments:
        raise ValueError("no judgments to reward")
    rewards, votes, flips = [], [], []
    for j in judgments:
        verdicts = [s.verdict for o in j.orders for s in o.samples]
        rewards.append(pairwise_reward(verdicts))
        votes += verdicts
        ab, ba = (o.verdict for o in j.orders)
        flips.append(flipped(ab, ba))
    n = len(judgments)
    flip = flip_rate(flips)  # logs are numbers only (OpenRLHF): 0.0 when no item was valid in both orders
    return Rewards(rewards, {"invalid_rate": share(votes, Verdict.INVALID) or 0.0,
                             "flip_rate": 0.0 if flip is None else flip, "n": n})


def group_rewards(n: int, pairs: Sequence[tuple[int, int]], judgments: Sequence[Judgment | None]) -> Rewards:
    """Reference-free rewards of ``n`` responses: each one's win rate (``j1.rewards.group.win_rates``:
    a tie is half a win, an invalid vote is dropped, no valid vote gives 0.5) over the ``pairs``
    ``(i, j)`` judged with ``i`` as A; a pair that could not be judged (None) gives no vote.

    Logs: ``invalid_rate`` and ``flip_rate`` over the judged pairs, ``no_contest_rate`` (the share of
    responses without a valid vote), ``comparisons`` (pairs judged) and ``n``.

    >>> from j1.judging.judge import OrderResult, Sample
    >>> s = lambda v: Sample(v, None, None, "")
    >>> j = lambda ab, ba: Judgment("pav", "x", [OrderResult("AB", ab, [s(ab)]), OrderResult("BA", ba, [s(ba)])], None)
    >>> group_rewards(3, [(0, 1), (0, 2), (1, 2)], [j("A", "A"), j("A", "B"), None])
    Rewards(rewards=[0.75, 0.0, 0.5], logs={'invalid_rate': 0.0, 'flip_rate': 0.5, 'no_contest_rate': 0.0, 'comparisons': 2, 'n': 3})
    """
    from j1.rewards.group import NO_CONTEST, win_rates

    if n < 1:
        raise ValueError("no responses to reward")
    if len(pairs) != len(judgments):
        raise ValueError(f"{len(judgments)} judgments for {len(pairs)} pairs")
    outcomes, flips = [], []
    for (i, j), judgment in zip(pairs, judgments, strict=True):
        if judgment is None:
            continue
        votes = [s.verdict for o in judgment.orders for s in o.samples] or [judgment.verdict]
        outcomes.append((i, j, votes))
        if judgment.orders:
            flips.append(flipped(*(o.verdict for o in judgment.orders)))
    rates = win_rates(n, outcomes, no_contest=None)
    flip = flip_rate(flips)
    invalid = share([v for _, _, votes in outcomes for v in votes], Verdict.INVALID)
    logs = {"invalid_rate": invalid or 0.0, "flip_rate": 0.0 if flip is None else flip,
            "no_contest_rate": sum(r is None for r in rates) / n, "comparisons": len(outcomes), "n": n}
    return Rewards([NO_CONTEST if r is None else r for r in rates], logs)


def pointwise_rewards(results: Sequence[dict]) -> Rewards:
    """Rewards of responses scored alone (``{"score", "samples"}`` results).

    >>> from j1.judging.judge import Sample
    >>> ok, bad = Sample("A", {"A": 7.0}, None, ""), Sample("invalid", None, None, "", "no score")
    >>> pointwise_rewards([{"score": 7.0, "samples": [ok]}, {"score": None, "samples": [bad]}])
    Rewards(rewards=[0.7, 0.0], logs={'invalid_rate': 0.5, 'n': 2})
    """
    if not results:
        raise ValueError("no judgments to reward")
    invalid = share([s.verdict for r in results for s in r["samples"]], Verdict.INVALID)
    return Rewards([pointwise_reward(r["score"]) for r in results], {"invalid_rate": invalid or 0.0, "n": len(results)})


def reward_answer(rewards: Rewards | None, judged: Sequence[int], errors: Sequence[ItemError], *, n: int,
                  error_reward: float, pairwise: bool, truncated: int = 0) -> dict:
    """The ``/get_reward`` answer for ``n`` items: ``rewards`` (of the ``judged`` items, in that order;
    None when none was judged) and ``error_reward`` for each item in ``errors``.

    ``extra_logs`` keeps numbers only (OpenRLHF logs each value as one): the rates over the judged
    items (0.0 when none was), ``n`` (all items), ``error_rate`` (the share not judged) and
    ``truncated_rate`` (the share judged on shortened responses, ``--truncate``); which items failed,
    and why, is in ``errors``.

    >>> ok = Rewards([1.0], {"invalid_rate": 0.0, "flip_rate": 0.0, "n": 1})
    >>> out = reward_answer(ok, [1], [ItemError(0, "context_length_exceeded", "too long")], n=2,
    ...                     error_reward=0.0, pairwise=True)
    >>> out["rewards"], out["extra_logs"]
    ([0.0, 1.0], {'invalid_rate': 0.0, 'flip_rate': 0.0, 'n': 2, 'error_rate': 0.5, 'truncated_rate': 0.0})
    >>> out["errors"]
    [{'index': 0, 'code': 'context_length_exceeded', 'message': 'too long'}]
    """
    if len(judged) + len(errors) != n:
        raise ValueError(f"{len(judged)} judged and {len(errors)} failed items do not make {n}")
    values = [error_reward] * n
    logs: dict[str, float] = {"invalid_rate": 0.0, **({"flip_rate": 0.0} if pairwise else {})}
    if rewards is not None:
        if len(rewards.rewards) != len(judged):
            raise ValueError(f"{len(rewards.rewards)} rewards for {len(judged)} judged items")
        for i, r in zip(judged, rewards.rewards, strict=True):
            values[i] = r
        logs = dict(rewards.logs)
    if n < 1:
        raise ValueError("no items to reward")
    logs.update(n=n, error_rate=len(errors) / n, truncated_rate=truncated / n)
    return {"rewards": values, "scores": values, "extra_logs": logs,
            "errors": [e.to_json() for e in sorted(errors, key=lambda e: e.index)]}
