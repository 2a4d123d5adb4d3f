"""Judging pairs in both orders and aggregating samples: the logic behind ``j1 judge`` and ``j1 eval``.

Orders and the mapping back to the original responses live in ``j1.pairs``; every verdict here
names the *original* responses.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from j1.backends import Backend, Completion, Messages, SamplingParams
from j1.formats import JudgeFormat, Verdict
from j1.formats.base import Guidance
from j1.judging.chat import with_prefill
from j1.pairs import ORDERS, SLOTS, combine_orders, compare_scores, orient, plurality, render_both
from j1.runs.atomic import plain


@dataclass
class Sample:
    """One judge completion, in terms of the original responses."""

    verdict: str
    scores: dict[str, float] | None
    thought: str | None
    text: str
    error: str | None = None  # why the verdict is invalid (the parser's reason); None when valid
    finish_reason: str | None = None  # the backend's "stop" or "length"; None for a plain string
    # The verdict's log-odds for the original A over B at the verdict token, from an engine's logprobs
    # (``verdict_margin``); None when none came back or the format names no position.
    margin: float | None = None


@dataclass
class OrderResult:
    order: str
    verdict: str
    samples: list[Sample]


@dataclass
class Judgment:
    """The ``j1 judge --json`` object. ``responses`` is set for pointwise runs only."""

    format: str
    verdict: str
    orders: list[OrderResult]
    scores: dict[str, float] | None
    responses: dict[str, dict] | None = field(default=None)


def majority(verdicts: Iterable[Verdict | str]) -> Verdict:
    """An order's verdict from its samples: ``j1.pairs.plurality`` of the valid verdicts (A, B, tie);
    a shared top count is a tie; none valid is invalid.

    >>> majority(["A", "A", "B", "invalid"]), majority(["A", "B"]), majority(["invalid"])
    (<Verdict.A: 'A'>, <Verdict.TIE: 'tie'>, <Verdict.INVALID: 'invalid'>)
    """
    return Verdict(plurality(Verdict(v) for v in verdicts))


def mean_scores(samples: Iterable[Sample]) -> dict[str, float] | None:
    """Mean of each response's score over the samples that have scores; None if none do."""
    sums: dict[str, float] = {}
    counts: Counter = Counter()
    for s in samples:
        for k, v in (s.scores or {}).items():
            sums[k] = sums.get(k, 0.0) + v
            counts[k] += 1
    return {k: sums[k] / counts[k] for k in sorted(sums)} or None


def mean_score(samples: Iterable[Sample]) -> float | None:
    """A pointwise response's score: the mean over its samples that scored it (each sample scores the
    one response, under its slot); None when none did.

    >>> mean_score([Sample("A", {"A": 8.0}, None, ""), Sample("A", {"A": 5.0}, None, ""), Sample("invalid", None, None, "")])
    6.5
    """
    means = mean_scores(samples)
    if means is None:
        return None
    if len(means) != 1:
        raise ValueError(f"mean_score reads pointwise samples (one score each), got scores for {sorted(means)}")
    return next(iter(means.values()))


def compare_means(samples_a: Iterable[Sample], samples_b: Iterable[Sample]) -> tuple[float | None, float | None, Verdict]:
    """The one "mean score, then compare" of a pointwise judge: each response's ``mean_score``, then the
    higher mean wins (``j1.pairs.compare_scores``: equal is a tie, a missing mean is invalid).

    Returns:
        ``(score_a, score_b, verdict)``, the verdict in original naming.

    >>> s = lambda x: Sample("A", {"A": x}, None, "")
    >>> compare_means([s(8.0), s(6.0)], [s(9.0), s(3.0)]), compare_means([s(1.0)], [])
    ((7.0, 6.0, <Verdict.A: 'A'>), (1.0, None, <Verdict.INVALID: 'invalid'>))
    """
    score_a, score_b = mean_score(samples_a), mean_score(samples_b)
    return score_a, score_b, compare_scores(score_a, score_b)


