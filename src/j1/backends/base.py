"""One judge/generator interface over local transformers and OpenAI-compatible servers."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

# How a served judge is asked: /chat/completions, /completions with its own chat template, or whichever fits.
ENDPOINTS = ("auto", "chat", "completions")

Messages = list[dict[str, str]]


class BackendError(RuntimeError):
    """A generation request failed for good (after retries); names the server and the cause.

    ``index`` is the failed prompt's position in the ``stream``/``generate`` call when known, so a
    caller can record that prompt's failure and go on with the others.
    """

    index: int | None = None


class ContextTooLong(BackendError):
    """A prompt that cannot fit the model's context with the tokens it may write: refused before any
    model work (a model fed more than its context fails, or runs for minutes on what it cannot read)."""

    code = "context_length_exceeded"

    @classmethod
    def of(cls, prompt_tokens: int, max_new_tokens: int, context: int, detail: str = "") -> ContextTooLong:
        """The error naming both numbers.

        >>> str(ContextTooLong.of(9000, 8, 8192))
        'the judge prompt has 9000 tokens and the judge writes up to 8: 9008 > the context of 8192 tokens'
        """
        return cls(f"the judge prompt has {prompt_tokens} tokens and the judge writes up to {max_new_tokens}: "
                   f"{prompt_tokens + max_new_tokens} > the context of {context} tokens{detail}")


@dataclass(frozen=True)
class SamplingParams:
    """How to sample. ``n`` completions per prompt; temperature 0 means greedy (then n must be 1)."""

    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 512
    seed: int = 0
    # Where a completion ends, given its text (a judge format's ``answer_end``): nothing after that is
    # returned and the finish reason is "stop", as at a stop string. None: at EOS or the token limit.
    ends_at: Callable[[str], int | None] | None = field(default=None, compare=False)
    # Strings an engine may stop at (the answer's closing tag): it frees the row there instead of decoding
    # past the answer. ``ends_at`` still decides where the answer ends; the text up to a stop is kept whole.
    stop: tuple[str, ...] = ()
    # Alternatives per generated token to return with their log-probabilities (0: none); a served judge's
    # verdict margin is read from them (``j1.judging.judge.verdict_margin``).
    logprobs: int = 0

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n={self.n}: need at least one sample per prompt")
        if self.temperature < 0:
            raise ValueError(f"temperature={self.temperature}: must be >= 0")
        if self.temperature == 0 and self.n > 1:
            raise ValueError(f"n={self.n} with temperature=0 gives n identical samples; set temperature > 0")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens={self.max_new_tokens}: must be >= 1")
        if self.logprobs < 0:
            raise ValueError(f"logprobs={self.logprobs}: must be >= 0")


def cut(text: str, finish_reason: str, params: SamplingParams) -> tuple[str, str]:
    """A completion's text and finish reason under ``params.ends_at``.

    >>> p = SamplingParams(ends_at=lambda t: t.find("</a>") + 4 if "</a>" in t else None)
    >>> cut("<a>1</a> more", "length", p), cut("<a>1", "length", p)
    (('<a>1</a>', 'stop'), ('<a>1', 'length'))
    """
    end = params.ends_at(text) if params.ends_at is not None else None
    return (text, finish_reason) if end is None else (text[:end], "stop")


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token, its log-probability and the top alternatives' (token -> logprob)."""

    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


@dataclass
class Completion:
    text: str
    finish_reason: str = "stop"  # "stop" or "length"
    completion_tokens: int = 0
    # The generated tokens with their log-probabilities, when asked for (``SamplingParams.logprobs``) and
    # the engine returned them; None otherwise. They cover what was generated, from ``text[prefill_chars:]``.
    logprobs: list[TokenLogprob] | None = None
    prefill_chars: int = 0  # leading characters of ``text`` that are the prompt's prefill, not generated


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    extra: dict = field(default_factory=dict)


def prompt_seed(seed: int, messages: Messages) -> int:
    """A per-prompt seed from the run seed and the prompt text, so a prompt's samples do not depend
    on which other prompts share its batch or request wave."""
    h = hashlib.sha256(str(seed).encode())
    for m in messages:
        h.update(b"\x00" + m["role"].encode() + b"\x01" + m["content"].encode("utf-8", "surrogatepass"))
    return int.from_bytes(h.digest()[:4], "little") & 0x7FFFFFFF


class Backend(ABC):
    """Generates ``n`` chat completions per prompt.

    ``stream`` yields ``(index, completions)`` as prompts finish (any order), so long jobs can
    append results as they come; ``generate`` collects them in input order. A prompt that ends with
    an assistant message is continued (a prefill, ``j1.judging.chat``), and each completion's text is then
    the whole assistant message: the prefill followed by the generated text.
    """

    model_name: str
    usage: Usage

    @abstractmethod
    def stream(self, prompts: Sequence[Messages], params: SamplingParams,
               on_finish: Callable[[int], None] | None = None,
               on_tokens: Callable[[list[int]], None] | None = None) -> Iterator[tuple[int, list[Completion]]]:
        """Yield ``(i, completions)`` for every prompt ``i`` exactly once. A backend that generates a
        batch together calls ``on_finish(i)`` when prompt ``i``'s samples have all ended, before the
        batch is yielded, so a progress bar can move with each prompt (it may skip prompts that end
        with the batch, and backends that yield each prompt as it ends may ignore it), and
        ``on_tokens([i, ...])`` at each decoding step with the prompt of every sample that wrote a token,
        so progress is counted in tokens and its ETA holds while a batch decodes (a backend that sees no
        steps may ignore it)."""

    def generate(self, prompts: Sequence[Messages], params: SamplingParams) -> list[list[Completion]]:
        out: list[list[Completion] | None] = [None] * len(prompts)
        for i, comps in self.stream(prompts, params):
            out[i] = comps
        missing = [i for i, c in enumerate(out) if c is None]
        if missing:
            raise BackendError(f"{self.model_name}: no completions for prompts {missing[:5]}")
        return out  # type: ignore[return-value]

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (HTTP pools, models)."""

    # Token limits, for a server that refuses a prompt that cannot fit before any model work
    # (``j1.judging.limits``). A backend without a local tokenizer (an HTTP server) knows none of them.

    # The context a caller set (--max_context), None when the model's own applies; one channel: serve,
    # judge and eval read a judge's context from its backend alone.
    max_context: int | None = None

    def context_window(self) -> int | None:
        """Most tokens (prompt plus generated) the model attends to; None when unknown."""
        return None

    def model_context(self) -> int | None:
        """The model's own positions, whatever ``max_context`` says; None when unknown (an HTTP engine)."""
        return None

    def count_tokens(self, messages: Messages) -> int | None:
        """Tokens of ``messages`` as ``stream`` would send them to the model; None when this backend
        cannot count. Safe to call from another thread while ``stream`` runs."""
        return None

    def token_spans(self, text: str) -> list[tuple[int, int]] | None:
        """The ``(start, end)`` character span of each token of ``text`` alone, to shorten a text at
        token boundaries; None when this backend cannot tokenize. Thread-safe as ``count_tokens``."""
        return None
