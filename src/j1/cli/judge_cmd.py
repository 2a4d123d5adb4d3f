"""``j1 judge``: judge one prompt and one or two responses, in both orders."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from j1.cli.common import build_backend, parse, setup_logging
from j1.cli.configs import JudgeConfig
from j1.formats import get_format
from j1.judge import Judgment, judge_pairs, judge_single
from j1.pairs import Order
from j1.schema import _plain


def run(cfg: JudgeConfig) -> Judgment | dict:
    fmt = get_format(cfg.format, cfg.template)
    backend = build_backend(cfg)
    try:
        if cfg.response_b is None:  # pointwise, one response
            return judge_single(backend, fmt, cfg.prompt, cfg.response_a, cfg.sampling_params(), cfg.assistant_prefill)
        return judge_pairs(backend, fmt, [(cfg.prompt, cfg.response_a, cfg.response_b)], cfg.sampling_params(),
                           cfg.assistant_prefill)[0]
    finally:
        backend.close()


def render_text(result: Judgment | dict) -> str:
    """A person's view: thought and verdict per order (or per response, pointwise)."""
    lines: list[str] = []
    if isinstance(result, dict):  # single pointwise response
        for i, s in enumerate(result["samples"], 1):
            lines += [f"--- sample {i}: score {s.scores['A'] if s.scores else 'invalid'}", (s.thought or s.text).strip()]
        lines.append(f"score: {result['score'] if result['score'] is not None else 'invalid'}")
        return "\n".join(lines)
    for o in result.orders:
        shown = "A first" if o.order == Order.AB else "B first"
        lines.append(f"=== order {o.order} ({shown}): verdict {o.verdict}")
        for i, s in enumerate(o.samples, 1):
            lines += [f"--- sample {i}: {s.verdict}" + (f" scores {s.scores}" if s.scores else ""),
                      (s.thought if s.thought is not None else s.text).strip()]
    for slot, r in (result.responses or {}).items():
        lines.append(f"=== response {slot}: mean score {r['score'] if r['score'] is not None else 'invalid'}")
        for i, s in enumerate(r["samples"], 1):
            lines += [f"--- sample {i}: {s.scores[slot] if s.scores else 'invalid'}", (s.thought or s.text).strip()]
    if result.scores:
        lines.append(f"scores: {result.scores}")
    lines.append(f"verdict: {result.verdict}")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    cfg = parse(JudgeConfig, argv, prog="j1 judge")
    setup_logging()
    result = run(cfg)
    if cfg.json:
        payload = _plain(result)
        if isinstance(result, Judgment) and result.responses is None:
            payload.pop("responses")
        json.dump(payload, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(render_text(result))
    return 0
