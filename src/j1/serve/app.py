"""The ``j1 serve`` HTTP app: a judge behind OpenRLHF's remote reward API and a plain judge endpoint.

Endpoints (``Authorization: Bearer KEY`` on all but ``/health`` and ``/metrics`` when a key is set):

- ``POST /get_reward``: OpenRLHF's remote reward model (``protocol``); rewards in [0, 1], an item
  that cannot be judged gets ``error_reward`` and a line in ``errors``.
- ``POST /v1/judge``: one prompt and one or two responses -> the ``j1 judge --json`` object.
- ``GET /health``: liveness, queue depth, batching totals and limits; ``GET /v1/models``: the judge's
  name, manifest and limits; ``GET /metrics``: Prometheus metrics (``metrics``).

Every request's judgments go through one ``Batcher`` (dynamic batching) and ``Judge`` (the code
``j1 judge`` runs), so the same inputs and seed give ``j1 judge``'s verdicts. Everything before the
judge call (reading, checking, counting the prompt's tokens against the context: ``limits``) runs
beside the model, never behind its batch, so a bad request is answered at once while a long one runs.

Every answer other than 2xx is ``{"error": {"code", "message", "status"}}``: ``code`` a stable name
(``ERROR_CODES``), ``message`` the reason and its fix, ``status`` the HTTP status. A body that does not fit
its model (``j1.serve.bodies``) is a 400 naming the field; no answer is FastAPI's 422.

``GET /openapi.json`` publishes each body and answer with its fields' descriptions, and ``GET /docs`` shows
it (``docs=False`` turns both off). The body is read here, not by FastAPI, so the key is checked before it
is read and its size counted while it streams; each route's ``openapi_extra`` names the model it validates.
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
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from j1.api import Judge
from j1.backends import BackendError, ContextTooLong
from j1.judging.judge import to_json
from j1.judging.limits import ContextLimit, Fitted, PromptFitter
from j1.rewards.group import group_plan
from j1.serve import bodies, protocol
from j1.serve.batcher import Batcher, Closed, QueueFull
from j1.serve.metrics import CONTENT_TYPE, MetricsMiddleware, ServeMetrics
from j1.serve.tasks import Task, judge_prompts, run_tasks

log = logging.getLogger(__name__)

# The error codes, by the status they answer with (the README lists them).
ERROR_CODES = {
    400: ("invalid_json", "invalid_request", "unknown_field", "greedy_judge", "validation_error"),
    401: ("unauthorized",), 404: ("not_found",), 405: ("method_not_allowed",),
    413: ("body_too_large", "context_length_exceeded"), 500: ("internal_error",),
    502: ("upstream_error",), 503: ("queue_full", "shutting_down"), 504: ("timeout",),
}


@dataclass(frozen=True)
class ServerSettings:
    """How the server batches, what it accepts and how long it waits.

    Attributes:
        max_batch: most judge items (queries or pairs) gathered into one judge call.
        max_queue: most requests waiting for a batch; more are answered 503.
        batch_wait_s: how long a batch waits for more requests after its first.
        max_body_bytes: largest request body; larger ones are answered 413.
        api_key: the key clients send as ``Authorization: Bearer KEY``; None asks for none.
        upstream_batches: most batches sent to an HTTP upstream at once (all of them within the
            backend's one ``concurrency`` limit); a local model runs one batch at a time.
        request_timeout_s: a request not answered within this is answered 504 (its judgment dropped).
        shutdown_timeout_s: on shutdown, how long waiting requests may still be answered.
        truncate: a prompt that does not fit: ``error`` (413), or shorten the responses (``left``, ``middle``).
        error_reward: the ``/get_reward`` reward of an item that could not be judged.
        max_samples: most ``samples`` one ``/v1/judge`` request may ask for.
        group_opponents: ``/get_reward`` without labels: random opponents per response within its
            prompt's group (None: every pair).
        docs: serve ``/openapi.json`` and ``/docs``.
    """

    max_batch: int = 32
    max_queue: int = 256
    batch_wait_s: float = 0.01
    max_body_bytes: int = 16 * 2**20
    api_key: str | None = None
    upstream_batches: int = 4
    request_timeout_s: float = 300.0
    shutdown_timeout_s: float = 10.0
    truncate: str = "error"
    error_reward: float = 0.0
    max_samples: int = 64
    group_opponents: int | None = None
    docs: bool = True


class ApiError(Exception):
    """An answer other than 200: the status, the error code and a one-line reason."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers


class _ClientGone(Exception):
    """The client disconnected before its answer was ready."""


def context_limit(judge: Judge, settings: ServerSettings) -> ContextLimit:
    """The judge's budget: the ``--max_context`` its backend was given, or the model's context, and its answer
    length. The backend is the one home of the context (``Backend.max_context``), so what the server checks is
    what the model is run with. A backend that cannot count tokens (an HTTP upstream, which checks its own)
    gets no check."""
    max_new = judge.params.max_new_tokens
    given = judge.backend.max_context
    # Counting once here also prepares the backend's counting tokenizer before any batch runs.
    if judge.backend.count_tokens([{"role": "user", "content": "?"}]) is None:
        if given is not None:
            log.warning("--max_context %d is not checked: %s cannot count tokens here (the upstream checks its own)",
                        given, judge.backend.model_name)
        return ContextLimit(None, max_new, settings.truncate, "unknown (no local tokenizer)")
    model_context = judge.backend.model_context()
    if given is None:
        return ContextLimit(model_context, max_new, settings.truncate,
                            "the model's config" if model_context is not None else "unknown (the model names none)")
    if model_context is not None and given > model_context:
        log.warning("--max_context %d is over the model's %d positions: prompts that long may be read badly",
                    given, model_context)
    return ContextLimit(given, max_new, settings.truncate, "--max_context")


def create_app(judge: Judge, settings: ServerSettings = ServerSettings()) -> FastAPI:
    """The app serving ``judge``; the caller owns the judge (and closes it after the server stops).
    ValueError for a judge whose format no request fits (``protocol.served_format``)."""
    protocol.served_format(judge.format.name)
    limit = context_limit(judge, settings)
    fitter = PromptFitter(limit, partial(judge_prompts, judge), judge.backend.count_tokens,
                          judge.backend.token_spans)
    batcher = Batcher(partial(run_tasks, judge), max_batch=settings.max_batch, max_queue=settings.max_queue,
                      wait_s=settings.batch_wait_s, max_running=settings.upstream_batches if judge.base_url else 1)
    metrics = ServeMetrics(queued=lambda: batcher.queued, running=lambda: batcher.running)
    batcher.observers.append(metrics)
    pairwise = judge.format.pairwise
    limits = {**limit.describe(), "request_timeout_s": settings.request_timeout_s,
              "error_reward": settings.error_reward, "max_samples": settings.max_samples}

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        batcher.start()
        yield
        # uvicorn has answered the requests in flight by now (or its grace period is over): answer
        # what still waits, for at most the shutdown grace, and leave a running judge call behind.
        await batcher.close(timeout=settings.shutdown_timeout_s)

    judge_body, reward_body = bodies.request_models(pairwise)
    app = FastAPI(title="j1 serve", summary="An LLM judge behind HTTP: OpenRLHF's remote reward API and a judge "
                  "endpoint.", lifespan=lifespan, redoc_url=None, docs_url="/docs" if settings.docs else None,
                  openapi_url="/openapi.json" if settings.docs else None)
    app.openapi = partial(openapi_document, app, {"/v1/judge": judge_body, "/get_reward": reward_body})
    app.state.batcher = batcher
    app.state.metrics = metrics
    app.state.limit = limit
    app.add_middleware(MetricsMiddleware, metrics=metrics)

    def error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
        metrics.error(code)
        return JSONResponse({"error": {"code": code, "message": message, "status": status}}, status_code=status,
                            headers=headers)

    def authorize(request: Request) -> None:
        if settings.api_key is None:
            return
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), settings.api_key.encode()):
            raise ApiError(401, "unauthorized", "missing or wrong API key: send 'Authorization: Bearer KEY'",
                           {"WWW-Authenticate": "Bearer"})

    async def read_body(request: Request, model: type[BaseModel], endpoint: str) -> Any:
        """The body as ``model``, read after the key is checked and counted against the size limit as it arrives."""
        authorize(request)
        limit_bytes = settings.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit_bytes:
            raise ApiError(413, "body_too_large",
                           f"the body has {declared} bytes; the limit is {limit_bytes} (--max-body-bytes)")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit_bytes:
                raise ApiError(413, "body_too_large", f"the body is over {limit_bytes} bytes (--max-body-bytes)")
        try:
            return model.model_validate_json(bytes(body))
        except ValidationError as exc:
            raise bodies.request_error(exc, model, endpoint) from None

    def check_samples(samples: int | None) -> None:
        if samples is None:
            return
        if samples > settings.max_samples:
            raise protocol.RequestError(f"field 'samples' must be <= {settings.max_samples}, got {samples}")
        if samples > 1 and judge.params.temperature == 0:
            raise protocol.RequestError(
                f"field 'samples': {samples} samples from a greedy judge (temperature 0) would be {samples} copies "
                "of one answer; this server's judge samples once (start j1 serve with --temperature 1.0 to sample)",
                "greedy_judge")
        try:
            judge.sampling_params(samples)
        except ValueError as exc:
            raise protocol.RequestError(f"field 'samples': {exc}") from None

    async def judged(request: Request, tasks: Sequence[Task]) -> list:
        """The tasks' results from the batcher, or _ClientGone when the client leaves first. Leaving,
        or the deadline passing, cancels the request: it leaves the queue, or its answer is dropped
        from the batch running it."""
        answer = asyncio.ensure_future(batcher.submit(tasks))
        gone = asyncio.ensure_future(_disconnect(request))
        try:
            await asyncio.wait({answer, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not answer.done():
                answer.cancel()
        if answer.cancelled():
            raise _ClientGone
        return answer.result()

    @contextlib.asynccontextmanager
    async def deadline():
        try:
            async with asyncio.timeout(settings.request_timeout_s):
                yield
        except TimeoutError:
            raise ApiError(504, "timeout", f"no answer within {settings.request_timeout_s:g} s (--request_timeout); "
                           "the judgment was dropped. Retry later, or send fewer or shorter items") from None

    def fit_all(tasks: list[Task]) -> list[Fitted | protocol.ItemError]:
        out: list[Fitted | protocol.ItemError] = []
        for i, task in enumerate(tasks):
            try:
                out.append(fitter.fit(task))
            except ContextTooLong as exc:
                out.append(protocol.ItemError(i, exc.code, f"item {i}: {exc}"))
        return out

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError):
        return error(exc.status, exc.code, exc.message, exc.headers)

    @app.exception_handler(protocol.RequestError)
    async def _bad_request(request: Request, exc: protocol.RequestError):
        return error(400, exc.code, str(exc))

    @app.exception_handler(ContextTooLong)
    async def _too_long(request: Request, exc: ContextTooLong):
        return error(413, exc.code, str(exc))

    @app.exception_handler(QueueFull)
    async def _full(request: Request, exc: QueueFull):
        return error(503, "queue_full", str(exc), {"Retry-After": "1"})

    @app.exception_handler(Closed)
    async def _closed(request: Request, exc: Closed):
        return error(503, "shutting_down", str(exc))

    @app.exception_handler(BackendError)
    async def _upstream(request: Request, exc: BackendError):
        return error(502, "upstream_error", f"the judge's server failed: {exc}")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        detail = {404: f"no endpoint {request.url.path}; see GET /v1/models and the README's j1 serve section",
                  405: f"{request.method} is not allowed on {request.url.path}"}.get(exc.status_code, str(exc.detail))
        return error(exc.status_code, code, detail, getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        # A route's own parameters (none of j1's take any): a 400 in the one schema, never FastAPI's 422.
        where = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in exc.errors())
        return error(400, "validation_error", f"the request is not valid: {where}")

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception):
        log.exception("an unexpected error answering %s %s", request.method, request.url.path)
        return error(500, "internal_error", f"an unexpected error in j1 serve ({type(exc).__name__}); "
                     "the server log has the traceback")

    @app.exception_handler(_ClientGone)
    @app.exception_handler(ClientDisconnect)
    async def _gone(request: Request, exc: Exception):
        return Response(status_code=499)  # nobody reads it; uvicorn drops it

    @app.get("/health", responses={200: {"model": bodies.HealthAnswer}}, summary="Whether the server is up, and its load")
    async def health() -> dict:
        return {"status": "ok", "judge": judge.name, "queued": batcher.queued, "running": batcher.running,
                "batches": batcher.stats.to_json(), "limits": limits}

    @app.get("/metrics")
    async def scrape() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    @app.get("/v1/models", responses={200: {"model": bodies.ModelsAnswer}}, summary="The served judge (OpenAI's list)")
    async def models(request: Request) -> dict:
        authorize(request)
        return {"object": "list", "data": [{"id": judge.name, "object": "model", "owned_by": "j1",
                                            "judge": judge.describe(), "limits": limits}]}

    @app.post("/get_reward", openapi_extra=body_schema(reward_body), responses=answers(bodies.RewardAnswer),
              summary="Rewards for a batch of policy responses (OpenRLHF's --remote_rm_url)")
    async def get_reward(request: Request) -> dict:
        async with deadline():
            req = await read_body(request, reward_body, "/get_reward")
            if pairwise and req.references is None:
                return await group_reward(request, req)
            if pairwise:  # the response is A, the reference B; both orders are judged
                tasks = [req.task(i, req.responses[i], req.references[i]) for i in range(len(req.prompts))]
            else:
                tasks = [req.task(i, req.responses[i]) for i in range(len(req.prompts))]
            checked = await asyncio.to_thread(fit_all, tasks)
            ok = [i for i, c in enumerate(checked) if isinstance(c, Fitted)]
            errors = [c for c in checked if isinstance(c, protocol.ItemError)]
            results = await judged(request, [checked[i].task for i in ok]) if ok else []
            # An item the engine refused as over its context: that item's error, as a too-long one found here.
            refused = {k for k, r in enumerate(results) if isinstance(r, ContextTooLong)}
            errors += [protocol.ItemError(ok[k], results[k].code, f"item {ok[k]}: {results[k]}") for k in refused]
            ok = [i for k, i in enumerate(ok) if k not in refused]
            results = [r for k, r in enumerate(results) if k not in refused]
        for e in errors:
            metrics.error(e.code)
        rewards = None
        if results:
            rewards = protocol.pairwise_rewards(results) if pairwise else protocol.pointwise_rewards(results)
        return protocol.reward_answer(rewards, ok, errors, n=len(tasks), error_reward=settings.error_reward,
                                      pairwise=pairwise, truncated=sum(checked[i].truncated for i in ok))

    async def group_reward(request: Request, req: bodies.RewardRequest) -> dict:
        """No labels: every response against the others of its prompt's group, both orders each; a pair
        that does not fit the context gives no vote (``pair_error_rate``)."""
        pairs = group_plan(req.prompts, req.responses, settings.group_opponents, judge.params.seed)
        tasks = [req.task(i, req.responses[i], req.responses[j]) for i, j in pairs]
        checked = await asyncio.to_thread(fit_all, tasks)
        ok = [k for k, c in enumerate(checked) if isinstance(c, Fitted)]
        for c in checked:
            if isinstance(c, protocol.ItemError):
                metrics.error(c.code)
        results = await judged(request, [checked[k].task for k in ok]) if ok else []
        judgments: list = [None] * len(pairs)
        for k, r in zip(ok, results, strict=True):
            if isinstance(r, ContextTooLong):  # refused by the engine: no vote, as a pair that does not fit
                metrics.error(r.code)
            else:
                judgments[k] = r
        rewards = protocol.group_rewards(len(req.prompts), pairs, judgments)
        voted = sum(j is not None for j in judgments)
        logs = {**rewards.logs, "pair_error_rate": (len(pairs) - voted) / len(pairs) if pairs else 0.0}
        return {"rewards": rewards.rewards, "scores": rewards.rewards, "extra_logs": logs, "errors": []}

    @app.post("/v1/judge", openapi_extra=body_schema(judge_body), responses=answers(bodies.JudgeAnswer),
              summary="Judge one prompt's response, or compare two in both orders (j1 judge --json)")
    async def judge_one(request: Request) -> dict:
        async with deadline():
            req = (await read_body(request, judge_body, "/v1/judge")).task()
            check_samples(req.samples)
            fitted = await asyncio.to_thread(fitter.fit, req)
            (result,) = await judged(request, [fitted.task])
        if isinstance(result, ContextTooLong):
            raise result  # the engine's context refused it: 413, as a too-long prompt found here
        out = to_json(result)
        if fitted.truncated:
            out["truncated"] = True  # judged on shortened responses (--truncate)
        return out

    return app


def body_schema(model: type[BaseModel]) -> dict:
    """A route's ``openapi_extra``: its JSON body is ``model`` (``openapi_document`` adds the schema)."""
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": ref}}}}


def answers(model: Any) -> dict:
    """A route's documented answers: ``model``, or the error schema with a bad body's 400."""
    return {200: {"model": model}, 400: {"model": bodies.ErrorAnswer, "description": "A body that does not fit "
                                         "its model; the message names the field."}}


def openapi_document(app: FastAPI, request_bodies: dict[str, type[BaseModel]]) -> dict:
    """``app``'s OpenAPI document with each route's request body model (and the models it nests), built once."""
    if app.openapi_schema is None:
        doc = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        for model in request_bodies.values():
            schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas.update(schema.pop("$defs", {}))
            schemas[model.__name__] = schema
        app.openapi_schema = doc
    return app.openapi_schema


async def _disconnect(request: Request) -> None:
    """Return when the client disconnects (the body has been read, so the next ASGI message is the
    disconnect; the server also sends one once the response is complete, by when this is cancelled)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass

