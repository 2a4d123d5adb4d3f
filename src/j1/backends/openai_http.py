"""Any OpenAI-compatible engine (vLLM, SGLang, llama.cpp's servers, hosted APIs).

Requests run concurrently up to a limit, each with a timeout; retryable failures (connection
errors, timeouts, HTTP 408/409/429/5xx) back off exponentially with jitter (or as ``Retry-After`` asks)
and are retried; a request that still fails raises ``BackendError`` naming the server and the HTTP
status, never a placeholder string that could be mistaken for a judgment. A prompt the engine says is
over its context raises ``ContextTooLong`` for that prompt alone. Engines differ (``j1.backends.engine``):
one that ignores or refuses ``n > 1`` gets one request per sample; a stop string cut from the text is put
back; ``max_tokens`` is fitted into the engine's context when the judge's tokenizer is at hand.

One event loop in a daemon thread owns one HTTP client for the backend's life: every call, from
any thread (``j1 serve`` runs several batches at once), shares its kept-alive connections and one
``concurrency`` limit, instead of paying a new client and new connections per call.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import random
import threading
import weakref
from collections.abc import Iterator, Sequence

from j1.backends.base import (
    ENDPOINTS,
    Backend,
    BackendError,
    Completion,
    ContextTooLong,
    Messages,
    SamplingParams,
    Usage,
    cut,
    prompt_seed,
)
from j1.backends.engine import (
    chat_logprobs,
    completion_logprobs,
    is_context_error,
    restore_stop,
    retry_after_seconds,
)
from j1.judging.chat import prefill, render

log = logging.getLogger(__name__)

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAIBackend(Backend):
    """An OpenAI-compatible engine over HTTP (vLLM, SGLang, llama.cpp's servers, hosted APIs).

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1``.
        model: the served model name; None asks the server (``GET /models``) and takes the first.
        api_key: bearer token (servers without auth accept any string).
        concurrency: most requests in flight.
        timeout: seconds per request.
        max_retries: retries of a retryable failure before giving up.
        backoff: first retry delay in seconds; doubles each retry (with jitter), capped at 30 s. A 429/503
            with ``Retry-After`` waits what it asks (at most ``engine.MAX_RETRY_AFTER_S``).
        endpoint: ``chat`` (``/chat/completions``; a prefill is continued with vLLM's and SGLang's
            ``continue_final_message``), ``completions`` (``/completions`` with the prompt rendered here by the
            judge's own chat template: exactly the text a local judge reads, on any engine), or ``auto``
            (completions when ``tokenizer`` is given, else chat).
        tokenizer: the judge's tokenizer (a transformers tokenizer): renders prompts for ``completions``,
            counts their tokens to fit ``max_tokens`` into the engine's context.
        check_model: check that the engine serves ``model`` (``GET /models``), else fail naming what it serves.
        max_context: the engine's context in tokens (prompt plus answer); None: vLLM's ``max_model_len`` from
            ``GET /models`` when listed.
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        concurrency: int = 32,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        endpoint: str = "auto",
        tokenizer=None,
        check_model: bool = False,
        max_context: int | None = None,
    ):
        import openai  # noqa: F401 - fail early with a clear ImportError

        if endpoint not in ENDPOINTS:
            raise ValueError(f"--endpoint {endpoint!r}: choose one of {', '.join(ENDPOINTS)}")
        if endpoint == "completions" and tokenizer is None:
            raise ValueError("--endpoint completions renders the judge's prompt with its chat template: name the "
                             "judge with --judge (its folder, manifest or GGUF) so j1 has its tokenizer")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key or "EMPTY"
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.tokenizer = tokenizer
        self.endpoint = "completions" if endpoint == "completions" or (endpoint == "auto" and tokenizer) else "chat"
        self.usage = Usage()
        self._lock = threading.Lock()
        self._io: _IOThread | None = None
        self.fan_out = False  # set once the engine is seen to ignore or refuse n > 1
        self.max_context = max_context
        self.engine_context = max_context
        if model is None or check_model or max_context is None and tokenizer is not None:
            listed = self._models()
            ids = [m.get("id") for m in listed]
            if model is None:
                if not ids:
                    raise BackendError(f"{self.base_url}: the server lists no models; pass --model")
                model = ids[0]
            elif check_model and model not in ids:
                raise BackendError(f"{self.base_url} serves {', '.join(map(str, ids)) or 'no model'}, not {model!r}: "
                                   f"serve the judge under that name (vLLM --served-model-name {model}, llama.cpp "
                                   f"--model_alias {model}) or pass --model with the served name")
            if self.engine_context is None:
                entry = next((m for m in listed if m.get("id") == model), {})
                if isinstance(entry.get("max_model_len"), int):
                    self.engine_context = entry["max_model_len"]
        self.model_name = model

    def __getstate__(self) -> dict:
        # A copy (another process) opens its own loop and connections on first use.
        return {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_io")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _lock=threading.Lock(), _io=None)

    def _thread(self) -> _IOThread:
        """The I/O thread, started on first use (and again in a forked child, which inherits no threads)."""
        with self._lock:
            if self._io is None or self._io.pid != os.getpid():
                self._io = _IOThread(self, self._make_client, self.concurrency)
            return self._io

    def _make_client(self):
        import openai

        # Retries are ours (we need to name the server and status when they run out).
        return openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=0)

    def close(self) -> None:
        """Close the connections and stop the I/O thread; a later call starts them again."""
        with self._lock:
            io, self._io = self._io, None
        if io is not None and io.pid == os.getpid():
            io.stop()

    def _models(self) -> list[dict]:
        """``GET /models``: each served model as a dict (``id``, and vLLM's ``max_model_len`` where listed)."""
        async def go(client, _sem) -> list[dict]:
            models = await self._with_retries(client.models.list, "GET /models")
            items = [m async for m in models] if hasattr(models, "__aiter__") else list(models.data)
            return [m.model_dump() if hasattr(m, "model_dump") else dict(m) for m in items]

        return self._thread().submit(go).result()

    async def _with_retries(self, call, what: str, **kwargs):
        import openai

        for attempt in range(self.max_retries + 1):
            wait = None
            try:
                return await call(**kwargs)
            except openai.APIStatusError as exc:
                status, detail = exc.status_code, _detail(exc)
                where = f"{self.base_url} ({what}, model {kwargs.get('model', '?')})"
                if is_context_error(status, detail):  # the prompt does not fit: no retry helps
                    raise ContextTooLong(f"{where}: HTTP {status}: {detail}") from exc
                if status not in RETRYABLE_STATUS or attempt == self.max_retries:
                    err = BackendError(f"{where}: HTTP {status}: {detail}")
                    err.status = status
                    raise err from exc
                headers = getattr(getattr(exc, "response", None), "headers", None) or {}
                wait = retry_after_seconds(headers.get("retry-after")) if status in (429, 503) else None
            except (openai.APIConnectionError, openai.APITimeoutError) as exc:
                status = "timeout" if isinstance(exc, openai.APITimeoutError) else "connection error"
                if attempt == self.max_retries:
                    raise BackendError(
                        f"{self.base_url} ({what}): {status} after {attempt + 1} attempts: {exc}"
                    ) from exc
            # Jitter spreads the retries of many clients a busy engine refused at once.
            delay = wait if wait is not None else min(30.0, self.backoff * 2**attempt) * (0.5 + random.random() / 2)
            log.warning("%s %s failed (%s); retry %d in %.1fs", self.base_url, what, status, attempt + 1, delay)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _one(self, client, sem, i: int, messages: Messages, params: SamplingParams, left: threading.Event):
        try:
            return await self._one_unlabelled(client, sem, i, messages, params, left)
        except BackendError as exc:
            exc.index = i  # which prompt failed, so callers can keep per-prompt errors
            raise

    def render(self, messages: Messages) -> str:
        """The prompt text ``/completions`` gets: the judge's chat template applied here (a final assistant
        message left open), less a leading BOS the engine's tokenizer adds itself."""
        text = render(self.tokenizer, messages)
        bos = getattr(self.tokenizer, "bos_token", None)
        if bos and text.startswith(bos) and self._adds_bos():
            text = text[len(bos):]
        return text

    def _adds_bos(self) -> bool:
        tok = self.tokenizer
        ids = tok("a").input_ids
        return bool(ids) and tok.bos_token_id is not None and ids[0] == tok.bos_token_id

    def _request(self, messages: Messages, params: SamplingParams) -> tuple[dict, str]:
        """The request's arguments (all but n and seed) and the prefill its answer continues.

        Raises:
            ContextTooLong: the prompt leaves no room for an answer in the engine's context.
        """
        head = prefill(messages)
        kwargs: dict = dict(model=self.model_name, temperature=params.temperature, top_p=params.top_p,
                            max_tokens=params.max_new_tokens)
        if self.endpoint == "completions":
            kwargs["prompt"] = self.render(messages)
            if params.logprobs:
                kwargs["logprobs"] = params.logprobs
        else:
            kwargs["messages"] = messages
            if head:
                # vLLM and SGLang continue the final assistant message with these two flags and return only
                # the continuation, which is joined to the prefill (the Backend contract).
                kwargs["extra_body"] = {"continue_final_message": True, "add_generation_prompt": False}
            if params.logprobs:
                kwargs.update(logprobs=True, top_logprobs=params.logprobs)
        if params.stop:
            kwargs["stop"] = list(params.stop)
        if self.engine_context is not None and self.tokenizer is not None:
            prompt_tokens = self.count_tokens(messages)
            room = self.engine_context - prompt_tokens
            if room < 1:
                raise ContextTooLong.of(prompt_tokens, params.max_new_tokens, self.engine_context,
                                        f" (the engine at {self.base_url})")
            kwargs["max_tokens"] = min(params.max_new_tokens, room)  # an engine refuses what cannot fit
        return kwargs, head

    async def _ask(self, client, sem, left: threading.Event, kwargs: dict, n: int, seed: int, params, head: str,
                   i: int) -> list[Completion]:
        """One request for ``n`` completions; fewer come back from an engine that ignores ``n``."""
        async with sem:
            if left.is_set():
                # The caller left the stream: a slot freed before this task's cancel arrived sends nothing.
                raise asyncio.CancelledError
            chat = self.endpoint == "chat"
            call = client.chat.completions.create if chat else client.completions.create
            what = "POST /chat/completions" if chat else "POST /completions"
            resp = await self._with_retries(call, what, n=n, seed=seed, **kwargs)
        if not resp.choices:
            raise BackendError(f"{self.base_url}: a response with no choices for prompt {i}")
        per_choice = (resp.usage.completion_tokens // len(resp.choices)) if resp.usage else 0
        comps = []
        for ch in resp.choices:
            if chat and (ch.message is None or ch.message.content is None):
                raise BackendError(f"{self.base_url}: a choice without message content for prompt {i}")
            text = ch.message.content if chat else ch.text
            if text is None:
                raise BackendError(f"{self.base_url}: a choice without text for prompt {i}")
            finish = ch.finish_reason or "stop"
            extra = getattr(ch, "model_extra", None) or {}
            # The whole answer (prefill and continuation) is what ends at its closing tag.
            text = restore_stop(head + text, finish, params, extra.get("stop_reason", ...))
            # A server does not know where j1's answer ends: the text is cut there.
            text, reason = cut(text, finish, params)
            lp = None
            if params.logprobs and ch.logprobs is not None:
                lp = chat_logprobs(getattr(ch.logprobs, "content", None)) if chat else completion_logprobs(ch.logprobs)
            comps.append(Completion(text, reason, per_choice, lp, len(head)))
        if resp.usage:
            self.usage.prompt_tokens += resp.usage.prompt_tokens
            self.usage.completion_tokens += resp.usage.completion_tokens
        self.usage.requests += 1
        return comps

    async def _one_unlabelled(self, client, sem, i: int, messages: Messages, params: SamplingParams,
                              left: threading.Event):
        kwargs, head = self._request(messages, params)
        seed = prompt_seed(params.seed, messages)
        comps: list[Completion] = []
        if params.n > 1 and not self.fan_out:
            try:
                comps = await self._ask(client, sem, left, kwargs, params.n, seed, params, head, i)
            except BackendError as exc:
                if getattr(exc, "status", None) != 400:
                    raise
                # An engine that refuses n > 1 (a 400 that is no context error): one request per sample.
                log.warning("%s refused n=%d (%s); asking one sample per request", self.base_url, params.n, exc)
            if len(comps) < params.n:
                self.fan_out = True
        # Fan out what is missing as single requests, each sample with its own seed.
        missing = range(len(comps), params.n)
        singles = await asyncio.gather(*(self._ask(client, sem, left, kwargs, 1, seed + k, params, head, i)
                                         for k in missing))
        for got in singles:
            comps.extend(got)
        return i, comps[: params.n]

    def count_tokens(self, messages: Messages) -> int | None:
        """Prompt tokens of ``messages`` as the engine gets them, when the judge's tokenizer is at hand."""
        if self.tokenizer is None:
            return None
        text = render(self.tokenizer, messages)
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)

    def stream(self, prompts: Sequence[Messages], params: SamplingParams,
               on_finish=None, on_tokens=None) -> Iterator[tuple[int, list[Completion]]]:
        # Each prompt is yielded as its request returns (no steps seen): on_finish and on_tokens have nothing to add.
        if not prompts:
            return
        io = self._thread()
        left = threading.Event()
        futures = [io.submit(lambda client, sem, i=i, m=m: self._one(client, sem, i, m, params, left))
                   for i, m in enumerate(prompts)]
        try:
            for fut in concurrent.futures.as_completed(futures):
                yield fut.result()  # re-raises BackendError; the finally cancels the rest
        finally:
            left.set()  # set before the cancels, which reach the loop one callback at a time
            for fut in futures:
                fut.cancel()  # cancels the request's task on the loop (a no-op once it is done)


class _IOThread:
    """An event loop running in a daemon thread, with the one HTTP client and request limit it owns."""

    def __init__(self, owner, make_client, concurrency: int):
        self.pid = os.getpid()
        # An owner dropped without close() stops the loop; stop() detaches this, so a closed loop is not kept.
        self._finalizer = weakref.finalize(owner, self.abandon)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="j1-http", daemon=True)
        self.thread.start()
        self.client = make_client()
        self.sem = asyncio.Semaphore(concurrency)

    def submit(self, make_coro) -> concurrent.futures.Future:
        """Run ``make_coro(client, semaphore)`` on the loop; the future cancels its task when cancelled."""
        return asyncio.run_coroutine_threadsafe(make_coro(self.client, self.sem), self.loop)

    def abandon(self) -> None:
        """Stop the loop without waiting for it (its owner is gone); the daemon thread then ends."""
        if self.pid == os.getpid() and self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)

    def stop(self) -> None:
        self._finalizer.detach()

        async def shut() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.client.close()

        try:
            asyncio.run_coroutine_threadsafe(shut(), self.loop).result(timeout=10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
            if not self.thread.is_alive():
                self.loop.close()


def _detail(exc) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            return str(err.get("message", err))[:300]
        return str(err)[:300]
    return str(getattr(exc, "message", exc))[:300]
