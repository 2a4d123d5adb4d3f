"""How OpenAI-compatible engines differ, as pure functions the HTTP backend applies (``openai_http``).

Engines (vLLM, SGLang, llama.cpp's servers, hosted APIs) share the protocol but not its edges: some ignore
``n > 1``, stop strings are cut from the text, a prompt over the context is refused with an engine's own
wording, a busy server answers 429/503 with or without ``Retry-After``, and logprobs come in two shapes.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from j1.backends.base import SamplingParams, TokenLogprob

# How engines word a prompt that does not fit the model's context (vLLM, SGLang, llama.cpp and its Python
# server, OpenAI): matched case-insensitively in a 400/413 error's message or code.
_CONTEXT_ERROR = re.compile(
    r"context[ _]length|context window|maximum context|context_length_exceeded|exceeds? (the )?(model'?s? )?context"
    r"|too many tokens|prompt is too long|input is too long|longer than the model",
    re.IGNORECASE)
# Longest wait a Retry-After may ask for before j1 retries anyway (a server asking for minutes is treated as
# down: the retries run out and the run records the failure).
MAX_RETRY_AFTER_S = 60.0


def is_context_error(status: int | None, detail: str) -> bool:
    """Whether an engine's error says the prompt does not fit the model's context.

    >>> is_context_error(400, "This model's maximum context length is 8192 tokens. However, you requested 9000")
    True
    >>> is_context_error(400, "Requested tokens (9000) exceed context window of 8192")
    True
    >>> is_context_error(400, "n must be 1"), is_context_error(500, "maximum context length is 10")
    (False, False)
    """
    return status in (400, 413, 422) and bool(_CONTEXT_ERROR.search(detail or ""))


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """The wait a ``Retry-After`` header asks for, in seconds (a number, or an HTTP date), at most
    ``MAX_RETRY_AFTER_S``; None when absent or unreadable.

    >>> retry_after_seconds("2"), retry_after_seconds("0.5"), retry_after_seconds("600"), retry_after_seconds("soon")
    (2.0, 0.5, 60.0, None)
    >>> retry_after_seconds("Thu, 01 Jan 1970 00:00:10 GMT", now=4.0)
    6.0
    """
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def restore_stop(text: str, finish_reason: str, params: SamplingParams, matched: Any = ...) -> str:
    """``text`` with the stop string the engine cut off put back, so the answer's closing tag is in it.

    ``matched`` is the stop the engine says it matched (vLLM's ``stop_reason``: the string, or None/a token id
    for EOS); ``...`` when the engine does not say (llama.cpp), and then a stop string is put back only when
    the answer ends exactly at its end (``params.ends_at``): a model that stopped at EOS mid-answer stays cut.

    >>> p = SamplingParams(stop=("</a>",), ends_at=lambda t: t.index("</a>") + 4 if "</a>" in t else None)
    >>> restore_stop("<a>A", "stop", p), restore_stop("<a>A", "stop", p, matched=None)
    ('<a>A</a>', '<a>A')
    >>> restore_stop("<a>A", "length", p), restore_stop("<a>A</a>", "stop", p)
    ('<a>A', '<a>A</a>')
    """
    if finish_reason != "stop" or not params.stop:
        return text
    if matched is not ...:
        return text + matched if isinstance(matched, str) and matched in params.stop else text
    if params.ends_at is None or params.ends_at(text) is not None:
        return text
    for stop in params.stop:
        joined = text + stop
        if params.ends_at(joined) == len(joined):
            return joined
    return text


def chat_logprobs(content: Sequence[Any] | None) -> list[TokenLogprob] | None:
    """The chat API's ``choice.logprobs.content`` (objects or dicts with token, logprob, top_logprobs).

    >>> chat_logprobs([{"token": "A", "logprob": -0.1, "top_logprobs": [{"token": "A", "logprob": -0.1},
    ...                                                                  {"token": "B", "logprob": -2.4}]}])
    [TokenLogprob(token='A', logprob=-0.1, top={'A': -0.1, 'B': -2.4})]
    """
    if not content:
        return None
    out = []
    for entry in content:
        get = entry.get if isinstance(entry, Mapping) else (lambda k, e=entry: getattr(e, k, None))
        top = {}
        for alt in get("top_logprobs") or []:
            alt_get = alt.get if isinstance(alt, Mapping) else (lambda k, a=alt: getattr(a, k, None))
            top[alt_get("token")] = float(alt_get("logprob"))
        out.append(TokenLogprob(get("token"), float(get("logprob")), top))
    return out


def completion_logprobs(logprobs: Any) -> list[TokenLogprob] | None:
    """The completions API's ``choice.logprobs`` (tokens, token_logprobs, top_logprobs as parallel lists).

    >>> completion_logprobs({"tokens": ["A"], "token_logprobs": [-0.2], "top_logprobs": [{"A": -0.2, "B": -1.9}]})
    [TokenLogprob(token='A', logprob=-0.2, top={'A': -0.2, 'B': -1.9})]
    """
    if logprobs is None:
        return None
    get = logprobs.get if isinstance(logprobs, Mapping) else (lambda k: getattr(logprobs, k, None))
    tokens, values, tops = get("tokens") or [], get("token_logprobs") or [], get("top_logprobs") or []
    if not tokens:
        return None
    out = []
    for k, token in enumerate(tokens):
        value = values[k] if k < len(values) and values[k] is not None else float("nan")
        top = tops[k] if k < len(tops) and tops[k] else {}
        out.append(TokenLogprob(token, float(value), {str(t): float(v) for t, v in dict(top).items()}))
    return out
