"""A j1 judge as a reward for TRL's GRPOTrainer (``reward_funcs=[JudgeReward(...)]``).

Follows TRL 1.16's reward-function call: ``fn(prompts=..., completions=..., completion_ids=...,
**columns)``, where every dataset column comes as a keyword list (one value per completion) along
with ``trainer_state``, ``log_extra`` and ``log_metric``; it returns one float per completion. The
judge's invalid and flip rates go to ``log_metric`` (logged beside TRL's own metrics as
``<name>/invalid_rate``, ``<name>/flip_rate``) and stay on the object as ``last_logs``.

Rewards are ``j1 serve``'s (``j1.serve.protocol``): pairwise, the share of judge samples over both
orders that prefer the completion over the reference answer; pointwise, the score / 10; group (no
reference), the completion's win rate against the other completions of its prompt
(``j1.rewards.group``: a tie is half a win, invalid votes are dropped, no valid vote gives 0.5).
The same callable is a reward of TRL's online DPO (``trl.experimental.online_dpo``, which compares
the two completions of each prompt by their rewards).

In every mode the judge can also read criteria (``criteria=`` for every row, ``criteria_column=`` per row)
and a gold answer to the prompt (``gold_column=``), each in a fence of its own (``j1.formats.base.Guidance``).
The gold answer is what the judge checks a completion against; the reference of ``reference_column`` is the
response a completion is compared with in pairwise mode, the other side of the pair.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from typing import Any

from j1.formats.base import INPUTS, Guidance
from j1.rewards.group import group_plan
from j1.rewards.trl_funcs import completion_text
from j1.serve.protocol import Rewards, group_rewards, pairwise_rewards, pointwise_rewards, served_format

log = logging.getLogger(__name__)

MODES = ("pairwise", "pointwise", "group")
RETRYABLE_STATUS = {429, 502, 503, 504}  # j1 serve answers 503 when its queue is full


def prompt_text(prompt: Any) -> str:
    """The request a completion answers: a plain prompt as is; of a conversation, its one user
    message, or every turn as ``role: content`` when there are several.

    >>> prompt_text("2+2?"), prompt_text([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}])
    ('2+2?', '2+2?')
    >>> prompt_text([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "2+2?"}])
    'user: Hi\\n\\nassistant: Hello\\n\\nuser: 2+2?'
    """
    if isinstance(prompt, str):
        return prompt
    turns = [m for m in prompt if m.get("role") != "system"]
    if len(turns) == 1 and turns[0].get("role") == "user":
        return turns[0].get("content") or ""
    return "\n\n".join(f"{m.get('role')}: {m.get('content') or ''}" for m in turns)


def _http():
    """The HTTP client module: httpx2 (what openai 3 uses), else httpx (openai 2)."""
    try:
        import httpx2 as httpx
    except ImportError:
        import httpx
    return httpx


class JudgeReward:
    """A judge as a picklable TRL reward function.

    Args:
        judge: a shipped judge, a judge folder or an HF id (loaded on the first call, so pickling
            stays cheap); with ``base_url``, the served model name (None: the server's first).
        mode: ``pairwise`` (each completion against the reference answer, in both orders),
            ``pointwise`` (each completion scored alone; a local judge is asked with format ``pos``
            unless ``format`` says otherwise) or ``group`` (no reference: each completion against
            the others with the same prompt, in both orders; the reward is its win rate).
        opponents: group mode: judge each completion against this many random others of its group
            (None: every pair, G(G-1)/2 comparisons per group of G).
        reference_column: the dataset column with the reference responses each completion is compared
            against (pairwise: the other side of the pair).
        criteria: what the judge judges by, for every row (free text, or
            ``j1.formats.templates.rubric_text`` of a rubric).
        criteria_column: a dataset column with each row's criteria (a null falls back to ``criteria``).
        gold_column: a dataset column with each row's gold answer, which the judge reads as the reference
            answer to check completions against (any mode; a null gives none for that row). Not
            ``reference_column``: that one is a response the judge ranks, this one is not ranked.
        base_url: an OpenAI-compatible server running the judge (vLLM, SGLang).
        serve_url: a ``j1 serve`` server (``http://host:port``), sent the batch as one /get_reward
            request; the server's judge and settings apply.
        api_key: the key of ``base_url`` or ``serve_url`` (TRL code reads no environment variable here).
        timeout: seconds per request to ``serve_url``.
        max_retries: retries of a refused (503) or failed request to ``serve_url``, with backoff.
        name: the reward's name in TRL's logs (``rewards/<name>/mean``).
        overrides: judge settings for ``j1.load_judge`` (format, samples, temperature, seed, ...).

    >>> reward = JudgeReward("j1-135m")                                      # doctest: +SKIP
    >>> reward(prompts=["2+2?"], completions=["4"], reference=["5"])         # doctest: +SKIP
    [1.0]
    >>> graded = JudgeReward("j1-135m", mode="group", gold_column="answer", criteria="Check the arithmetic.")
    >>> graded(prompts=["2+2?", "2+2?"], completions=["4", "5"], answer=["4", "4"])  # doctest: +SKIP
    [1.0, 0.0]
    """

    def __init__(self, judge: str | None = None, *, mode: str = "pairwise", reference_column: str = "reference",
                 criteria: str | None = None, criteria_column: str | None = None, gold_column: str | None = None,
                 opponents: int | None = None,
                 base_url: str | None = None, serve_url: str | None = None, api_key: str | None = None,
                 timeout: float = 600.0, max_retries: int = 4, name: str = "judge", **overrides: Any):
        if mode not in MODES:
            raise ValueError(f"mode {mode!r}: choose one of {MODES}")
        if base_url and serve_url:
            raise ValueError("base_url (an OpenAI-compatible server) and serve_url (j1 serve) both name the judge; "
                             "keep one")
        if serve_url and (judge is not None or overrides):
            raise ValueError("with serve_url the server's judge and settings apply; drop judge and the settings "
                             f"{sorted(overrides)}")
        if opponents is not None and (isinstance(opponents, bool) or not isinstance(opponents, int)
                                      or opponents < 1):
            raise ValueError(f"opponents {opponents!r}: an integer >= 1, or None for every pair of a group")
        if opponents is not None and mode != "group":
            raise ValueError(f"opponents applies to mode='group' only (mode is {mode!r})")
        if opponents is not None and serve_url:
            raise ValueError("with serve_url the server's --group_opponents applies; drop opponents")
        if gold_column is not None and gold_column == reference_column and mode == "pairwise":
            raise ValueError(f"gold_column and reference_column are both {gold_column!r}: the reference response is "
                             "ranked against the completion, the gold answer is read to check both; name two columns")
        Guidance(criteria)  # a non-string fails here, not at the first call
        if pointwise := mode == "pointwise":
            overrides.setdefault("format", "pos")
        self.judge = judge
        self.mode = mode
        self.pointwise = pointwise
        self.reference_column = reference_column
        self.criteria = criteria
        self.criteria_column = criteria_column
        self.gold_column = gold_column
        self.opponents = opponents
        self.base_url = base_url
        self.serve_url = serve_url.rstrip("/") if serve_url else None
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.overrides = overrides
        self.__name__ = name  # TRL names the reward (and its logged metrics) after it
        self.last_logs: dict[str, float] = {}
        self._judge = None  # loaded on the first call
        self._client = None
        self._checked = False

    def __getstate__(self) -> dict:
        # A loaded model and an HTTP pool stay behind; the copy loads or opens its own on first use.
        return {**self.__dict__, "_judge": None, "_client": None}

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float]:
        texts = [prompt_text(p) for p in prompts]
        responses = [completion_text(c) for c in completions]
        references = None
        if self.mode == "pairwise":
            if self.reference_column not in kwargs:
                raise KeyError(f"JudgeReward(mode='pairwise') compares each completion with the dataset column "
                               f"{self.reference_column!r}, which this dataset lacks (set reference_column=)")
            references = list(kwargs[self.reference_column])
            missing = [i for i, r in enumerate(references) if r is None]
            if missing:  # "None" would be judged as if it were an answer
                raise ValueError(f"column {self.reference_column!r} has no reference answer in rows {missing[:5]}")
            references = [str(r) for r in references]
        guides = self._guides(len(texts), kwargs)
        result = self._from_server(texts, responses, references, guides) if self.serve_url \
            else self._from_judge(texts, responses, references, guides)
        self.last_logs = result.logs
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            for key in ("invalid_rate", "flip_rate", "no_contest_rate"):
                if key in result.logs:
                    log_metric(f"{self.__name__}/{key}", float(result.logs[key]))
        return result.rewards

    def _guides(self, n: int, columns: dict[str, Any]) -> list[Guidance]:
        """Each row's criteria and gold answer, from ``criteria``/``criteria_column`` and ``gold_column``."""
        def column(name: str | None, what: str) -> list[Any]:
            if name is None:
                return [None] * n
            if name not in columns:
                raise KeyError(f"JudgeReward reads the {what} from the dataset column {name!r}, which this dataset "
                               "lacks")
            values = list(columns[name])
            bad = [i for i, v in enumerate(values) if v is not None and not isinstance(v, str)]
            if bad:
                raise ValueError(f"column {name!r} must hold strings (or nulls); row {bad[0]} holds "
                                 f"{type(values[bad[0]]).__name__}")
            return values

        criteria = column(self.criteria_column, "criteria")
        gold = column(self.gold_column, "gold answers")
        return [Guidance(c if c is not None else self.criteria, g) for c, g in zip(criteria, gold, strict=True)]

    def close(self) -> None:
        """Free the loaded judge and the HTTP pool (the next call opens them again)."""
        if self._judge is not None:
            self._judge.close()
        if self._client is not None:
            self._client.close()
        self._judge = self._client = None

    def _loaded(self):
        if self._judge is None:
            from j1.api import load_judge

            judge = load_judge(self.judge, base_url=self.base_url, api_key=self.api_key, **self.overrides)
            try:
                served_format(judge.format.name)  # a four-way judge has no reward to give
            except ValueError:
                judge.close()
                raise
            if (judge.format.arity == 1) != self.pointwise:
                judge.close()
                raise ValueError(f"JudgeReward(mode={self.mode!r}) with a {judge.format.name!r} judge: "
                                 + ("pass format='pos'" if self.pointwise else "use mode='pointwise'"))
            self._judge = judge
        return self._judge

    def _from_judge(self, prompts: list[str], responses: list[str], references: list[str] | None,
                    guides: list[Guidance]) -> Rewards:
        judge = self._loaded()

        def item(i: int, a: str, b: str | None = None) -> dict:
            pair = {"response": a} if b is None else {"response_a": a, "response_b": b}
            return {"prompt": prompts[i], **pair, "criteria": guides[i].criteria, "reference": guides[i].reference}

        if self.pointwise:
            return pointwise_rewards(judge.score_many([item(i, r) for i, r in enumerate(responses)]))
        if references is None:  # group mode: the pairs of each prompt's group, each in both orders
            pairs = group_plan(prompts, responses, self.opponents, judge.params.seed)
            judged = judge.compare_many([item(i, responses[i], responses[j]) for i, j in pairs]) if pairs else []
            return group_rewards(len(prompts), pairs, judged)
        # The completion is A, the reference B; compare_many judges both orders.
        return pairwise_rewards(judge.compare_many([item(i, r, references[i]) for i, r in enumerate(responses)]))

    def _request(self, method: str, path: str, **kwargs: Any):
        """One request to j1 serve, retried with backoff on 429/5xx and connection errors; raises
        RuntimeError naming the server and its answer when it still fails."""
        httpx = _http()
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx.Client(timeout=self.timeout, headers=headers)
        url = self.serve_url + path
        for attempt in range(self.max_retries + 1):
            try:
                resp = self._client.request(method, url, **kwargs)
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if resp.status_code == 200:
                    return resp.json()
                problem = f"HTTP {resp.status_code}: {_message(resp)}"
                if resp.status_code not in RETRYABLE_STATUS:
                    break
            if attempt < self.max_retries:
                delay = min(30.0, 0.5 * 2**attempt) * (0.5 + random.random() / 2)
                log.warning("%s %s failed (%s); retry %d in %.1fs", method, url, problem, attempt + 1, delay)
                time.sleep(delay)
        raise RuntimeError(f"{method} {url}: {problem}")

    def _from_server(self, prompts: list[str], responses: list[str], references: list[str] | None,
                     guides: list[Guidance]) -> Rewards:
        if not self._checked:  # the server's judge decides pairwise or pointwise: it must match the mode
            fmt = self._request("GET", "/v1/models")["data"][0]["judge"]["format"]
            pointwise = served_format(fmt).arity == 1
            if pointwise != self.pointwise:
                raise ValueError(f"the j1 serve at {self.serve_url} judges with format {fmt!r}; "
                                 f"use mode={'pointwise' if pointwise else 'pairwise'!r}")
            self._checked = True
        body = {"query": [p + r for p, r in zip(prompts, responses, strict=True)], "prompts": prompts}
        if references is not None:  # without labels a pairwise j1 serve rewards by win rate in the group
            body["labels"] = references
        for name in INPUTS:  # per item, as /get_reward takes them
            values = [getattr(g, name) for g in guides]
            if any(v is not None for v in values):
                body[name] = values
        data = self._request("POST", "/get_reward", json=body)
        return Rewards([float(r) for r in data["rewards"]], data.get("extra_logs", {}))


def _message(resp) -> str:
    try:
        return str(resp.json()["error"]["message"])[:300]
    except (ValueError, KeyError, TypeError):
        return resp.text[:300]
