"""Dynamic batching for ``j1 serve``: requests wait in a bounded queue, and one worker gathers them
into judge calls.

A judge is much faster on a batch (a local model decodes it together, an HTTP upstream runs it
concurrently), and OpenRLHF sends one query per request, many at once. The worker takes the first
waiting request, then more until ``max_batch`` items or until ``wait_s`` has passed, runs the judge
on them in a thread (the event loop keeps accepting requests) and answers each request's future. Up
to ``max_running`` batches run at once: 1 for a local model (a second batch would only contend for
the same cores), more for an HTTP upstream, whose batches mostly wait on the network: requests that
just miss a batch's window then start at once instead of waiting for the whole batch to return. A
full queue refuses at once (503) instead of growing without bound; a request whose client left is
skipped, or its answer dropped, without touching the others in its batch. ``stats`` counts the batches
formed and the time requests waited for them (``/health`` shows it), to tune ``max_batch``/``wait_s``;
``observers`` see the same numbers (the Prometheus metrics).

The judge calls run in the batcher's own threads, not asyncio's default executor: a model forward
cannot be interrupted from Python, and ``asyncio.run`` joins the default executor's threads when the
loop ends, so a batch still running would hold the process. ``busy`` says whether a judge call is
still running in one of those threads (the command then exits without waiting for it), and
``abandon`` answers every waiting request at once, with ``Closed``, when a stop's grace period is over.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

log = logging.getLogger(__name__)


class QueueFull(Exception):
    """The queue holds ``max_queue`` requests already (answer 503: retry later)."""


class Closed(Exception):
    """The server is shutting down and takes no new requests (or gave up on a waiting one)."""


class BatchObserver(Protocol):
    def add(self, waits: list[float], items: int, run_s: float) -> None:
        """One judge call of ``items`` items for requests that waited ``waits`` seconds, run in ``run_s``."""


@dataclass(eq=False)  # hashed by identity: the pending set holds jobs
class _Job:
    items: list[Any]
    future: asyncio.Future
    queued_at: float = field(default_factory=time.monotonic)


@dataclass
class BatchStats:
    """Totals since start: judge calls (batches), the requests and items they ran, the requests' wait
    from arrival to their batch's start, and the seconds the judge calls took. Mean batch size is
    ``items / batches``; mean queue wait ``wait_s / requests``."""

    batches: int = 0
    requests: int = 0
    items: int = 0
    largest: int = 0
    wait_s: float = 0.0
    run_s: float = 0.0

    def add(self, waits: list[float], items: int, run_s: float) -> None:
        """Count one judge call of ``items`` items for requests that waited ``waits`` seconds."""
        self.batches += 1
        self.requests += len(waits)
        self.items += items
        self.largest = max(self.largest, items)
        self.wait_s += sum(waits)
        self.run_s += run_s

    def to_json(self) -> dict[str, float]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(self).items()}


class Batcher:
    """Runs ``run(items) -> results`` (one result per item, in order) on batches of requests.

    Args:
        run: the judge call; runs in a worker thread, one batch at a time.
        max_batch: most items gathered into one call (a larger request runs alone, whole).
        max_queue: most requests waiting; one more is refused with ``QueueFull``.
        wait_s: how long the worker waits for more requests after the first of a batch.
        max_running: most batches in judge calls at once (each in its own thread).
        observers: told of every judge call, as ``stats`` is.
    """

    def __init__(self, run: Callable[[list[Any]], Sequence[Any]], *, max_batch: int, max_queue: int,
                 wait_s: float, max_running: int = 1, observers: Sequence[BatchObserver] = ()):
        if max_batch < 1 or max_queue < 1 or max_running < 1 or wait_s < 0:
            raise ValueError(f"max_batch {max_batch}, max_queue {max_queue} and max_running {max_running} must be "
                             f">= 1, wait_s {wait_s} >= 0")
        self._run = run
        self.max_batch = max_batch
        self.max_queue = max_queue
        self.wait_s = wait_s
        self.max_running = max_running
        self._batches: set[asyncio.Task] = set()  # the batches in judge calls now
        self._queue: asyncio.Queue[_Job] | None = None
        self._held: _Job | None = None  # taken from the queue, did not fit the last batch
        self._worker: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._pending: set[_Job] = set()  # submitted and not yet answered
        self._closed = False
        self._calls_lock = threading.Lock()
        self._calls = 0  # judge calls running in the batcher's threads now
        self.running = 0  # items in judge calls now
        self.abandoned = 0  # requests answered Closed because the server stopped before judging them
        self.stats = BatchStats()
        self.observers = list(observers)

    def start(self) -> None:
        """Start the worker on the running event loop."""
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue(self.max_queue)
        self._executor = ThreadPoolExecutor(self.max_running, thread_name_prefix="j1-judge")
        self._worker = self._loop.create_task(self._work(), name="j1-batcher")

    @property
    def waiting(self) -> int:
        """Requests submitted and not yet answered (queued or in a judge call)."""
        return len(self._pending)

    @property
    def busy(self) -> bool:
        """Whether a judge call is running in one of the batcher's threads (it may outlive the loop)."""
        with self._calls_lock:
            return self._calls > 0

    @property
    def queued(self) -> int:
        """Requests waiting for a batch."""
        return (self._queue.qsize() if self._queue is not None else 0) + (self._held is not None)

    async def submit(self, items: Sequence[Any]) -> list[Any]:
        """The results of ``items``, once their batch has run.

        Raises:
            QueueFull: ``max_queue`` requests are waiting.
            Closed: the batcher is shutting down.
            Exception: whatever the judge call raised, for every request in that batch.
        """
        if self._closed or self._queue is None:
            raise Closed("the server is shutting down")
        job = _Job(list(items), asyncio.get_running_loop().create_future())
        try:
            self._queue.put_nowait(job)
        except asyncio.QueueFull:
            raise QueueFull(f"{self.max_queue} requests are waiting already (--max-queue); retry later") from None
        self._pending.add(job)
        job.future.add_done_callback(lambda _: self._pending.discard(job))
        # Cancelling this await (the client left, its deadline passed) cancels the future: the worker
        # skips the job while it is queued, or drops its answer mid-batch.
        return await job.future

    async def close(self, timeout: float | None = None) -> None:
        """Refuse new requests and answer the waiting ones, giving up after ``timeout`` seconds (None:
        no limit): those still waiting then get ``Closed``. A judge call still running is left to
        its thread (``busy``)."""
        self._closed = True
        if self._queue is None:
            return
        waiting = [j.future for j in self._pending]
        if waiting:
            await asyncio.wait(waiting, timeout=timeout)
        self._abandon("the server stopped before this request was judged (--shutdown_timeout)")
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
        self._executor.shutdown(wait=False, cancel_futures=True)

    def abandon(self, reason: str) -> None:
        """From any thread: refuse new requests and answer every waiting one ``Closed(reason)`` now
        (a stop's grace period is over); the judge call running goes on in its thread."""
        if self._loop is None:
            return
        self._closed = True
        try:
            self._loop.call_soon_threadsafe(self._abandon, reason)
        except RuntimeError:  # the loop has closed: nothing is waiting on it any more
            pass

    def _abandon(self, reason: str) -> None:
        for job in list(self._pending):
            if not job.future.done():
                job.future.set_exception(Closed(reason))
                self.abandoned += 1

    async def _next(self, timeout: float | None) -> _Job | None:
        """The next waiting job within ``timeout`` seconds (None: no limit); None when none came."""
        try:
            return self._queue.get_nowait()
        except asyncio.QueueEmpty:
            if timeout is not None and timeout <= 0:
                return None
        getter = asyncio.ensure_future(self._queue.get())
        done, _ = await asyncio.wait({getter}, timeout=timeout)
        if getter in done or not getter.cancel():  # cancel() is False when it finished meanwhile
            return getter.result()
        return None  # a cancelled get leaves any item in the queue

    async def _gather(self) -> list[_Job]:
        """One batch: the first waiting job, then more until max_batch items or wait_s has passed."""
        loop = asyncio.get_running_loop()
        first = self._held if self._held is not None else await self._next(None)
        self._held = None
        jobs, size = [first], len(first.items)
        deadline = loop.time() + self.wait_s
        while size < self.max_batch:
            job = await self._next(deadline - loop.time())
            if job is None:
                break
            if size + len(job.items) > self.max_batch:
                self._held = job  # first in the next batch
                break
            jobs.append(job)
            size += len(job.items)
        return jobs

    async def _work(self) -> None:
        slots = asyncio.Semaphore(self.max_running)
        while True:
            # A batch is gathered only once it can run: until then its requests keep joining the queue.
            await slots.acquire()
            jobs = await self._gather()
            task = asyncio.create_task(self._run_then_release(jobs, slots))
            self._batches.add(task)
            task.add_done_callback(self._batches.discard)

    async def _run_then_release(self, jobs: list[_Job], slots: asyncio.Semaphore) -> None:
        try:
            await self._run_jobs(jobs)
        finally:
            slots.release()
            for _ in jobs:
                self._queue.task_done()

    async def _run_jobs(self, jobs: list[_Job]) -> None:
        live = [j for j in jobs if not j.future.done()]  # skip requests whose client left
        if not live:
            return
        items = [item for j in live for item in j.items]
        self.running += len(items)
        started = time.monotonic()
        try:
            results = await self._loop.run_in_executor(self._executor, self._call, items)
            if len(results) != len(items):
                raise RuntimeError(f"the judge returned {len(results)} results for {len(items)} items")
        except Exception as exc:  # the batch failed: every request in it gets the error
            log.warning("a batch of %d items failed: %s", len(items), exc)
            for j in live:
                if not j.future.done():
                    j.future.set_exception(exc)
            return
        finally:
            self.running -= len(items)
            waits, run_s = [started - j.queued_at for j in live], time.monotonic() - started
            self.stats.add(waits, len(items), run_s)
            for observer in self.observers:
                observer.add(waits, len(items), run_s)
        start = 0
        for j in live:
            if not j.future.done():  # a client that left mid-batch: its answer is dropped
                j.future.set_result(list(results[start:start + len(j.items)]))
            start += len(j.items)

    def _call(self, items: list[Any]) -> Sequence[Any]:
        """The judge call, in a batcher thread, counted in ``busy`` for as long as the thread runs it."""
        with self._calls_lock:
            self._calls += 1
        try:
            return self._run(items)
        finally:
            with self._calls_lock:
                self._calls -= 1
