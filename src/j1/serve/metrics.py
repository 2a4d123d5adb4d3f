"""``GET /metrics`` of ``j1 serve`` in the Prometheus text format (``prometheus_client``).

Each app has its own registry (no process-wide state, so two apps in one process count apart):
requests by route and status code, their latency, judgments, batch sizes and queue waits (the
batcher reports each judge call), error answers and per-item errors by error code, and the queue's
depth at scrape time. A pure ASGI middleware counts every answer, 404s and 405s included, without
wrapping the request body (which the disconnect watch reads).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

# Seconds: from a cached health check to a long judgment; items: powers of two up to a large batch.
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
CONTENT_TYPE = CONTENT_TYPE_LATEST


class ServeMetrics:
    """The server's metrics; ``add`` is the batcher's observer hook, ``render`` the scrape body."""

    def __init__(self, queued: Callable[[], float], running: Callable[[], float]):
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("j1_serve_requests", "HTTP requests answered, by route and status code",
                                ["route", "code"], registry=r)
        self.latency = Histogram("j1_serve_request_seconds", "Time from a request's arrival to its answer",
                                 ["route"], buckets=_LATENCY_BUCKETS, registry=r)
        self.judgments = Counter("j1_serve_judgments", "Judge items (pairs or responses) judged", registry=r)
        self.batch_items = Histogram("j1_serve_batch_items", "Judge items per judge call (batch size)",
                                     buckets=_SIZE_BUCKETS, registry=r)
        self.batch_seconds = Histogram("j1_serve_batch_seconds", "Duration of a judge call",
                                       buckets=_LATENCY_BUCKETS, registry=r)
        self.queue_wait = Histogram("j1_serve_queue_wait_seconds", "A request's wait from arrival to its batch's start",
                                    buckets=_LATENCY_BUCKETS, registry=r)
        self.errors = Counter("j1_serve_errors", "Error answers and per-item errors, by error code", ["code"],
                              registry=r)
        Gauge("j1_serve_queued_requests", "Requests waiting for a batch", registry=r).set_function(queued)
        Gauge("j1_serve_running_items", "Judge items in judge calls now", registry=r).set_function(running)

    def add(self, waits: list[float], items: int, run_s: float) -> None:
        """One judge call (``Batcher`` observer)."""
        self.judgments.inc(items)
        self.batch_items.observe(items)
        self.batch_seconds.observe(run_s)
        for w in waits:
            self.queue_wait.observe(w)

    def error(self, code: str, count: int = 1) -> None:
        self.errors.labels(code=code).inc(count)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class MetricsMiddleware:
    """Counts each HTTP answer by its route (the path template; ``other`` for unknown paths, so a
    scan cannot grow the label set) and status, and times it."""

    def __init__(self, app, metrics: ServeMetrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # an exception before any answer is a 500 (the server's error handler sends it)

        async def send_status(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = getattr(scope.get("route"), "path", None) or "other"
            self.metrics.requests.labels(route=route, code=str(status)).inc()
            self.metrics.latency.labels(route=route).observe(time.perf_counter() - started)
