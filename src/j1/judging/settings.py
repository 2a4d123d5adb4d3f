"""Everything that builds a judge, under one name per setting: which judge, how it is asked, where it runs.

``JudgeSettings`` is what ``j1.load_judge`` takes and what every judging command's spec gives
(``j1.judging.spec.JudgeArgs.judge_settings``), so the CLI, the Python API, ``j1 serve`` and the TRL
reward build a judge through one path (``resolved``, then ``open_backend``). Unset judging settings (None)
take the judge's manifest (``judge.json``), else a plain model's defaults (``PLAIN_DEFAULTS``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from j1.judging.judges import MANIFEST, PLAIN_DEFAULTS, SHIPPED, Manifest, judge_manifest, manifest_settings

if TYPE_CHECKING:
    from j1.backends.base import Backend, SamplingParams

# The settings by what they set. JUDGING default to the manifest; LOCAL and HTTP reach one kind of backend.
JUDGING = Manifest.DEFAULTS
SAMPLING = ("top_p", "seed")
LOCAL = ("batch_rows", "max_batch_tokens", "dtype", "device")
HTTP = ("concurrency", "timeout", "max_retries", "endpoint")
BOTH = ("max_context",)  # a local judge's context, or the engine's


@dataclass(frozen=True)
class JudgeSettings:
    """A judge and how it is asked.

    Attributes:
        model: the judge locally (a shipped name, a judge folder, ``smollm2-135m``, a Hugging Face id; None: the
            embedded model); with ``base_url``, the engine's model name (None: ``judge``'s manifest name, else the
            engine's first model).
        base_url: an OpenAI-compatible engine (vLLM, SGLang, llama.cpp); None runs the judge here.
        judge: with ``base_url``, a judge j1 made that the engine serves (its folder, ``judge.json``, shipped name or
            GGUF): its manifest sets how it is asked and its tokenizer renders its prompt as it was trained.
        api_key: the engine's key (read by the caller: only the CLI reads environment variables).
        format, template, assistant_prefill, max_new_tokens, temperature, samples: how it is asked; None takes
            the manifest's value, else ``PLAIN_DEFAULTS``.
        top_p, seed: sampling.
        batch_rows, max_batch_tokens, dtype, device: a local judge's batching and weights.
        concurrency, timeout, max_retries, endpoint: a served judge's HTTP client.
        max_context: the local judge's context, or the engine's (None: the model's own, or unchecked).
    """

    model: str | None = None
    base_url: str | None = None
    judge: str | None = None
    api_key: str | None = None
    format: str | None = None
    template: str | None = None
    assistant_prefill: str | None = None
    max_new_tokens: int | None = None
    temperature: float | None = None
    samples: int | None = None
    top_p: float = 1.0
    seed: int = 0
    batch_rows: int | None = None
    max_batch_tokens: int = 65536
    dtype: str = "auto"
    device: str | None = None
    concurrency: int = 32
    timeout: float = 120.0
    max_retries: int = 4
    endpoint: str = "auto"
    max_context: int | None = None

    def __post_init__(self) -> None:
        if self.judge is not None and not self.base_url:
            raise ValueError("JudgeSettings.judge names a judge an engine serves: set base_url, or name a local "
                             "judge with model")

    def resolved(self) -> tuple[JudgeSettings, Manifest | None]:
        """These settings with every unset judging setting filled (the manifest's, else ``PLAIN_DEFAULTS``), and
        the manifest used (None for a plain model)."""
        manifest = judge_manifest(self.model, self.judge, served=bool(self.base_url))
        given = {key: getattr(self, key) for key in JUDGING}
        return dataclasses.replace(self, **manifest_settings(manifest, given, PLAIN_DEFAULTS)), manifest

    def backend_kwargs(self) -> dict[str, Any]:
        """The backend's own settings (``j1.backends.make_backend``): the served or the local ones."""
        return {key: getattr(self, key) for key in (*(HTTP if self.base_url else LOCAL), *BOTH)}

    def sampling_params(self) -> SamplingParams:
        """How the judge samples (call on ``resolved()`` settings: ``samples`` and the budgets must be set)."""
        from j1.backends.base import SamplingParams

        return SamplingParams(n=self.samples, temperature=self.temperature, top_p=self.top_p,
                              max_new_tokens=self.max_new_tokens, seed=self.seed)

    def open_backend(self) -> Backend:
        """The backend these settings name. A served ``judge`` is asked under its engine's name, with its tokenizer
        (its prompt rendered as it was trained, ``endpoint`` permitting) and a check that the engine serves it."""
        from j1.backends import make_backend
        from j1.judging.judges import served_judge

        kwargs, model = self.backend_kwargs(), self.model
        if self.judge is not None:
            model, served = served_judge(self.judge, self.model, self.endpoint)
            kwargs.update(served)
        return make_backend(model, self.base_url, api_key=self.api_key if self.base_url else None, **kwargs)


def names_judge(ref: str) -> bool:
    """Whether ``ref`` names a judge j1 made (a shipped name, a folder or file with its manifest, a GGUF file)."""
    path = Path(ref).expanduser()
    return ref in SHIPPED or ref.endswith(".gguf") and path.is_file() or (path / MANIFEST).is_file() \
        or path.name == MANIFEST and path.is_file()
