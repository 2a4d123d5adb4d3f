"""``j1 judge``: judge one prompt and one or two responses, in both orders."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import replace

from j1.cli.common import build_backend, check_hub_inputs, parse, setup_logging
from j1.formats import get_format
from j1.judging.judge import (
    Judgment,
    Sample,
    first_error,
    judge_pairs,
    judge_single,
    judgment_margin,
    low_confidence,
    to_json,
)
from j1.judging.judges import warn_untrained_inputs
from j1.judging.spec import JudgeSpec
from j1.pairs import Order, Verdict


def run(cfg: JudgeSpec) -> Judgment | dict:
    return judge_with_margin(cfg)[0]


# Alternatives per token asked of an engine, to read a pav verdict's margin from its logprobs.
MARGIN_LOGPROBS = 5


def judge_with_margin(cfg: JudgeSpec) -> tuple[Judgment | dict, float | None]:
    """The judgment, and for a pav judge its verdict's log-odds margin for A: locally ``j1.probe.runner.pair_margins``
    (a second pass over the pair, so only ``j1 judge`` reads it, not the reward server); served, from the
    engine's logprobs at the verdict token when it returns them; None otherwise."""
    fmt = get_format(cfg.format, cfg.template)
    guide = cfg.guidance
    warn_untrained_inputs(cfg.manifest, guide.inputs, set(), cfg.model)
    backend = build_backend(cfg)
    params = cfg.sampling_params()
    if cfg.base_url and fmt.name == "pav":
        params = replace(params, logprobs=MARGIN_LOGPROBS)
    try:
        a, b = cfg.response_a, cfg.response_b
        if cfg.truncate != "error":  # responses shortened to fit the judge's context (j1.judging.limits)
            a, b = _fit(cfg, fmt, backend)
        if b is None:  # pointwise, one response
            return judge_single(backend, fmt, cfg.prompt, a, params, cfg.assistant_prefill, guide), None
        result = judge_pairs(backend, fmt, [(cfg.prompt, a, b)], params, cfg.assistant_prefill, [guide])[0]
        margin = judgment_margin(result)
        if fmt.name == "pav" and hasattr(backend, "model"):
            from j1.probe.runner import pair_margins

            (margin,) = pair_margins(backend.model, backend.tokenizer, [(cfg.prompt, a, b)], template=fmt.template_name,
                                     prefill=cfg.assistant_prefill, guides=[guide])
        return result, margin
    finally:
        backend.close()


def prompts_of(cfg: JudgeSpec, response_a: str, response_b: str | None) -> list[tuple[str, list[dict]]]:
    """``[(slot, messages)]``: the judge prompts of ``j1 judge`` as the backend gets them (both orders of a pair,
    or each response alone; one response: slot A), with the criteria, reference and prefill."""
    from j1.judging.chat import with_prefill
    from j1.pairs import render_both

    fmt = get_format(cfg.format, cfg.template)
    if response_b is None:
        rendered = [("A", fmt.render(cfg.prompt, response_a, None, cfg.guidance))]
    else:
        rendered = render_both(fmt, cfg.prompt, response_a, response_b, cfg.guidance)
    return [(slot, with_prefill(m, cfg.assistant_prefill)) for slot, m in rendered]


def show_prompts(cfg: JudgeSpec) -> str:
    """``--show_prompt``: each judge prompt, its messages one by one under their role (an assistant message is
    the prefill the judge continues)."""
    lines = []
    for slot, messages in prompts_of(cfg, cfg.response_a, cfg.response_b):
        shown = f"order {slot} ({'A' if slot == 'AB' else 'B'} first)" if slot in ("AB", "BA") else f"response {slot}"
        lines.append(f"=== {shown}")
        for m in messages:
            role = "assistant (prefill)" if m["role"] == "assistant" else m["role"]
            lines += [f"--- {role}", m["content"]]
    return "\n".join(lines)


