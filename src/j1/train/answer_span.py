"""The answer span of a judge completion, in tokens: where the answer's opening and closing tags
fall, and which tokens the policy loss keeps under ``loss_span`` (``j1.train.options``).

The thought must stay in ``completion_mask``: TRL builds the attention mask from it, and the answer
has to be scored in the context it was sampled in (the tokens after the answer can go, attention
being causal). The loss-only mask is TRL's ``tool_mask``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

import torch

_CLOSING = re.compile(r"</[^<>]+>\s*$")  # the last tag of the grammar, a closing one
_OPENING = re.compile(r"^\s*<[^<>/]+>")  # the first, an opening one


def answer_close(answer_template: str) -> str:
    """The closing tag that ends a format's answer grammar (its ``answer_template``).

    >>> answer_close("<score_A>{score_a}</score_A> <score_B>{score_b}</score_B>")
    '</score_B>'
    """
    return _tag(answer_template, _CLOSING, "end with a closing tag")


def answer_open(answer_template: str) -> str:
    """The opening tag that starts a format's answer grammar.

    >>> answer_open("<score_A>{score_a}</score_A> <score_B>{score_b}</score_B>")
    '<score_A>'
    """
    return _tag(answer_template, _OPENING, "start with an opening tag")


def _tag(answer_template: str, pattern: re.Pattern[str], where: str) -> str:
    m = pattern.search(answer_template)
    if m is None:
        raise ValueError(f"answer template {answer_template!r} does not {where}")
    return m.group().strip()


def answer_start(token_texts: list[str], opener: str, end: int) -> int | None:
    """Index of the token holding the first character of the last ``opener`` in the text of the first
    ``end`` tokens (the answer that ``answer_end`` closed), or None if there is none.

    >>> answer_start(["<think>x</think>", "\\n<", "answer>[[", "A", "]]</answer>"], "<answer>", 5)
    1
    """
    if not opener:
        raise ValueError("opener must not be empty")
    pos = "".join(token_texts[:end]).rfind(opener)
    if pos < 0:
        return None
    # The first token whose text ends past ``pos`` holds that character.
    return bisect.bisect_right(list(accumulate(len(p) for p in token_texts[:end])), pos)


def answer_end(token_texts: list[str], marker: str) -> int | None:
    """How many tokens it takes to complete ``marker`` (the first time it appears in the text the
    tokens spell), or None if it never does.

    >>> answer_end(["<answer>[[", "A", "]]</", "answer", ">", "\\n<think>"], "</answer>")
    5
    """
    if not marker:
        raise ValueError("marker must not be empty")
    text = ""
    for k, piece in enumerate(token_texts, 1):
        text += piece
        # Only the tail can hold a newly completed marker; this keeps the scan linear.
        if marker in text[-(len(marker) + len(piece)):]:
            return k
    return None


def answer_markers(formulation: str, *, opening: bool = False) -> dict[str, str]:
    """Judge format name -> the closing tag of its answer (``opening``: the opening tag), for every
    format ``formulation`` trains.

    >>> answer_markers("multitask")
    {'pas': '</score_B>', 'pos': '</score>'}
    >>> answer_markers("pavs", opening=True)
    {'pavs': '<score_A>'}
    """
    from j1.formats import get_format
    from j1.train.data import formulation_formats

    tag = answer_open if opening else answer_close
    return {n: tag(get_format(n).answer_template) for n in formulation_formats(formulation)}


@dataclass(frozen=True)
class SpanMasks:
    """What ``mask_outside_answer`` decided for a batch of completions.

    Attributes:
        completion_mask: ``(B, T)``; the tokens after each answer are zeroed.
        loss_mask: ``(B, T)`` loss-only mask (TRL's ``tool_mask``) with the thought zeroed, or None
            when the thought is trained.
        stops: per row, the column of the token that replaced the stop (kept in the loss, to be
            pushed down by ``stop_advantages``), or None.
        after: per row, how many tokens were written after the answer.
        before: per row, how many tokens came before the answer (None when the thought is trained).
    """

    completion_mask: torch.Tensor
    loss_mask: torch.Tensor | None
    stops: list[int | None]
    after: list[int]
    before: list[int] | None


def mask_outside_answer(
    ids: torch.Tensor, mask: torch.Tensor, formats: Sequence[str], decode: Callable[[int], str], *,
    closers: dict[str, str], openers: dict[str, str] | None = None, eos_id: int | None = None,
    stop_advantage: bool = False, loss_mask: torch.Tensor | None = None,
) -> SpanMasks:
    """Mask what lies outside each completion's answer.

    Args:
        ids, mask: ``(B, T)`` right-padded completion ids and TRL's ``completion_mask``.
        formats: the judge format of each row (keys of ``closers``/``openers``).
        decode: token id -> its text.
        closers: format -> closing tag; the tokens after it leave ``completion_mask``.
        openers: format -> opening tag; the tokens before it leave the loss-only mask, and an EOS
            right after the closing tag stays in, as part of the answer (left out, nothing trains
            the stop and it drifts away). None trains the thought.
        eos_id: the EOS token id.
        stop_advantage: keep the first token after the closing tag when it is not the EOS (its
            column is returned in ``stops``).
        loss_mask: TRL's ``tool_mask`` if it already has one.

    A completion with no closed answer keeps every token: it is invalid, and its negative advantage
    is what teaches the format.
    """
    mask = mask.clone()
    loss = (loss_mask.clone() if loss_mask is not None else torch.ones_like(mask)) if openers else None
    stops: list[int | None] = []
    after: list[int] = []
    before: list[int] = []
    for i, fmt in enumerate(formats):
        n = int(mask[i].sum())
        pieces = [decode(t) for t in ids[i, :n].tolist()]
        end = answer_end(pieces, closers[fmt])
        if openers and end is not None and end < n and ids[i, end] == eos_id:
            end += 1
        stop = end if stop_advantage and end is not None and end < n and ids[i, end] != eos_id else None
        stops.append(stop)
        after.append(0 if end is None else n - end)
        if end is not None and end < n:
            mask[i, end + (stop is not None):n] = 0
        if openers and end is not None:
            start = answer_start(pieces, openers[fmt], end)
            if start:
                loss[i, :start] = 0
            before.append(start or 0)
    return SpanMasks(mask, loss, stops, after, before if openers else None)
