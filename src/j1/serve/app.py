"""The ``j1 serve`` HTTP app: a judge behind OpenRLHF's remote reward API and a plain judge endpoint.

Endpoints (``Authorization: Bearer KEY`` on all but ``/health`` when a key is set):

- ``POST /get_reward``: OpenRLHF's remote reward model (``protocol``); rewards in [0, 1].
- ``POST /v1/judge``: one prompt and one or two responses -> the ``j1 judge --json`` object.
- ``GET /health``: liveness, queue depth and batching totals; ``GET /v1/models``: the judge's name and manifest.

Every request's judgments go through one ``Batcher`` (dynamic batching) and ``Judge`` (the code
``j1 judge`` runs), so the same inputs and seed give ``j1 judge``'s verdicts. Errors answer
``{"error": {"message", "code"}}``: 400 bad request, 401 key, 413 body too large, 502 the judge's
upstream failed, 503 queue full or shutting down.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.requests import ClientDisconnect

from j1.api import Judge
from j1.backends import BackendError
from j1.judge import to_json
from j1.serve import protocol
from j1.serve.batcher import Batcher, Closed, QueueFull
from j1.serve.tasks import Task, run_tasks

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerSettings:
    """How the server batches and what it accepts.

    Attributes:
        max_batch: most judge items (queries or pairs) gathered into one judge call.
        max_queue: most requests waiting for a batch; more are answered 503.
        batch_wait_s: how long a batch waits for more requests after its first.
        max_body_bytes: largest request body; larger ones are answered 413.
        api_key: the key clients send as ``Authorization: Bearer KEY``; None asks for none.
        upstream_batches: most batches sent to an HTTP upstream at once (all of them within the
            backend's one ``concurrency`` limit); a local model runs one batch at a time.
    """

    max_batch: int = 32
    max_queue: int = 256
    batch_wait_s: float = 0.01
    max_body_bytes: int = 16 * 2**20
    api_key: str | None = None
    upstream_batches: int = 4


class ApiError(Exception):
    """An answer other than 200: the status and a one-line reason."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


class _ClientGone(Exception):
    """The client disconnected before its answer was ready."""


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "code": status}}, status_code=status, headers=headers)


def create_app(judge: Judge, settings: ServerSettings = ServerSettings()) -> FastAPI:
    """The app serving ``judge``; the caller owns the judge (and closes it after the server stops)."""
    batcher = Batcher(partial(run_tasks, judge), max_batch=settings.max_batch, max_queue=settings.max_queue,
                      wait_s=settings.batch_wait_s, max_running=settings.upstream_batches if judge.base_url else 1)
    pairwise = judge.format.pairwise

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        batcher.start()
        yield
        # uvicorn has answered the requests in flight by now; anything still queued is answered too.
        await batcher.close()

    app = FastAPI(title="j1 serve", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.batcher = batcher

    def authorize(request: Request) -> None:
        if settings.api_key is None:
            return
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), settings.api_key.encode()):
            raise ApiError(401, "missing or wrong API key: send 'Authorization: Bearer KEY'",
                           {"WWW-Authenticate": "Bearer"})

    async def read_json(request: Request) -> Any:
        authorize(request)
        limit = settings.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise ApiError(413, f"the body has {declared} bytes; the limit is {limit} (--max-body-bytes)")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise ApiError(413, f"the body is over {limit} bytes (--max-body-bytes)")
        return protocol.parse_json(bytes(body))

    async def judged(request: Request, tasks: Sequence[Task]) -> list:
        """The tasks' results from the batcher, or _ClientGone when the client leaves first (its
        request is then dropped from the queue, or its answer from the batch)."""
        answer = asyncio.ensure_future(batcher.submit(tasks))
        gone = asyncio.ensure_future(_disconnect(request))
        try:
            await asyncio.wait({answer, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if not answer.done():
            answer.cancel()
            raise _ClientGone
        return answer.result()

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError):
        return _error(exc.status, exc.message, exc.headers)

    @app.exception_handler(protocol.RequestError)
    async def _bad_request(request: Request, exc: protocol.RequestError):
        return _error(400, str(exc))

    @app.exception_handler(QueueFull)
    async def _full(request: Request, exc: QueueFull):
        return _error(503, str(exc), {"Retry-After": "1"})

    @app.exception_handler(Closed)
    async def _closed(request: Request, exc: Closed):
        return _error(503, str(exc))

    @app.exception_handler(BackendError)
    async def _upstream(request: Request, exc: BackendError):
        return _error(502, f"the judge's server failed: {exc}")

    @app.exception_handler(_ClientGone)
    @app.exception_handler(ClientDisconnect)
    async def _gone(request: Request, exc: Exception):
        return Response(status_code=499)  # nobody reads it; uvicorn drops it

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok", "judge": judge.name, "queued": batcher.queued, "running": batcher.running,
                "batches": batcher.stats.to_json()}

    @app.get("/v1/models")
    async def models(request: Request) -> dict:
        authorize(request)
        return {"object": "list",
                "data": [{"id": judge.name, "object": "model", "owned_by": "j1", "judge": judge.describe()}]}

    @app.post("/get_reward")
    async def get_reward(request: Request) -> dict:
        req = protocol.parse_reward_request(await read_json(request), pairwise=pairwise)
        if pairwise:  # the response is A, the reference B; both orders are judged
            tasks = [Task(p, r, ref) for p, r, ref in zip(req.prompts, req.responses, req.references, strict=True)]
        else:
            tasks = [Task(p, r) for p, r in zip(req.prompts, req.responses, strict=True)]
        results = await judged(request, tasks)
        rewards = protocol.pairwise_rewards(results) if pairwise else protocol.pointwise_rewards(results)
        return rewards.to_json()

    @app.post("/v1/judge")
    async def judge_one(request: Request) -> dict:
        req = protocol.parse_judge_request(await read_json(request), pairwise=pairwise)
        try:
            judge.sampling_params(req.samples)
        except ValueError as exc:
            raise protocol.RequestError(f"field 'samples': {exc}") from None
        (result,) = await judged(request, [Task(req.prompt, req.response_a, req.response_b, req.samples)])
        return to_json(result)

    return app


async def _disconnect(request: Request) -> None:
    """Return when the client disconnects (the body has been read, so the next ASGI message is the
    disconnect; the server also sends one once the response is complete, by when this is cancelled)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
