"""Chat prompts whose last message is a partial assistant message (a *prefill*).

The model continues that message instead of opening a new one: TRL's ``maybe_apply_chat_template``
and vLLM's ``continue_final_message`` follow the same convention. j1 uses it to fix the start of the
judge's answer (for example a given thought, then ``<answer>[[``) so that only the rest is
generated. Everything that reads a judge output then reads the whole assistant message: the
prefill followed by what the model wrote.
"""

from __future__ import annotations

from collections.abc import Sequence

from j1.formats.base import Messages


def _continues(messages: Sequence[dict]) -> bool:
    """Whether the last message is the assistant's: the one a model continues instead of answering."""
    return bool(messages) and messages[-1].get("role") == "assistant"


def prefill(messages: Sequence[dict]) -> str:
    """The text the assistant's answer is fixed to start with: the content of a final assistant
    message, or "" when the last message is not the assistant's.

    >>> prefill([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "<think>"}])
    '<think>'
    >>> prefill([{"role": "user", "content": "hi"}])
    ''
    """
    return (messages[-1].get("content") or "") if _continues(messages) else ""


def with_prefill(messages: Messages, text: str | None) -> Messages:
    """``messages`` followed by a partial assistant message ``text`` (unchanged for None or "").

    >>> with_prefill([{"role": "user", "content": "hi"}], "<answer>[[")[-1]
    {'role': 'assistant', 'content': '<answer>[['}
    """
    if not text:
        return messages
    if _continues(messages):
        raise ValueError("the prompt already ends with an assistant message; cannot add a second prefill")
    return [*messages, {"role": "assistant", "content": text}]


def render(tokenizer, messages: Sequence[dict]) -> str:
    """The prompt text a model continues: the chat template with the generation prompt, or, when the
    last message is the assistant's, that message left open (``continue_final_message``)."""
    if _continues(messages):
        return tokenizer.apply_chat_template(
            list(messages), add_generation_prompt=False, continue_final_message=True, tokenize=False
        )
    return tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)


def fixed_thought(prefill: str) -> str | None:
    """The thought an assistant prefill fixes (None when the prefill leaves it open).

    >>> fixed_thought("<think>I compare both.</think>\\n<answer>[["), fixed_thought("<think>")
    ('I compare both.', None)
    """
    head, sep, _ = prefill.partition("</think>")
    return head.removeprefix("<think>") if sep and head.startswith("<think>") else None