def why_invalid(reason: str, completion: Completion | str) -> str:
    """The parser's ``reason``, led by the cut-off when the token limit ended the completion (then the
    limit, not the judge, is the likely cause).

    >>> why_invalid("no <answer> tag", Completion("<think>…", "length", 8))
    'cut off at the token limit (8 tokens) before a valid answer: no <answer> tag'
    >>> why_invalid("no <answer> tag", "<think>…</think>")
    'no <answer> tag'
    """
    if isinstance(completion, str) or completion.finish_reason != "length":
        return reason
    # A server that reports no usage gives 0 tokens: leave the count out rather than print a false one.
    count = f" ({completion.completion_tokens} tokens)" if completion.completion_tokens else ""
    return f"cut off at the token limit{count} before a valid answer: {reason}"


_VERDICT_OPEN = re.compile(r"\[\[\s*$")


def verdict_margin(fmt: JudgeFormat, completion: Completion | str) -> float | None:
    """The log-odds of shown A over shown B at the token where the judge names its verdict (right after
    ``[[``), from the logprobs an engine returned; None without logprobs, for a format that names no
    position or shows more than two, or when no verdict token was generated (e.g. it was in the prefill).

    A letter missing from the token's top alternatives is given the lowest listed logprob, so the margin is
    then a bound: the true one is at least as large.

    >>> from j1.backends import TokenLogprob
    >>> from j1.formats import get_format
    >>> c = Completion("<answer>[[A]]</answer>", "stop", 5, [TokenLogprob("[[", -0.1),
    ...     TokenLogprob("A", -0.2, {"A": -0.2, "B": -1.7}), TokenLogprob("]]</answer>", -0.01)], prefill_chars=8)
    >>> round(verdict_margin(get_format("pav"), c), 2)
    1.5
    """
    if isinstance(completion, str) or not completion.logprobs or not fmt.names_position or fmt.arity != 2:
        return None
    seen = completion.text[: completion.prefill_chars]
    for tok in completion.logprobs:
        if _VERDICT_OPEN.search(seen) and tok.token.strip() in fmt.positions:
            best: dict[str, float] = {}
            for alt, lp in {tok.token: tok.logprob, **tok.top}.items():
                letter = alt.strip()
                best[letter] = max(lp, best.get(letter, float("-inf")))
            if len(best) < 2:  # only the pick listed: nothing bounds the other letter
                return None
            floor = min(best.values())
            return best.get("A", floor) - best.get("B", floor)
        seen += tok.token
    return None


def to_sample(fmt: JudgeFormat, completion: Completion | str, order: str) -> Sample:
    """Parse one completion shown in ``order`` (``AB``/``BA``; pointwise: ``A``/``B``, the response it scored)."""
    text, finish = (completion, None) if isinstance(completion, str) else (completion.text, completion.finish_reason)
    parsed = fmt.parse(text)
    if fmt.pairwise:
        verdict, scores = orient(parsed, order)
    else:
        verdict = parsed.verdict
        scores = None if parsed.scores is None else {order: parsed.scores["A"]}
    # Parsers give a reason with every invalid parse; the fallback keeps "error is None iff valid" for any format.
    error = None if parsed.valid else why_invalid(parsed.error or "the parser gave no reason", completion)
    margin = verdict_margin(fmt, completion)
    if margin is not None and order == "BA":  # shown A is the original B
        margin = -margin
    return Sample(verdict.value, scores, parsed.thought, text, error, finish, margin)


def first_error(samples: Iterable[Sample]) -> str | None:
    """The reason of the first invalid sample, None when all are valid (``j1 judge`` shows it per order)."""
    return next((s.error for s in samples if s.error is not None), None)


def assemble(fmt: JudgeFormat, completions: dict[str, Sequence[Completion | str]]) -> Judgment:
    """A Judgment from each slot's completions (slots as in ``j1.pairs.render_both``)."""
    if fmt.pairwise:
        orders = []
        for order in (o.value for o in ORDERS):
            samples = [to_sample(fmt, c, order) for c in completions[order]]
            orders.append(OrderResult(order, majority(s.verdict for s in samples).value, samples))
        all_samples = [s for o in orders for s in o.samples]
        return Judgment(fmt.name, combine_orders(orders[0].verdict, orders[1].verdict), orders, mean_scores(all_samples))
    samples = {slot: [to_sample(fmt, c, slot) for c in completions[slot]] for slot in SLOTS}
    sa, sb, verdict = compare_means(samples["A"], samples["B"])
    responses = {slot: {"score": score, "samples": samples[slot]} for slot, score in zip(SLOTS, (sa, sb), strict=True)}
    scores = None if sa is None and sb is None else {"A": sa, "B": sb}
    return Judgment(fmt.name, verdict.value, [], scores, responses)


