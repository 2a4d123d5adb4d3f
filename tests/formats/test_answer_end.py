"""``JudgeFormat.answer_end``: where a completion's answer ends, so a judge stops there (issue: answers
that end where they end). The first closing tag at which the text so far parses as a valid answer."""

from __future__ import annotations

import pytest

from j1.formats import get_format

THINK = "<think>x</think> "

CASES = [
    # (format, completion, the text it ends with, or None when it never holds a valid answer)
    ("pav", THINK + "<answer>[[A]]</answer>\n<answer", THINK + "<answer>[[A]]</answer>"),
    ("pav", THINK + "<answer>[[B]]</answer>", THINK + "<answer>[[B]]</answer>"),
    ("pav", THINK + "<answer>[[B]]</answer> <answer>[[A]]</answer>", THINK + "<answer>[[B]]</answer>"),
    # a closing tag inside the thought is no answer: the end is the real one after </think>
    ("pav", "<think>I write </answer> here</think> <answer>[[A]]</answer>!",
     "<think>I write </answer> here</think> <answer>[[A]]</answer>"),
    ("pav", THINK + "<answer>[[A]]", None),  # not closed yet
    ("pav", "<answer>[[A]]</answer>", None),  # no thought: invalid however it ends
    ("pav", "", None),
    # pas: the answer is complete after both scores, in either order
    ("pas", THINK + "<score_A>7</score_A> <score_B>3</score_B> more", THINK + "<score_A>7</score_A> <score_B>3</score_B>"),
    ("pas", THINK + "<score_B>3</score_B> <score_A>7</score_A>\n", THINK + "<score_B>3</score_B> <score_A>7</score_A>"),
    ("pavs", THINK + "<score_A>7</score_A> <score_B>3</score_B> <answer>[[A]]</answer> x",
     THINK + "<score_A>7</score_A> <score_B>3</score_B> <answer>[[A]]</answer>"),
    ("pos", THINK + "<score>8</score><score>", THINK + "<score>8</score>"),
    ("fourway", THINK + "<answer>[[C]]</answer> trailing", THINK + "<answer>[[C]]</answer>"),
]


@pytest.mark.parametrize("name,text,expected", CASES)
def test_answer_end(name, text, expected):
    fmt = get_format(name)
    end = fmt.answer_end(text)
    assert (None if end is None else text[:end]) == expected
    if end is not None:  # what is kept parses as the same answer
        assert fmt.parse(text[:end]).valid
