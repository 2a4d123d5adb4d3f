"""The answer span of a judge completion, in tokens: where the answer's opening and closing tags
fall, and which tokens the policy loss keeps under ``loss_span`` (``j1.train.options``).

The thought must stay in ``completion_mask``: TRL builds the attention mask from it, and the answer
has to be scored in the context it was sampled in (the tokens after the answer can go, attention
being causal). The loss-only mask is TRL's ``tool_mask``.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

import torch


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
    """Judge format name -> the closing tag of its answer (``opening``: the opening tag), as the format
    declares them (``JudgeFormat.answer_tags``), for every format ``formulation`` trains.

    >>> answer_markers("multitask")
    {'pas': '</score_B>', 'pos': '</score>'}
    >>> answer_markers("pavs", opening=True)
    {'pavs': '<score_A>'}
    """
    from j1.formats import get_format
    from j1.train.data import formulation_formats

    return {n: get_format(n).answer_tags[0 if opening else 1] for n in formulation_formats(formulation)}


@dataclass(frozen=True)
class SpanMasks:
    """What ``mask_outside_answer`` decided for a batch of completions.

    Attributes:
        completion_mask: ``(B, T)``; the tokens after each answer are zeroed.
        loss_mask: ``(B, T)`` loss-only mask (TRL's ``tool_mask``) with the thought zeroed, or None
            when the thought is trained.
        after: per row, how many tokens were written after the answer.
        before: per row, how many tokens came before the answer (None when the thought is trained).
    """

    completion_mask: torch.Tensor
    loss_mask: torch.Tensor | None
    after: list[int]
    before: list[int] | None


def mask_outside_answer(
    ids: torch.Tensor, mask: torch.Tensor, formats: Sequence[str], decode: Callable[[int], str], *,
    closers: dict[str, str], openers: dict[str, str] | None = None, eos_id: int | None = None,
    loss_mask: torch.Tensor | None = None,
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
        loss_mask: TRL's ``tool_mask`` if it already has one.

    A completion with no closed answer keeps every token: it is invalid, and its negative advantage
    is what teaches the format.
    """
    mask = mask.clone()
    loss = (loss_mask.clone() if loss_mask is not None else torch.ones_like(mask)) if openers else None
    after: list[int] = []
    before: list[int] = []
    for i, fmt in enumerate(formats):
        n = int(mask[i].sum())
        pieces = [decode(t) for t in ids[i, :n].tolist()]
        end = answer_end(pieces, closers[fmt])
        if openers and end is not None and end < n and ids[i, end] == eos_id:
            end += 1
        after.append(0 if end is None else n - end)
        if end is not None and end < n:
            mask[i, end:n] = 0
        if openers and end is not None:
            start = answer_start(pieces, openers[fmt], end)
            if start:
                loss[i, :start] = 0
            before.append(start or 0)
    return SpanMasks(mask, loss, after, before if openers else None)
