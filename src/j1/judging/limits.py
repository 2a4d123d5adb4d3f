"""The judge's context limit: a prompt that cannot fit is refused (or its responses shortened) before
any model work (``j1 serve``, and ``j1 judge``/``eval``/``attack`` with ``--truncate``).

A judge prompt holds the request and the responses; the model then writes up to ``max_new_tokens``.
When the two exceed the model's context, the model either fails or runs for minutes on a prompt it
cannot read (issue 43: a 30,005-token prompt against an 8,192-token context ran 941 s at 12 GB, then
failed). Counting the rendered prompt's tokens takes milliseconds, so every task is counted on the
request path, in a thread beside the model's (not behind its batch), and one that does not fit is
answered 413 ``context_length_exceeded`` naming both numbers, or, with ``--truncate left|middle``,
judged on shortened responses.

``water_fill`` and ``cut_text`` are the pure parts; ``PromptFitter`` applies them to a judge's prompts,
for any record whose responses it is told how to read and replace (a served task, an eval item).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from j1.backends.base import ContextTooLong, Messages

# How a prompt that does not fit is handled: refused (413), or its responses shortened from the
# start (``left``: keeps their ends, where a final answer usually is) or in the middle (keeps both ends).
TRUNCATE = ("error", "left", "middle")
MARKER = "…"  # stands where text was cut, so the judge sees that the response was shortened
_TRIES = 4  # re-counts after a cut; a marker or a merge at the cut may cost a token or two more


def config_context(config) -> int | None:
    """The most tokens (prompt plus generated) a model's config allows: ``max_position_embeddings`` in
    Llama-family configs, ``n_positions`` in GPT-2-style ones (a multimodal config's text part); None
    when it names none.

    >>> from types import SimpleNamespace
    >>> config_context(SimpleNamespace(max_position_embeddings=8192)), config_context(SimpleNamespace(n_positions=1024))
    (8192, 1024)
    >>> config_context(SimpleNamespace(max_position_embeddings=True)), config_context(None)
    (None, None)
    """
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(config, key, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


@dataclass(frozen=True)
class ContextLimit:
    """The judge's token budget.

    Attributes:
        context: most tokens the model attends to (prompt plus generated); None: unknown, no check.
        max_new_tokens: most tokens the judge writes per answer.
        truncate: ``error``, ``left`` or ``middle`` (``TRUNCATE``).
        source: where ``context`` came from (``--max_context``, the model's config), for the reports.
    """

    context: int | None
    max_new_tokens: int
    truncate: str = "error"
    source: str | None = None

    def __post_init__(self) -> None:
        if self.truncate not in TRUNCATE:
            raise ValueError(f"truncate {self.truncate!r}: choose one of {', '.join(TRUNCATE)}")
        if self.context is not None and self.max_new_tokens >= self.context:
            raise ValueError(f"max_new_tokens {self.max_new_tokens} leaves no room for a prompt in the context of "
                             f"{self.context} tokens ({self.source}); lower --max_new_tokens")

    @property
    def prompt_budget(self) -> int | None:
        """Most prompt tokens that leave room for the answer; None when the context is unknown."""
        return None if self.context is None else self.context - self.max_new_tokens

    def describe(self) -> dict:
        return {"max_context": self.context, "context_from": self.source, "max_new_tokens": self.max_new_tokens,
                "truncate": self.truncate}

    def too_long(self, prompt_tokens: int, detail: str = "") -> ContextTooLong:
        """The 413 answer's error, naming both numbers."""
        return ContextTooLong.of(prompt_tokens, self.max_new_tokens, self.context, detail)


def water_fill(lengths: Sequence[int], total: int) -> list[int]:
    """How many tokens each text keeps so that together they keep at most ``total``: the longest are
    shortened first, to a common cap (a shorter text keeps all of it); a remainder goes to the
    earliest capped texts.

    >>> water_fill([100, 10], 50)  # the long one gives up all 60
    [40, 10]
    >>> water_fill([30, 30], 45)  # cap 22, one token left over for the first
    [23, 22]
    >>> water_fill([5, 7], 20), water_fill([5, 7], 0)
    ([5, 7], [0, 0])
    """
    if any(n < 0 for n in lengths):
        raise ValueError(f"lengths {list(lengths)}: must be >= 0")
    if sum(lengths) <= total:
        return list(lengths)
    if total <= 0:
        return [0] * len(lengths)
    keep = [0] * len(lengths)
    left = total
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    for k, i in enumerate(order):
        rest = order[k:]
        if lengths[i] * len(rest) <= left:  # the shortest remaining fits whole under an even share
            keep[i] = lengths[i]
            left -= lengths[i]
            continue
        cap, extra = divmod(left, len(rest))
        for j in sorted(rest):  # each remaining one is longer than cap, so cap + 1 fits it
            keep[j] = cap + (1 if extra > 0 else 0)
            extra -= 1
        break
    return keep


def cut_text(text: str, spans: Sequence[tuple[int, int]], keep: int, side: str) -> str:
    """``text`` shortened to ``keep`` of its tokens (``spans``: each token's character span), cut at
    token boundaries, with ``MARKER`` where text was removed.

    Args:
        side: ``left`` drops the start (keeps the last tokens), ``middle`` drops the middle (keeps
            the first half and the last half).

    >>> spans = [(0, 3), (3, 6), (6, 9), (9, 12)]
    >>> cut_text("aaabbbcccddd", spans, 2, "left"), cut_text("aaabbbcccddd", spans, 3, "middle")
    ('…cccddd', 'aaabbb…ddd')
    >>> cut_text("aaabbbcccddd", spans, 4, "left"), cut_text("aaabbbcccddd", spans, 0, "middle")
    ('aaabbbcccddd', '…')
    """
    if side not in ("left", "middle"):
        raise ValueError(f"side {side!r}: choose left or middle")
    if keep >= len(spans):
        return text
    if keep <= 0:
        return MARKER
    if side == "left":
        return MARKER + text[spans[-keep][0]:]
    head, tail = (keep + 1) // 2, keep // 2
    return text[:spans[head - 1][1]] + MARKER + (text[spans[-tail][0]:] if tail else "")


@dataclass(frozen=True)
class Fitted:
    """A task as it will be judged (its responses maybe shortened), and its longest prompt's tokens."""

    task: Any
    prompt_tokens: int | None
    truncated: bool = False


def task_responses(task) -> dict[str, str]:
    """A served task's responses by field (``j1.serve.tasks.Task``: response_a, and response_b for a pair)."""
    return {k: getattr(task, k) for k in ("response_a", "response_b") if getattr(task, k) is not None}


def replace_fields(task, texts: dict[str, str]):
    """``task`` with the named fields replaced (a dataclass)."""
    return replace(task, **texts)


class PromptFitter:
    """Checks tasks against a ``ContextLimit`` with the judge's own prompts and tokenizer.

    Args:
        limit: the budget; a None context (or a backend that cannot count) checks nothing.
        prompts: a task's judge prompts (both orders of a pair; ``tasks.judge_prompts``).
        count: a prompt's tokens as the model will see them (``Backend.count_tokens``).
        spans: a text's token spans, to shorten responses (``Backend.token_spans``).
        responses: a task's responses by name, the texts that may be shortened (default: a served task's).
        rebuild: the task with shortened responses (default: ``dataclasses.replace`` by field).
        hint: how the user turns truncation on, for the error.
    """

    def __init__(self, limit: ContextLimit, prompts: Callable[[Any], list[Messages]],
                 count: Callable[[Messages], int | None], spans: Callable[[str], list[tuple[int, int]] | None],
                 *, responses: Callable[[Any], dict[str, str]] = task_responses,
                 rebuild: Callable[[Any, dict[str, str]], Any] = replace_fields,
                 hint: str = "start j1 serve with --truncate left|middle"):
        self.limit = limit
        self._prompts = prompts
        self._count = count
        self._spans = spans
        self._responses = responses
        self._rebuild = rebuild
        self._hint = hint

    def longest(self, task) -> int | None:
        """Tokens of the task's longest judge prompt; None when they cannot be counted."""
        counts = [self._count(m) for m in self._prompts(task)]
        return None if not counts or None in counts else max(counts)  # type: ignore[type-var]

    def fit(self, task) -> Fitted:
        """The task, shortened under a truncate policy when it does not fit.

        Raises:
            ContextTooLong: it does not fit (policy ``error``), or even shortened responses do not.
        """
        budget = self.limit.prompt_budget
        n = self.longest(task) if budget is not None else None
        if n is None or n <= budget:
            return Fitted(task, n)
        parts = self._responses(task)
        if self.limit.truncate == "error":
            bare = self.longest(self._rebuild(task, {name: "" for name in parts}))
            if bare is not None and bare > budget:  # truncation shortens responses only: it cannot help
                raise self.limit.too_long(n, f"; the request's prompt alone takes {bare} tokens: shorten the prompt")
            raise self.limit.too_long(n, f"; shorten the responses, or {self._hint}")
        names, texts = list(parts), list(parts.values())
        spans = [self._spans(t) for t in texts]
        if any(s is None for s in spans):
            raise self.limit.too_long(n, " (this judge's tokenizer cannot shorten text)")
        lengths = [len(s) for s in spans]
        target, first = sum(lengths), n
        for _ in range(_TRIES):
            target -= n - budget  # shed what is over, as last counted
            if target < 0:
                break
            cut = [cut_text(t, s, k, self.limit.truncate)
                   for t, s, k in zip(texts, spans, water_fill(lengths, target), strict=True)]
            shorter = self._rebuild(task, dict(zip(names, cut, strict=True)))
            n = self.longest(shorter)
            if n <= budget:
                return Fitted(shorter, n, truncated=True)
        raise self.limit.too_long(first, ", and shortening the responses does not make it fit: the request's "
                                  "prompt itself is too long")
