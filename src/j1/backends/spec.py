"""Where judgments come from and how they are sampled: the arguments every spec that calls a model shares."""

from __future__ import annotations

from dataclasses import dataclass, field

from j1.backends.base import ENDPOINTS


@dataclass
class BackendArgs:
    """Where judgments come from; shared by every command that calls a model."""

    model: str | None = field(
        default=None,
        metadata={"help": "HF model id or local folder; with --base-url, the served model name. "
                  "Default: the embedded SmolLM2-135M-Instruct (offline)."},
    )
    base_url: str | None = field(
        default=None, metadata={"help": "OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 (vLLM, SGLang)."}
    )
    api_key_env: str = field(
        default="OPENAI_API_KEY", metadata={"help": "Environment variable holding the server's API key."}
    )
    concurrency: int = field(default=32, metadata={"help": "HTTP: most requests in flight."})
    timeout: float = field(default=120.0, metadata={"help": "HTTP: seconds per request."})
    max_retries: int = field(default=4, metadata={"help": "HTTP: retries of a failed request, with backoff."})
    endpoint: str = field(
        default="auto", metadata={"help": "HTTP: chat (/chat/completions; a prefill is continued with "
                                  "continue_final_message, as vLLM and SGLang do), completions (/completions with the "
                                  "prompt rendered by the judge's own chat template: the text a local judge reads, on "
                                  "any engine; needs --judge) or auto (completions when --judge's tokenizer is on "
                                  "this machine, else chat)."})
    batch_rows: int | None = field(
        default=None, metadata={"help": "Local: most sequences (prompts x samples) per batch. Default: by the "
                                "device (32 on a CPU, 256 on a GPU)."})
    dtype: str = field(
        default="auto", metadata={"help": "Local: auto (bfloat16 where the machine computes it natively: a GPU "
                                  "that has it, a CPU with AVX-512 BF16 or AMX; else float32), float32, bfloat16 or "
                                  "float16."})

    def _check_backend(self) -> None:
        for name in ("concurrency", "batch_rows"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name} {value}: must be >= 1")
        if self.dtype not in {"auto", "float32", "bfloat16", "float16"}:
            raise ValueError(f"--dtype {self.dtype!r}: choose auto, float32, bfloat16 or float16")
        if not self.timeout > 0:
            raise ValueError(f"--timeout {self.timeout}: must be > 0 (seconds per request)")
        if self.max_retries < 0:
            raise ValueError(f"--max_retries {self.max_retries}: must be >= 0")
        if self.endpoint not in ENDPOINTS:
            raise ValueError(f"--endpoint {self.endpoint!r}: choose one of {', '.join(ENDPOINTS)}")
        if self.endpoint == "completions" and not getattr(self, "judge", None):
            raise ValueError("--endpoint completions renders the judge's prompt with its own chat template: name "
                             "the judge with --judge")

    def backend_kwargs(self) -> dict:
        """The backend's settings (``j1.backends.make_backend``): the served or the local ones."""
        if self.base_url:
            return dict(concurrency=self.concurrency, timeout=self.timeout, max_retries=self.max_retries,
                        endpoint=self.endpoint)
        return dict(batch_rows=self.batch_rows, dtype=self.dtype)

    def open_backend(self, api_key: str | None = None):
        """The backend these flags name (a judging spec's own, ``JudgeArgs.open_backend``, keeps a served judge's
        manifest). ``api_key`` goes to a server only; the caller reads it, as only the CLI reads the environment."""
        from j1.backends import make_backend

        return make_backend(self.model, self.base_url, api_key=api_key if self.base_url else None,
                            **self.backend_kwargs())


@dataclass
class SamplingArgs:
    samples: int = field(default=1, metadata={"help": "Samples per prompt (N); verdicts aggregate by majority."})
    temperature: float = field(default=0.0, metadata={"help": "0 = greedy (needs --samples 1)."})
    top_p: float = field(default=1.0, metadata={"help": "Nucleus sampling."})
    max_new_tokens: int = field(default=512, metadata={"help": "Most tokens per judgment."})
    seed: int = field(default=0, metadata={"help": "Seed for sampling (and any random order)."})

    def _check_sampling(self) -> None:
        if self.samples < 1:
            raise ValueError(f"--samples {self.samples}: must be >= 1")
        if not 0 <= self.temperature < float("inf"):
            raise ValueError(f"--temperature {self.temperature}: must be >= 0 (0 = greedy)")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"--top_p {self.top_p}: must be in (0, 1]")
        if self.temperature == 0 and self.samples > 1:
            raise ValueError(
                f"--samples {self.samples} with --temperature 0 would repeat one greedy answer; set --temperature 1.0"
            )
        if self.max_new_tokens < 1:
            raise ValueError(f"--max-new-tokens {self.max_new_tokens}: must be >= 1")

    def sampling_params(self):
        from j1.backends.base import SamplingParams

        return SamplingParams(
            n=self.samples, temperature=self.temperature, top_p=self.top_p,
            max_new_tokens=self.max_new_tokens, seed=self.seed,
        )