def _fit(cfg: JudgeSpec, fmt, backend) -> tuple[str, str | None]:
    """The responses as the judge will read them under ``--truncate left|middle`` (both orders must fit)."""
    from j1.judging.limits import ContextLimit, PromptFitter

    def prompts(task: dict) -> list:
        return [m for _, m in prompts_of(cfg, task["response_a"], task.get("response_b"))]

    limit = ContextLimit(backend.context_window(), cfg.max_new_tokens, cfg.truncate)
    fitter = PromptFitter(limit, prompts, backend.count_tokens, backend.token_spans,
                          responses=lambda t: {k: v for k, v in t.items() if v is not None},
                          rebuild=lambda t, texts: {**t, **texts})
    fitted = fitter.fit({"response_a": cfg.response_a, "response_b": cfg.response_b}).task
    return fitted["response_a"], fitted.get("response_b")


def _sample_line(i: int, s: Sample, valid: str) -> str:
    """``valid``: what a valid sample shows (verdict or score); an invalid one shows its reason instead."""
    return f"--- sample {i}: " + (valid if s.error is None else f"invalid ({s.error})")


def _why(reasons: dict[str, str | None]) -> str | None:
    """One line for the invalid orders (or slots): their shared reason, else each one's by name."""
    given = {k: r for k, r in reasons.items() if r is not None}
    if len(set(given.values())) == 1:
        return next(iter(given.values()))
    return "; ".join(f"{k}: {r}" for k, r in given.items()) or None


def render_text(result: Judgment | dict) -> str:
    """A person's view: thought and verdict per order (or per response, pointwise), and why a verdict is invalid."""
    lines: list[str] = []
    if isinstance(result, dict):  # single pointwise response
        for i, s in enumerate(result["samples"], 1):
            lines += [_sample_line(i, s, f"score {s.scores['A']}" if s.scores else ""), (s.thought or s.text).strip()]
        score = result["score"] if result["score"] is not None else f"invalid ({first_error(result['samples'])})"
        lines.append(f"score: {score}")
        return "\n".join(lines)
    invalid: dict[str, str | None] = {}  # order or slot -> the reason of its first invalid sample
    for o in result.orders:
        shown = "A first" if o.order == Order.AB else "B first"
        lines.append(f"=== order {o.order} ({shown}): verdict {o.verdict}")
        for i, s in enumerate(o.samples, 1):
            lines += [_sample_line(i, s, s.verdict + (f" scores {s.scores}" if s.scores else "")),
                      (s.thought if s.thought is not None else s.text).strip()]
        if o.verdict == Verdict.INVALID:
            invalid[o.order] = first_error(o.samples)
    for slot, r in (result.responses or {}).items():
        lines.append(f"=== response {slot}: mean score {r['score'] if r['score'] is not None else 'invalid'}")
        for i, s in enumerate(r["samples"], 1):
            lines += [_sample_line(i, s, str(s.scores[slot]) if s.scores else ""), (s.thought or s.text).strip()]
        if r["score"] is None:
            invalid[slot] = first_error(r["samples"])
    if result.scores:
        lines.append(f"scores: {result.scores}")
    why = _why(invalid)
    if why:
        lines.append(f"why invalid: {why}")
    lines.append(f"verdict: {result.verdict}")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    cfg = parse(JudgeSpec, argv, prog="j1 judge")
    if cfg.show_prompt:  # what the judge would read; no model is loaded
        if cfg.json:
            prompts = [{"slot": slot, "messages": m} for slot, m in prompts_of(cfg, cfg.response_a, cfg.response_b)]
            json.dump({"prompts": prompts}, sys.stdout, ensure_ascii=False)
            sys.stdout.write("\n")
        else:
            print(show_prompts(cfg))
        return 0
    check_hub_inputs(cfg)  # an uncached hub id, offline: one line now, not after a minute of retries
    setup_logging()
    result, margin = judge_with_margin(cfg)
    extra = {} if margin is None else {"margin": round(margin, 4),
                                       "low_confidence": low_confidence(str(result.verdict), margin, cfg.min_margin)}
    if cfg.json:
        json.dump({**to_json(result), **extra}, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(render_text(result))
        if extra:
            low = "low confidence" if extra["low_confidence"] else "confident"
            how = "from the engine's logprobs" if cfg.base_url else "as j1 probe reads them"
            print(f"margin: {margin:+.2f} (log-odds for A, both orders, {how}): {low} "
                  f"(--min_margin {cfg.min_margin:g})")
    return 0
