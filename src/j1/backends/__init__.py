"""Generation backends behind one interface: local transformers or an OpenAI-compatible server.

It may import the floors below it (``j1.device``, ``j1.models``) and, for a local judge, the judge-folder,
chat-prefill and context rules (``j1.judging.judges``, ``chat``, ``limits``); never a command.
"""

from __future__ import annotations

from j1.backends.base import (
    Backend,
    BackendError,
    Completion,
    ContextTooLong,
    Messages,
    SamplingParams,
    TokenLogprob,
    Usage,
    prompt_seed,
)


def make_backend(
    model: str | None = None,
    base_url: str | None = None,
    *,
    api_key: str | None = None,
    **kwargs,
) -> Backend:
    """An OpenAI-compatible client when ``base_url`` is given, else a local transformers model
    (``model`` None = the embedded SmolLM2-135M-Instruct). Extra keyword arguments go to the
    backend's constructor."""
    if base_url:
        from j1.backends.openai_http import OpenAIBackend

        return OpenAIBackend(base_url, model, api_key=api_key, **kwargs)
    from j1.backends.local import LocalBackend

    return LocalBackend(model, **kwargs)


__all__ = [
    "Backend", "BackendError", "Completion", "ContextTooLong", "Messages", "SamplingParams", "TokenLogprob", "Usage",
    "make_backend", "prompt_seed",
]
