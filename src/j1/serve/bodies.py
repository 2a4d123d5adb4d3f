"""What ``j1 serve`` takes and answers, as pydantic models: each field's type, length and arity, with the
one-line description ``/openapi.json`` publishes, and ``request_error``, which turns a failed validation
into the 400 answer naming the field.

OpenRLHF's remote reward API (``--remote_rm_url http://host:port/get_reward``) posts
``{"query": [...], "prompts": [...], "labels": [...]}``: each query is its prompt followed by the
policy's response, decoded from tokens. The answer is ``{"rewards", "scores", "extra_logs", "errors"}``;
OpenRLHF trains on ``rewards``, filters on ``scores`` (0-1) and logs each ``extra_logs`` value.

Bodies are checked strictly (``extra="forbid"``, no type coercion): a field an endpoint does not take is
refused by name (a misspelt ``samples``, or ``temperature``, which the server fixes at start, would
otherwise be silently ignored), and ``"2"`` is no integer.

A pairwise judge needs two responses: its app takes ``PairJudgeRequest`` and ``PairRewardRequest``
(``request_models``), so the schema it publishes is the one it checks.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from j1.formats.base import INPUTS, ROLES, Guidance, request_text
from j1.serve.protocol import RequestError, Task, strip_prompt

# Each sample is a generation, so a huge count would hold the judge for hours.
MAX_SAMPLES = 64
# Settings a client may expect to send but that the server fixes when it starts (the hint in the 400).
SERVER_SETTINGS = ("temperature", "top_p", "max_new_tokens", "max_tokens", "seed", "model", "format", "n")


def _prompt_text(value: Any) -> Any:
    """A conversation as the transcript the judge reads (``request_text``); anything else is checked as a string."""
    return request_text(value) if isinstance(value, list) else value


_MESSAGE = {"type": "object", "required": ["role", "content"],
            "properties": {"role": {"enum": list(ROLES)}, "content": {"type": "string"}}}
# A string, or chat messages read as one transcript: validated by ``request_text``, published as both.
Prompt = Annotated[str, BeforeValidator(_prompt_text),
                   WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "array", "items": _MESSAGE, "minItems": 1}]})]
PerItem = str | list[str | None] | None


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class JudgeRequest(_Body):
    """POST /v1/judge: a prompt and one response to score alone, or two to compare in both orders."""

    prompt: Prompt = Field(description="The request the responses answer: a string, or a conversation as a "
                           "list of chat messages {role, content}.")
    response_a: str = Field(description="The response to judge (the first of a pair).")
    response_b: str | None = Field(None, description="A second response, compared with response_a in both "
                                   "orders; left out, response_a is scored alone.")
    samples: int | None = Field(None, ge=1, le=MAX_SAMPLES, description="Judge samples per order (default: the "
                                "judge's own); more than 1 needs a judge started with a temperature above 0.")
    criteria: str | None = Field(None, description="What to judge by (free text); it cannot set the verdict.")
    reference: str | None = Field(None, description="A gold answer to the prompt.")

    def task(self) -> Task:
        return Task(self.prompt, self.response_a, self.response_b, self.samples, self.criteria, self.reference)


class PairJudgeRequest(JudgeRequest):
    """POST /v1/judge of a pairwise judge: a prompt and two responses, compared in both orders."""

    response_b: str = Field(description="The second response, compared with response_a in both orders.")


class RewardRequest(_Body):
    """POST /get_reward (OpenRLHF's remote reward model): each query's response is rewarded in [0, 1]."""

    query: list[str] = Field(min_length=1, description="Each item's prompt followed by the policy's response.")
    prompts: list[str] = Field(description="Each item's prompt, one per query: the prefix stripped from it.")
    labels: list[Any] | None = Field(None, description="Not read by a pointwise judge (OpenRLHF sends its "
                                     "label column).")
    criteria: PerItem = Field(None, description="What to judge by: one string for every item, or one string "
                              "(or null) per item.")
    reference: PerItem = Field(None, description="A gold answer to the prompt: one string for every item, or "
                               "one string (or null) per item.")
    _responses: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _pair_up(self) -> RewardRequest:
        n = len(self.query)
        for key in ("prompts", "labels", *INPUTS):
            value = getattr(self, key)
            if isinstance(value, list) and len(value) != n:
                raise ValueError(f"{key!r} has {len(value)} items and 'query' {n}; they pair up one to one")
        for i, (q, p) in enumerate(zip(self.query, self.prompts, strict=True)):
            try:
                self._responses.append(strip_prompt(q, p))
            except RequestError as exc:
                raise ValueError(f"query {i}: {exc}") from None
        return self

    @property
    def responses(self) -> list[str]:
        """The judged responses: the queries without their prompts."""
        return self._responses

    @property
    def references(self) -> list[str] | None:
        """The responses a pairwise judge compares each response with; None: each meets the others of its
        prompt (``group_rewards``)."""
        return None

    def guide(self, i: int) -> Guidance | None:
        """Item ``i``'s criteria and gold answer; None when neither is given."""
        per = {k: v if v is None or isinstance(v, str) else v[i] for k in INPUTS if (v := getattr(self, k)) is not None}
        return Guidance(**per) if per else None

    def task(self, i: int, response: str, other: str | None = None) -> Task:
        """Item ``i`` as a task: ``response`` (against ``other``, a pair), with the item's criteria and reference."""
        guide = self.guide(i) or Guidance()
        return Task(self.prompts[i], response, other, None, guide.criteria, guide.reference)


class PairRewardRequest(RewardRequest):
    """POST /get_reward of a pairwise judge: each response against its label, or, without labels, against
    the other responses to its prompt (its reward is its win rate)."""

    labels: list[str] | None = Field(None, description="The reference response each response is compared with, "
                                     "one per query; left out, each response meets the others of its prompt.")

    @property
    def references(self) -> list[str] | None:
        return self.labels


def request_models(pairwise: bool) -> tuple[type[JudgeRequest], type[RewardRequest]]:
    """The ``/v1/judge`` and ``/get_reward`` bodies a judge takes.

    >>> [m.__name__ for m in request_models(True)]
    ['PairJudgeRequest', 'PairRewardRequest']
    """
    return (PairJudgeRequest, PairRewardRequest) if pairwise else (JudgeRequest, RewardRequest)


# -- answers (published in /openapi.json; tests validate real answers against it) -------------------------


class ErrorDetail(BaseModel):
    code: str = Field(description="A stable name of the error (j1.serve.app.ERROR_CODES).")
    message: str = Field(description="What was wrong, and the fix.")
    status: int = Field(description="The HTTP status.")


class ErrorAnswer(BaseModel):
    """Every answer other than 2xx."""

    error: ErrorDetail


class SampleAnswer(BaseModel):
    verdict: str = Field(description="A, B, tie or invalid, in the original naming.")
    scores: dict[str, float] | None = Field(description="Scores per response, for formats that give them.")
    thought: str | None = Field(description="The judge's reasoning.")
    text: str = Field(description="The judge's whole completion.")
    error: str | None = Field(None, description="Why the verdict is invalid; null when valid.")
    finish_reason: str | None = Field(None, description="The engine's stop or length.")
    margin: float | None = Field(None, description="Log-odds of A over B at the verdict token, when known.")


class OrderAnswer(BaseModel):
    order: str = Field(description="AB (as sent) or BA (swapped).")
    verdict: str = Field(description="This order's majority verdict, in the original naming.")
    samples: list[SampleAnswer]


class ScoreAnswer(BaseModel):
    """One response scored alone (a pointwise judge)."""

    score: float | None = Field(description="The mean 0-10 score; null when no sample gave one.")
    samples: list[SampleAnswer]
    truncated: bool = Field(False, description="Judged on a shortened response (--truncate).")


class PairAnswer(BaseModel):
    """A pair judged in both orders (``j1 judge --json``)."""

    format: str = Field(description="The judge's format.")
    verdict: str = Field(description="A, B, tie, inconsistent (the orders disagree) or invalid.")
    orders: list[OrderAnswer] = Field(max_length=2, description="Each order's verdict and samples (AB, BA); "
                                      "empty when a pointwise judge scored each response alone.")
    scores: dict[str, float] | None = Field(description="Mean score per response, for formats that give them.")
    responses: dict[str, ScoreAnswer] | None = Field(None, description="Pointwise: each response's own score.")
    truncated: bool = Field(False, description="Judged on shortened responses (--truncate).")


class ItemErrorAnswer(BaseModel):
    index: int = Field(description="The item's position in 'query'.")
    code: str
    message: str


class RewardAnswer(BaseModel):
    """OpenRLHF's remote reward answer."""

    rewards: list[float] = Field(description="One reward in [0, 1] per query (error_reward for an item not judged).")
    scores: list[float] = Field(description="The same values: OpenRLHF's filter value.")
    extra_logs: dict[str, float] = Field(description="Numbers OpenRLHF logs: invalid_rate, flip_rate, error_rate, n...")
    errors: list[ItemErrorAnswer] = Field(description="The items not judged, and why.")


JudgeAnswer = PairAnswer | ScoreAnswer


class HealthAnswer(BaseModel):
    """``GET /health``: the server is up, and how busy it is."""

    status: str = Field(description="ok while the server takes requests.")
    judge: str = Field(description="The served judge's name.")
    queued: int = Field(description="Judge prompts waiting for a batch.")
    running: int = Field(description="Judge prompts being generated.")
    batches: dict[str, Any] = Field(description="The batcher's counts so far (batches, rows, waits).")
    limits: dict[str, Any] = Field(description="The request limits in force (bytes, items, samples, ...).")


class ModelCard(BaseModel):
    id: str = Field(description="The served judge's name: the model name a client sends.")
    object: str = Field(description="Always model (OpenAI's list format).")
    owned_by: str = Field(description="Always j1.")
    judge: dict[str, Any] = Field(description="How the judge is asked: format, wording, prefill, budgets, inputs.")
    limits: dict[str, Any] = Field(description="The request limits in force.")


class ModelsAnswer(BaseModel):
    """``GET /v1/models``: the one served judge, in OpenAI's list format."""

    object: str = Field(description="Always list.")
    data: list[ModelCard] = Field(min_length=1, max_length=1, description="The served judge.")


# -- a failed validation as the 400 answer ------------------------------------------------------------------

_EXPECTED = {"string_type": "a string", "int_type": "an integer", "list_type": "a list", "float_type": "a number",
             "bool_type": "a boolean", "model_type": "an object", "dict_type": "an object", "none_required": "null"}


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _where(loc: tuple) -> str:
    """``'query'[1]`` for ``("query", "list[str]", 1)``: the field and the item; a union's branch names go."""
    return repr(loc[0]) + "".join(f"[{p}]" for p in loc[1:] if isinstance(p, int))


def unknown_fields(names: list[str], model: type[BaseModel], endpoint: str) -> RequestError:
    """The error naming every field ``model`` does not take.

    >>> print(unknown_fields(["temprature"], JudgeRequest, "/v1/judge"))
    unknown field 'temprature': /v1/judge takes prompt, response_a, response_b, samples, criteria, reference
    """
    shown = ", ".join(repr(k) for k in names)
    message = (f"unknown field{'s' if len(names) > 1 else ''} {shown}: {endpoint} takes {', '.join(model.model_fields)}")
    fixed = [k for k in names if k in SERVER_SETTINGS]
    if fixed:
        message += (f" ({', '.join(fixed)} {'is' if len(fixed) == 1 else 'are'} set when j1 serve starts, "
                    "the same for every request; GET /v1/models shows them)")
    return RequestError(message, "unknown_field")


def request_error(exc: ValidationError, model: type[BaseModel], endpoint: str) -> RequestError:
    """The 400 answer for a body ``model`` refused: every unknown field, else the first field in error (the
    deepest of a union's tries), named with its item.

    >>> try:
    ...     JudgeRequest.model_validate_json(b'{"prompt": 1, "response_a": "a"}')
    ... except ValidationError as exc:
    ...     print(request_error(exc, JudgeRequest, "/v1/judge"))
    field 'prompt' must be a string, got a number
    """
    errors = exc.errors(include_url=False)
    unknown = [str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden" and len(e["loc"]) == 1]
    if unknown:
        return unknown_fields(unknown, model, endpoint)
    first = errors[0]
    if first["type"] == "json_invalid":
        return RequestError(f"the body is not valid JSON: {first['ctx']['error']}", "invalid_json")
    if not first["loc"]:
        if first["type"] == "value_error":
            return RequestError(str(first["ctx"]["error"]))
        return RequestError(f"the body must be a JSON object, got {_kind(first['input'])}")
    # A union reports one error per branch: the deepest went furthest; branches that all failed at the top
    # name every type they would take.
    field = [e for e in errors if e["loc"][0] == first["loc"][0]]
    depth = max(len(_where(e["loc"])) for e in field)
    deepest = [e for e in field if len(_where(e["loc"])) == depth]
    e, where, kind = deepest[0], _where(deepest[0]["loc"]), deepest[0]["type"]
    if kind == "missing":
        description = model.model_fields[str(e["loc"][0])].description or ""
        return RequestError(f"missing field {where}: {description[0].lower() + description[1:]}".rstrip(": "))
    if kind in _EXPECTED:
        expected = " or ".join(dict.fromkeys(_EXPECTED.get(d["type"], d["type"]) for d in deepest))
        return RequestError(f"field {where} must be {expected}, got {_kind(e['input'])}")
    if kind == "value_error":
        return RequestError(f"field {where} {e['ctx']['error']}")
    bounds = {"greater_than_equal": ">=", "less_than_equal": "<=", "greater_than": ">", "less_than": "<"}
    if kind in bounds:
        (bound,) = e["ctx"].values()
        return RequestError(f"field {where} must be {bounds[kind]} {bound}, got {e['input']!r}")
    if kind in ("too_short", "too_long"):
        ctx = e["ctx"]
        most = "at least" if kind == "too_short" else "at most"
        limit = ctx.get("min_length", ctx.get("max_length"))
        return RequestError(f"field {where} must have {most} {limit} item(s), got {ctx['actual_length']}")
    return RequestError(f"field {where}: {e['msg']}")

