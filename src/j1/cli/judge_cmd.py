"""``j1 judge``: judge one prompt and one or two responses, in both orders (``j1.judging.ask``), and print it."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from j1.cli.common import build_backend, check_hub_inputs, parse, setup_logging
from j1.judging.ask import judge_with_margin, prompts_of
from j1.judging.judge import (
    Judgment,
    Sample,
    first_error,
    low_confidence,
    to_json,
)
from j1.judging.spec import JudgeSpec
from j1.pairs import Order, Verdict


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
    result, margin = judge_with_margin(cfg, lambda: build_backend(cfg))
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
