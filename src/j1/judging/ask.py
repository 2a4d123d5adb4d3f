"""Asking a judge about one request (``j1 judge``): its prompts as the judge reads them, the responses fitted to its
context (``--truncate``), and the judgment with its verdict's margin."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from j1.formats import get_format
from j1.judging.judge import Judgment, judge_pairs, judge_single, judgment_margin
from j1.judging.judges import warn_untrained_inputs

if TYPE_CHECKING:
    from j1.backends.base import Backend
    from j1.formats.base import JudgeFormat
    from j1.judging.spec import JudgeSpec


def run(cfg: JudgeSpec, open_backend: Callable[[], Backend] | None = None) -> Judgment | dict:
    """The judgment alone (``judge_with_margin``)."""
    return judge_with_margin(cfg, open_backend)[0]


# Alternatives per token asked of an engine, to read a pav verdict's margin from its logprobs.
MARGIN_LOGPROBS = 5


def judge_with_margin(cfg: JudgeSpec, open_backend: Callable[[], Backend] | None = None
                      ) -> tuple[Judgment | dict, float | None]:
    """The judgment, and for a pav judge its verdict's log-odds margin for A: locally ``j1.probe.runner.pair_margins``
    (a second pass over the pair, so only ``j1 judge`` reads it, not the reward server); served, from the
    engine's logprobs at the verdict token when it returns them; None otherwise. ``open_backend`` builds the
    judge's backend (``j1 judge`` passes one holding the API key); default ``cfg.open_backend()``."""
    fmt = get_format(cfg.format, cfg.template)
    guide = cfg.guidance
    warn_untrained_inputs(cfg.manifest, guide.inputs, set(), cfg.model)
    backend = open_backend() if open_backend is not None else cfg.open_backend()
    params = cfg.sampling_params()
    if cfg.base_url and fmt.name == "pav":
        params = replace(params, logprobs=MARGIN_LOGPROBS)
    try:
        a, b = cfg.response_a, cfg.response_b
        if cfg.truncate != "error":  # responses shortened to fit the judge's context (j1.judging.limits)
            a, b = fit_responses(cfg, fmt, backend)
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


def fit_responses(cfg: JudgeSpec, fmt: JudgeFormat, backend: Backend) -> tuple[str, str | None]:
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
