"""The Python API: a judge in three lines, answering with the objects ``j1 judge --json`` prints.

``load_judge`` resolves a judge the way the CLI does (a shipped name, a folder whose ``judge.json``
sets the format, wording, prefill and lengths, a Hugging Face id, or a model on an OpenAI-compatible
server) and ``Judge`` asks it through the same code as ``j1 judge`` (``j1.judging.judge``), so the same
inputs and seed give the same verdicts.

>>> from j1 import load_judge                                        # doctest: +SKIP
>>> with load_judge("j1-135m") as judge:                             # doctest: +SKIP
...     judge.compare("Capital of France?", "Paris.", "Lyon.").verdict
'A'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from j1.backends import Backend, SamplingParams
from j1.formats import JudgeFormat, get_format
from j1.formats.base import INPUTS, Guidance, Prompt, request_text
from j1.judging.chat import with_prefill
from j1.judging.judge import Judgment, judge_pairs, judging, mean_score, to_sample
from j1.judging.judges import DEFAULT_JUDGE, Manifest, warn_untrained_inputs
from j1.judging.settings import BOTH, HTTP, JUDGING, LOCAL, SAMPLING, JudgeSettings, names_judge


class Judge:
    """A loaded judge: ``compare`` two responses in both orders, or ``score`` one (pointwise).

    Results are ``j1.judging.judge.Judgment`` objects (``compare``) and ``{"score", "samples"}`` dicts
    (``score``), the objects ``j1 judge`` prints; ``j1.judging.judge.to_json`` gives its ``--json`` dict. Use as a
    context manager, or call ``close`` to free the model or HTTP pool.

    Every call takes ``criteria`` (what to judge by: free text, or ``j1.formats.templates.rubric_text`` of a
    rubric) and ``reference`` (a gold answer), which the judge reads in fences of their own; a judge whose
    manifest says it never read one in training is asked anyway, with a warning the first time.
    """

    def __init__(self, backend: Backend, fmt: JudgeFormat, params: SamplingParams, prefill: str | None, *,
                 name: str, manifest: Manifest | None = None, base_url: str | None = None):
        self.backend = backend
        self.format = fmt
        self.params = params
        self.prefill = prefill
        self.name = name
        self.manifest = manifest
        self.base_url = base_url
        self._warned: set[str] = set()  # inputs this judge was warned about (once each)

    def sampling_params(self, samples: int | None = None) -> SamplingParams:
        """The judge's sampling settings with ``samples`` completions per prompt (None: its default).

        Raises:
            ValueError: samples < 1, or samples > 1 with a greedy (temperature 0) judge.
        """
        if samples is None:
            return self.params
        if isinstance(samples, bool) or not isinstance(samples, int):
            raise ValueError(f"samples {samples!r}: must be an integer >= 1")
        return replace(self.params, n=samples)

    def compare(self, prompt: Prompt, response_a: str, response_b: str, samples: int | None = None, *,
                criteria: str | None = None, reference: str | None = None) -> Judgment:
        """Judge one pair in both orders (pointwise judges score each response and compare). ``prompt``
        is the request, or the conversation (chat messages) the responses answer: the judge reads its
        turns (``j1.formats.base.request_text``). ``criteria`` and ``reference``: see the class."""
        return self.compare_many([(prompt, response_a, response_b)], samples, criteria=criteria,
                                 reference=reference)[0]

    def compare_many(self, items: Sequence[tuple[Prompt, str, str] | Mapping[str, Any]], samples: int | None = None,
                     *, criteria: str | None = None, reference: str | None = None) -> list[Judgment]:
        """Judge ``(prompt, response_a, response_b)`` items, or mappings with those keys and an item's own
        ``criteria``/``reference`` (which win over the arguments); the backend gets all their prompts at once."""
        params = self.sampling_params(samples)
        items, guides = _split_items(items, ("prompt", "response_a", "response_b"), Guidance(criteria, reference))
        if not items:
            return []
        self._warn(guides)
        return judge_pairs(self.backend, self.format, list(items), params, self.prefill, guides)

    def score(self, prompt: Prompt, response: str, samples: int | None = None, *, criteria: str | None = None,
              reference: str | None = None) -> dict:
        """Pointwise score of one response: ``{"score": mean 0-10 or None, "samples": [...]}``, as
        ``j1 judge --format pos`` with one response prints it."""
        return self.score_many([(prompt, response)], samples, criteria=criteria, reference=reference)[0]

    def score_many(self, items: Sequence[tuple[Prompt, str] | Mapping[str, Any]], samples: int | None = None, *,
                   criteria: str | None = None, reference: str | None = None) -> list[dict]:
        """``score`` for many ``(prompt, response)`` items (or mappings, as ``compare_many`` takes), their prompts
        sent to the backend at once."""
        params = self.sampling_params(samples)
        self._check_pointwise()
        items, guides = _split_items(items, ("prompt", "response"), Guidance(criteria, reference))
        if not items:
            return []
        self._warn(guides)
        # judge_single for a batch: one generate call, each completion read as j1 judge reads it.
        prompts = [with_prefill(self.format.render(p, r, None, g), self.prefill)
                   for (p, r), g in zip(items, guides, strict=True)]
        out = []
        for comps in self.backend.generate(prompts, judging(params, self.format)):
            samples_ = [to_sample(self.format, c, "A") for c in comps]
            out.append({"score": mean_score(samples_), "samples": samples_})
        return out

    def _warn(self, guides: Sequence[Guidance]) -> None:
        """Warn once per input this judge was not trained to read (``j1.judging.judges.warn_untrained_inputs``)."""
        warn_untrained_inputs(self.manifest, {i for g in guides for i in g.inputs}, self._warned, self.name)

    def label(self, rows: Sequence[dict], keep: str = "consistent", samples: int | None = None) -> list[dict]:
        """``j1 label`` in memory: rows ``{"prompt", "responses": [...]}`` (or ``response_a``/``response_b``)
        judged pair by pair in both orders, returned as TRL preference rows (``prompt``, ``chosen``,
        ``rejected``, ``verdicts``, ``consistent``, ``margin``; rules in ``j1.label``). ``keep``:
        ``consistent`` (default) or ``all``."""
        from j1.label import label_rows

        return label_rows(self, rows, keep, samples)

    def describe(self) -> dict[str, Any]:
        """The judge's name, where it runs, how it is asked, and its manifest (None for a plain model)."""
        return {
            "name": self.name, "model": self.backend.model_name, "base_url": self.base_url,
            "format": self.format.name, "template": self.format.template_name,
            "assistant_prefill": self.prefill, "samples": self.params.n, "temperature": self.params.temperature,
            "top_p": self.params.top_p, "max_new_tokens": self.params.max_new_tokens, "seed": self.params.seed,
            "manifest": None if self.manifest is None else self.manifest.to_json(),
            "device": self._device(),
        }

    def _device(self) -> dict[str, Any] | None:
        """Where a local judge runs and how it decodes (``j1.device``); None for a served one."""
        backend = self.backend
        if not hasattr(backend, "engine"):
            return None
        return {"device": str(backend.device), "dtype": backend.dtype, "engine": backend.engine,
                "batch_rows": backend.batch_rows}

    def _check_pointwise(self) -> None:
        if self.format.pairwise:
            raise ValueError(f"score() asks a pointwise judge; this one is {self.format.name!r} (pairwise): "
                             "use compare(), or load it with format='pos'")

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Judge({self.name!r}, format={self.format.name!r}, samples={self.params.n})"


