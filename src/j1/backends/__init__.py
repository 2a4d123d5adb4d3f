"""Generation backends behind one interface: local transformers or an OpenAI-compatible server."""

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


def build_backend(args, api_key: str | None = None) -> Backend:
    """The backend a config names: ``args`` has ``model``, ``base_url`` and ``backend_kwargs()``
    (``j1.backends.spec.BackendArgs``), and a judging config ``judge`` (a served judge's manifest: its
    tokenizer and a check that the engine serves it, ``j1.judging.judges.served_judge``). ``api_key`` goes to a
    server only (``base_url`` set); the caller reads it, since only the CLI reads environment variables."""
    kwargs = args.backend_kwargs()
    judge = getattr(args, "judge", None)
    if args.base_url and judge is not None:
        from j1.judging.judges import served_judge

        kwargs.update(served_judge(judge, args.model, kwargs["endpoint"])[1])
    return make_backend(args.model, args.base_url, api_key=api_key if args.base_url else None, **kwargs)


__all__ = [
    "Backend", "BackendError", "Completion", "ContextTooLong", "Messages", "SamplingParams", "TokenLogprob", "Usage",
    "build_backend", "make_backend", "prompt_seed",
]
