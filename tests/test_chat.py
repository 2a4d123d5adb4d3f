"""``j1.judging.chat``: prompts that end in a partial assistant message (a prefill) are continued, not closed."""

from __future__ import annotations

import pytest

from j1.judging.chat import prefill, render, with_prefill

USER = [{"role": "user", "content": "Which is better?"}]
OPEN = "<think>I compare both.</think>\n<answer>[["


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (USER, ""),
        ([*USER, {"role": "assistant", "content": OPEN}], OPEN),
        ([*USER, {"role": "assistant", "content": ""}], ""),
        ([*USER, {"role": "assistant", "content": None}], ""),  # a content-less message prefills nothing
        ([{"role": "assistant", "content": "earlier"}, *USER], ""),  # only the last message counts
        ([], ""),
    ],
)
def test_prefill(messages, expected):
    assert prefill(messages) == expected


def test_with_prefill_appends_one_open_assistant_message():
    assert with_prefill(USER, OPEN) == [*USER, {"role": "assistant", "content": OPEN}]
    assert with_prefill(USER, None) is USER and with_prefill(USER, "") is USER
    assert USER == [{"role": "user", "content": "Which is better?"}]  # the input is not changed
    with pytest.raises(ValueError, match="already ends with an assistant message"):
        with_prefill(with_prefill(USER, OPEN), "more")


def test_render_leaves_the_prefill_open(embedded_backend):
    tok = embedded_backend.tokenizer
    plain = render(tok, USER)
    assert plain == tok.apply_chat_template(USER, add_generation_prompt=True, tokenize=False)
    assert plain.endswith("<|im_start|>assistant\n")
    # the prefill goes right after the assistant header, with no end-of-turn after it
    assert render(tok, with_prefill(USER, OPEN)) == plain + OPEN
