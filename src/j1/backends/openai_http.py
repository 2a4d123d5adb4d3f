"""Any OpenAI-compatible chat-completions server (vLLM, SGLang, hosted APIs).

Requests run concurrently up to a limit, each with a timeout; retryable failures (connection
errors, timeouts, HTTP 408/409/429/5xx) back off exponentially with jitter and are retried; a
request that still fails raises ``BackendError`` naming the server and the HTTP status, never a
placeholder string that could be mistaken for a judgment.

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
    Backend,
    BackendError,
    Completion,
    Messages,
    SamplingParams,
    Usage,
    cut,
    prompt_seed,
)
from j1.chat import prefill

log = logging.getLogger(__name__)

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAIBackend(Backend):
    """Chat completions over HTTP.

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1``.
        model: the served model name; None asks the server (``GET /models``) and takes the first.
        api_key: bearer token (servers without auth accept any string).
        concurrency: most requests in flight.
        timeout: seconds per request.
        max_retries: retries of a retryable failure before giving up.
        backoff: first retry delay in seconds; doubles each retry (with jitter), capped at 30 s.
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
    ):
        import openai  # noqa: F401 - fail early with a clear ImportError

        self.base_url = base_url.rstrip("/")
        self.api_key = api_key or "EMPTY"
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.usage = Usage()
        self._lock = threading.Lock()
        self._io: _IOThread | None = None
        self.model_name = model or self._first_model()

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

    def _first_model(self) -> str:
        async def go(client, _sem) -> str:
            models = await self._with_retries(client.models.list, "GET /models")
            ids = [m.id async for m in models] if hasattr(models, "__aiter__") else [m.id for m in models.data]
            if not ids:
                raise BackendError(f"{self.base_url}: the server lists no models; pass --model")
            return ids[0]

        return self._thread().submit(go).result()

    async def _with_retries(self, call, what: str, **kwargs):
        import openai

        for attempt in range(self.max_retries + 1):
            try:
                return await call(**kwargs)
            except openai.APIStatusError as exc:
                status, detail = exc.status_code, _detail(exc)
                if status not in RETRYABLE_STATUS or attempt == self.max_retries:
                    raise BackendError(
                        f"{self.base_url} ({what}, model {kwargs.get('model', '?')}): HTTP {status}: {detail}"
                    ) from exc
            except (openai.APIConnectionError, openai.APITimeoutError) as exc:
                status = "timeout" if isinstance(exc, openai.APITimeoutError) else "connection error"
                if attempt == self.max_retries:
                    raise BackendError(
                        f"{self.base_url} ({what}): {status} after {attempt + 1} attempts: {exc}"
                    ) from exc
            delay = min(30.0, self.backoff * 2**attempt) * (0.5 + random.random() / 2)
            log.warning("%s %s failed (%s); retry %d in %.1fs", self.base_url, what, status, attempt + 1, delay)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _one(self, client, sem, i: int, messages: Messages, params: SamplingParams, left: threading.Event):
        try:
            return await self._one_unlabelled(client, sem, i, messages, params, left)
        except BackendError as exc:
            exc.index = i  # which prompt failed, so callers can keep per-prompt errors
            raise

    async def _one_unlabelled(self, client, sem, i: int, messages: Messages, params: SamplingParams,
                              left: threading.Event):
        comps: list[Completion] = []
        seed = prompt_seed(params.seed, messages)
        head = prefill(messages)
        # A prefill: vLLM and SGLang continue the final assistant message with these two flags and
        # return only the continuation, which is joined to the prefill below (the Backend contract).
        extra = {"extra_body": {"continue_final_message": True, "add_generation_prompt": False}} if head else {}
        wave = 0
        # Ask for n at once; a server that returns fewer choices (some ignore n) is asked again.
        while len(comps) < params.n:
            async with sem:
                if left.is_set():
                    # The caller left the stream: a slot freed before this task's cancel arrived sends nothing.
                    raise asyncio.CancelledError
                resp = await self._with_retries(
                    client.chat.completions.create,
                    "POST /chat/completions",
                    model=self.model_name,
                    messages=messages,
                    n=params.n - len(comps),
                    temperature=params.temperature,
                    top_p=params.top_p,
                    max_tokens=params.max_new_tokens,
                    seed=seed + wave,
                    **extra,
                )
            if not resp.choices:
                raise BackendError(f"{self.base_url}: a response with no choices for prompt {i}")
            per_choice = (resp.usage.completion_tokens // len(resp.choices)) if resp.usage else 0
            for ch in resp.choices:
                if ch.message is None or ch.message.content is None:
                    raise BackendError(f"{self.base_url}: a choice without message content for prompt {i}")
                # A server does not know where j1's answer ends: the text is cut there.
                text, reason = cut(ch.message.content, ch.finish_reason or "stop", params)
                comps.append(Completion(head + text, reason, per_choice))
            if resp.usage:
                self.usage.prompt_tokens += resp.usage.prompt_tokens
                self.usage.completion_tokens += resp.usage.completion_tokens
            self.usage.requests += 1
            wave += 1
        return i, comps[: params.n]

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