def _split_items(items: Sequence[Any], names: tuple[str, ...], default: Guidance
                 ) -> tuple[list[tuple[str, ...]], list[Guidance]]:
    """The items as text tuples (a conversation ``prompt`` as the text the judge reads, ``request_text``), and
    each item's guidance: a mapping item's own ``criteria``/``reference`` where it gives them, else ``default``.

    Raises:
        TypeError: naming the item and field that is missing, unknown or not a string (nor, for ``prompt``, a
            list of chat messages): the formats would fail obscurely.

    >>> _split_items([{"prompt": "q", "response": "a", "reference": "4"}], ("prompt", "response"), Guidance("c"))
    ([('q', 'a')], [Guidance(criteria='c', reference='4')])
    """
    out, guides = [], []
    for k, item in enumerate(items):
        guide = default
        if isinstance(item, Mapping):
            unknown = sorted(set(item) - {*names, *INPUTS})
            if unknown:
                raise TypeError(f"item {k}: unknown key {unknown[0]!r}; an item has {', '.join((*names, *INPUTS))}")
            missing = [n for n in names if n not in item]
            if missing:
                raise TypeError(f"item {k}: missing key {missing[0]!r}")
            try:
                guide = Guidance(**{n: item[n] if item.get(n) is not None else getattr(default, n) for n in INPUTS})
            except ValueError as exc:
                raise TypeError(f"item {k}: {exc}") from None
            item = tuple(item[n] for n in names)
        if len(item) != len(names):
            raise TypeError(f"item {k}: expected ({', '.join(names)}), got {len(item)} values")
        for name, value in zip(names, item, strict=True):
            if name == "prompt" and isinstance(value, list):
                try:
                    request_text(value)
                except ValueError as exc:
                    raise TypeError(f"item {k}: prompt {exc}") from None
            elif not isinstance(value, str):
                kinds = "a string or a list of chat messages" if name == "prompt" else "a string"
                raise TypeError(f"item {k}: {name} must be {kinds}, got {type(value).__name__}")
        out.append(tuple(request_text(v) if n == "prompt" else v for n, v in zip(names, item, strict=True)))
        guides.append(guide)
    return out, guides