def judging(params: SamplingParams, fmt: JudgeFormat) -> SamplingParams:
    """``params`` for judging in ``fmt``: a completion ends where its answer does (``answer_end``), so
    nothing after the answer is returned and its finish reason is "stop"; an engine may stop at the
    answer's closing tag (``stop``)."""
    return replace(params, ends_at=fmt.answer_end, stop=(fmt.answer_tags[1],))


def judgment_margin(result: Judgment) -> float | None:
    """A pair's log-odds margin for the original A from its samples' engine logprobs (``Sample.margin``),
    averaged over both orders as ``j1 probe`` averages its reading; None when an order has none."""
    means = []
    for o in result.orders:
        margins = [s.margin for s in o.samples if s.margin is not None]
        if not margins:
            return None
        means.append(sum(margins) / len(margins))
    return sum(means) / len(means) if means else None


def low_confidence(verdict: str, margin: float, min_margin: float) -> bool:
    """Whether a pair's verdict is low-confidence: not a pick of A or B (inconsistent, tie, invalid), or its
    log-odds margin for the response it picked (``margin`` is for A) is below ``min_margin``.

    >>> low_confidence("A", 1.9, 1.0), low_confidence("B", 1.9, 1.0), low_confidence("inconsistent", 5.0, 1.0)
    (False, True, True)
    >>> low_confidence("B", -0.4, 1.0), low_confidence("B", -1.2, 1.0)
    (True, False)
    """
    if verdict not in ("A", "B"):
        return True
    return (margin if verdict == "A" else -margin) < min_margin


def judge_pairs(
    backend: Backend,
    fmt: JudgeFormat,
    items: Sequence[tuple[str, str, str]],
    params: SamplingParams,
    prefill: str | None = None,
    guides: Sequence[Guidance | None] | None = None,
) -> list[Judgment]:
    """Judge ``(prompt, response_a, response_b)`` items; all prompts of all items go to the backend
    at once so it can batch (locally) or run them concurrently (HTTP). ``prefill``: the fixed start
    of every answer (``j1.judging.chat``); ``guides``: each item's criteria and reference (None: none)."""
    if guides is not None and len(guides) != len(items):
        raise ValueError(f"{len(guides)} guides for {len(items)} items")
    slots: list[tuple[int, str]] = []
    prompts: list[Messages] = []
    for k, (prompt, a, b) in enumerate(items):
        for slot, messages in render_both(fmt, prompt, a, b, guides[k] if guides is not None else None):
            slots.append((k, slot))
            prompts.append(with_prefill(messages, prefill))
    results = backend.generate(prompts, judging(params, fmt))
    per_item: list[dict[str, list[Completion]]] = [{} for _ in items]
    for (k, slot), comps in zip(slots, results, strict=True):
        per_item[k][slot] = comps
    return [assemble(fmt, c) for c in per_item]


def judge_single(backend: Backend, fmt: JudgeFormat, prompt: str, response: str, params: SamplingParams,
                 prefill: str | None = None, guidance: Guidance | None = None) -> dict:
    """Pointwise judgment of one response: ``{"score": mean or None, "samples": [...]}``."""
    messages = with_prefill(fmt.render(prompt, response, None, guidance), prefill)
    comps = backend.generate([messages], judging(params, fmt))[0]
    samples = [to_sample(fmt, c, "A") for c in comps]
    return {"score": mean_score(samples), "samples": samples}


def to_json(result: Judgment | dict) -> dict:
    """The ``j1 judge --json`` object of a ``compare`` (Judgment) or ``score`` (dict) result.

    >>> to_json({"score": 8.0, "samples": []})
    {'score': 8.0, 'samples': []}
    """
    payload = plain(result)
    if isinstance(result, Judgment) and result.responses is None:
        payload.pop("responses")  # pairwise formats have no per-response scores
    return payload
