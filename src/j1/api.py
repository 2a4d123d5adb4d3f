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
from dataclasses import dataclass, replace
from typing import Any

from j1.backends import Backend, SamplingParams, make_backend
from j1.formats import JudgeFormat, get_format
from j1.formats.base import INPUTS, Guidance, Prompt, request_text
from j1.judging.chat import with_prefill
from j1.judging.judge import Judgment, judge_pairs, judging, mean_score, to_sample
from j1.judging.judges import DEFAULT_JUDGE, Manifest, apply_manifest, warn_untrained_inputs

# Keyword overrides load_judge takes, by what they set. The judging ones default to the manifest.
JUDGING_KEYS = Manifest.DEFAULTS
SAMPLING_KEYS = ("top_p", "seed")
LOCAL_KEYS = ("batch_rows", "max_batch_tokens", "dtype", "device")
HTTP_KEYS = ("concurrency", "timeout", "max_retries", "endpoint")
BOTH_KEYS = ("max_context",)  # a local judge's context, or the engine's


@dataclass
class _Settings:
    """What ``apply_manifest`` fills: unset (None) judging fields take the manifest's values."""

    model: str | None
    base_url: str | None
    judge: str | None = None
    format: str | None = None
    template: str | None = None
    assistant_prefill: str | None = None
    max_new_tokens: int | None = None
    temperature: float | None = None
    samples: int | None = None


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


def _names_judge(ref: str) -> bool:
    """Whether ``ref`` names a judge j1 made (a shipped name, a folder or file with its manifest, a GGUF)."""
    from pathlib import Path

    from j1.judging.judges import MANIFEST, SHIPPED

    path = Path(ref).expanduser()
    return ref in SHIPPED or ref.endswith(".gguf") and path.is_file() or (path / MANIFEST).is_file() \
        or path.name == MANIFEST and path.is_file()


def load_judge(name_or_path: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
               served_name: str | None = None, **overrides: Any) -> Judge:
    """Load a judge the way ``j1 judge --model`` names one.

    Args:
        name_or_path: a shipped judge (``j1-135m``), a folder ``j1 train``/``j1 warmup`` wrote (its
            ``judge.json`` sets the format, wording, prefill and lengths), ``smollm2-135m`` or a
            Hugging Face id. With ``base_url``: a judge j1 made (shipped name, folder, ``judge.json`` or the
            GGUF ``j1 export judge --gguf`` wrote), whose manifest sets how it is asked and whose name the
            engine is asked for (checked against its ``/v1/models``), else the served model name. None:
            ``DEFAULT_JUDGE`` locally, the server's first model with ``base_url``.
        base_url: an OpenAI-compatible engine (vLLM, SGLang, llama.cpp), e.g. ``http://127.0.0.1:8000/v1``.
        api_key: the server's key (the API reads no environment variable).
        served_name: with ``base_url`` and a judge j1 made, the engine's name for it when not the manifest's.
        overrides: judging settings (format, template, assistant_prefill, max_new_tokens,
            temperature, samples; unset ones come from the manifest, else j1 judge's defaults),
            top_p and seed, and backend settings: local batch_rows, max_batch_tokens, dtype,
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
    from j1.judging.judges import PLAIN_DEFAULTS

    if "max_batch_rows" in overrides:  # the setting's former name here; --batch_rows everywhere else
        overrides["batch_rows"] = overrides.pop("max_batch_rows")
    known = (*JUDGING_KEYS, *SAMPLING_KEYS, *LOCAL_KEYS, *HTTP_KEYS, *BOTH_KEYS)
    for key in overrides:
        if key not in known:
            raise TypeError(f"load_judge() got an unknown setting {key!r}; known: {', '.join(known)}")
    wrong_kind = LOCAL_KEYS if base_url else HTTP_KEYS
    for key in overrides:
        if key in wrong_kind:
            where = "a local judge (no base_url)" if base_url else "a served judge (base_url)"
            raise TypeError(f"load_judge(): {key!r} applies to {where} only")
    model = name_or_path if name_or_path is not None or base_url else DEFAULT_JUDGE
    judge = model if base_url and model is not None and _names_judge(model) else None
    if served_name is not None and judge is None:
        raise TypeError("load_judge(): served_name renames a judge j1 made (a folder, judge.json, shipped name or "
                        "GGUF) served at base_url")
    settings = _Settings(model, base_url, judge, **{k: overrides[k] for k in JUDGING_KEYS if k in overrides})
    manifest = apply_manifest(settings, PLAIN_DEFAULTS)
    # Settings are checked before the (slow) model load.
    fmt = get_format(settings.format, settings.template)
    params = SamplingParams(n=settings.samples, temperature=settings.temperature,
                            top_p=overrides.get("top_p", 1.0), max_new_tokens=settings.max_new_tokens,
                            seed=overrides.get("seed", 0))
    backend_kw = {k: overrides[k] for k in (*(HTTP_KEYS if base_url else LOCAL_KEYS), *BOTH_KEYS) if k in overrides}
    if judge is not None:  # the engine is asked for the judge's name, its prompt rendered as it was trained
        from j1.judging.judges import served_judge

        model, served = served_judge(judge, served_name, backend_kw.get("endpoint", "auto"))
        backend_kw.update(served)
    backend = make_backend(model, base_url, api_key=api_key, **backend_kw)
    name = manifest.name if manifest is not None and manifest.name else backend.model_name
    return Judge(backend, fmt, params, settings.assistant_prefill, name=name, manifest=manifest, base_url=base_url)