def load_judge(name_or_path: str | JudgeSettings | None = None, *, base_url: str | None = None,
               api_key: str | None = None, served_name: str | None = None, **overrides: Any) -> Judge:
    """Load a judge the way ``j1 judge --model`` names one.

    Args:
        name_or_path: a shipped judge (``j1-135m``), a folder ``j1 train``/``j1 warmup`` wrote (its
            ``judge.json`` sets the format, wording, prefill and lengths), ``smollm2-135m`` or a
            Hugging Face id. With ``base_url``: a judge j1 made (shipped name, folder, ``judge.json`` or the
            GGUF ``j1 export judge --gguf`` wrote), whose manifest sets how it is asked and whose name the
            engine is asked for (checked against its ``/v1/models``), else the served model name. None:
            ``DEFAULT_JUDGE`` locally, the server's first model with ``base_url``. Or a whole
            ``j1.judging.settings.JudgeSettings`` (as every judging command builds it), with no other argument.
        base_url: an OpenAI-compatible engine (vLLM, SGLang, llama.cpp), e.g. ``http://127.0.0.1:8000/v1``.
        api_key: the server's key (the API reads no environment variable).
        served_name: with ``base_url`` and a judge j1 made, the engine's name for it when not the manifest's.
        overrides: ``JudgeSettings`` fields: judging settings (format, template, assistant_prefill,
            max_new_tokens, temperature, samples; unset ones come from the manifest, else j1 judge's
            defaults), top_p and seed, and backend settings: local batch_rows, max_batch_tokens, dtype,
            device; HTTP concurrency, timeout, max_retries, endpoint (``j1 judge --endpoint``); both
            max_context (the local judge's, or the engine's).

    Returns:
        A Judge; close it (or use ``with``) when done.

    Raises:
        TypeError: an unknown override, or a backend setting for the other kind of backend.
        ValueError: a bad format, template or sampling setting (before any model is loaded).

    >>> judge = load_judge("j1-135m", temperature=1.0, samples=3)    # doctest: +SKIP
    >>> judge.compare("2+2?", "4", "5").verdict                       # doctest: +SKIP
    'A'
    """
    if isinstance(name_or_path, JudgeSettings):
        if base_url is not None or api_key is not None or served_name is not None or overrides:
            raise TypeError("load_judge(settings): the JudgeSettings hold every setting; pass nothing beside them")
        return _open(name_or_path)
    return _open(_settings(name_or_path, base_url, api_key, served_name, overrides))


def _settings(name_or_path: str | None, base_url: str | None, api_key: str | None, served_name: str | None,
              overrides: dict[str, Any]) -> JudgeSettings:
    """``load_judge``'s keyword form as JudgeSettings, its keys checked.

    >>> _settings("j", "http://h/v1", None, None, {"samples": 2}).samples
    2
    """
    if "max_batch_rows" in overrides:  # the setting's former name here; --batch_rows everywhere else
        overrides["batch_rows"] = overrides.pop("max_batch_rows")
    known = (*JUDGING, *SAMPLING, *LOCAL, *HTTP, *BOTH)
    for key in overrides:
        if key not in known:
            raise TypeError(f"load_judge() got an unknown setting {key!r}; known: {', '.join(known)}")
    wrong_kind = LOCAL if base_url else HTTP
    for key in overrides:
        if key in wrong_kind:
            where = "a local judge (no base_url)" if base_url else "a served judge (base_url)"
            raise TypeError(f"load_judge(): {key!r} applies to {where} only")
    model = name_or_path if name_or_path is not None or base_url else DEFAULT_JUDGE
    if base_url and model is not None and names_judge(model):
        # A judge j1 made, served: its manifest sets how it is asked; the engine's name is served_name (or its own).
        return JudgeSettings(model=served_name, base_url=base_url, judge=model, api_key=api_key, **overrides)
    if served_name is not None:
        raise TypeError("load_judge(): served_name renames a judge j1 made (a folder, judge.json, shipped name or "
                        "GGUF) served at base_url")
    return JudgeSettings(model=model, base_url=base_url, api_key=api_key, **overrides)


def _open(settings: JudgeSettings) -> Judge:
    """The judge ``settings`` name: checked (format, wording, sampling) before the slow model load."""
    settings, manifest = settings.resolved()
    fmt = get_format(settings.format, settings.template)
    params = settings.sampling_params()
    backend = settings.open_backend()
    name = manifest.name if manifest is not None and manifest.name else backend.model_name
    return Judge(backend, fmt, params, settings.assistant_prefill, name=name, manifest=manifest,
                 base_url=settings.base_url)
