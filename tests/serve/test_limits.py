"""``j1.judging.limits``: the token budget, shortening responses to fit (tables), and ``PromptFitter`` on a
counter that counts characters (so every number here can be worked by hand)."""

from __future__ import annotations

import doctest

import pytest

from j1.judging import limits
from j1.judging.limits import MARKER, ContextLimit, ContextTooLong, PromptFitter, cut_text, water_fill
from j1.serve import protocol
from j1.serve.tasks import Task


@pytest.mark.parametrize("module", [limits, protocol])
def test_doctests(module):
    assert doctest.testmod(module).failed == 0


@pytest.mark.parametrize("lengths, total, keep", [
    ([], 0, []),
    ([5], 10, [5]),                  # fits: unchanged
    ([5], 5, [5]),
    ([5], 4, [4]),
    ([5], 0, [0]),
    ([5], -3, [0]),                  # a negative budget keeps nothing
    ([100, 10], 50, [40, 10]),       # the long one gives up all 60; the short one is whole
    ([10, 100], 50, [10, 40]),       # order does not matter
    ([30, 30], 45, [23, 22]),        # even cap 22, the remainder 1 to the first
    ([30, 30], 44, [22, 22]),
    ([1, 50, 50], 21, [1, 10, 10]),  # the short one whole, the rest split 20 evenly
    ([3, 3, 3], 7, [3, 2, 2]),       # cap 2, remainder 1 to the earliest
    ([0, 7], 3, [0, 3]),
    ([8, 2, 8], 9, [4, 2, 3]),       # 2 whole, then 7 over two: 4 and 3
])
def test_water_fill_table(lengths, total, keep):
    got = water_fill(lengths, total)
    assert got == keep
    assert sum(got) <= max(total, 0) or sum(lengths) <= total
    assert all(0 <= k <= n for k, n in zip(got, lengths, strict=True))


def test_water_fill_refuses_negative_lengths():
    with pytest.raises(ValueError, match="must be >= 0"):
        water_fill([3, -1], 2)


def _spans(text: str) -> list[tuple[int, int]]:
    return [(i, i + 1) for i in range(len(text))]  # one token per character


@pytest.mark.parametrize("text, keep, side, expected", [
    ("abcdef", 6, "left", "abcdef"),          # all kept: unchanged, no marker
    ("abcdef", 9, "middle", "abcdef"),
    ("abcdef", 2, "left", MARKER + "ef"),     # left keeps the end
    ("abcdef", 3, "middle", "ab" + MARKER + "f"),  # middle: the larger half at the head
    ("abcdef", 2, "middle", "a" + MARKER + "f"),
    ("abcdef", 1, "middle", "a" + MARKER),
    ("abcdef", 0, "left", MARKER),
    ("", 0, "left", ""),                       # nothing to cut
    ("éü漢字🙂x", 2, "left", MARKER + "🙂x"),   # unicode: cut at token (here character) boundaries
])
def test_cut_text_table(text, keep, side, expected):
    assert cut_text(text, _spans(text), keep, side) == expected


def test_cut_text_uses_the_token_spans():
    # three tokens of unequal width: "Hello", " wor", "ld!"
    text, spans = "Hello world!", [(0, 5), (5, 9), (9, 12)]
    assert cut_text(text, spans, 1, "left") == MARKER + "ld!"
    assert cut_text(text, spans, 2, "middle") == "Hello" + MARKER + "ld!"
    with pytest.raises(ValueError, match="choose left or middle"):
        cut_text(text, spans, 1, "right")


@pytest.mark.parametrize("kw, message", [
    (dict(context=100, max_new_tokens=100), "leaves no room for a prompt in the context of 100"),
    (dict(context=100, max_new_tokens=8, truncate="right"), "truncate 'right': choose one of error, left, middle"),
])
def test_context_limit_checks(kw, message):
    with pytest.raises(ValueError, match=message):
        ContextLimit(**kw)


def test_context_limit_budget_and_report():
    limit = ContextLimit(8192, 8, "middle", "the model's config")
    assert limit.prompt_budget == 8184 and ContextLimit(None, 8).prompt_budget is None
    assert limit.describe() == {"max_context": 8192, "context_from": "the model's config", "max_new_tokens": 8,
                                "truncate": "middle"}
    # the numbers: both are named, with the sum that is over
    assert str(limit.too_long(30005)) == ("the judge prompt has 30005 tokens and the judge writes up to 8: "
                                          "30013 > the context of 8192 tokens")


# A judge whose prompts are "P:<prompt> A:<a> B:<b>" (and the other order), counted one token per character.
def _prompts(task: Task) -> list[list[dict]]:
    shown = [(task.response_a, task.response_b), (task.response_b, task.response_a)] if task.response_b is not None \
        else [(task.response_a, "")]
    return [[{"role": "user", "content": f"P:{task.prompt} A:{a} B:{b}"}] for a, b in shown]


def _count(messages) -> int:
    return len(messages[0]["content"])


def _fitter(context: int | None, truncate: str = "error", max_new: int = 4) -> PromptFitter:
    return PromptFitter(ContextLimit(context, max_new, truncate), _prompts, _count, _spans)


def test_a_fitting_task_is_unchanged():
    task = Task("q", "aaaa", "bb")
    # "P:q A:aaaa B:bb" is 15 characters; 15 + 4 new tokens = 19 fits a context of 19
    fitted = _fitter(19).fit(task)
    assert fitted.task is task and fitted.prompt_tokens == 15 and not fitted.truncated


def test_an_unknown_context_checks_nothing():
    fitted = _fitter(None).fit(Task("q", "a" * 10_000, "b"))
    assert fitted.prompt_tokens is None and not fitted.truncated


def test_a_task_over_the_context_is_refused_naming_both_numbers():
    with pytest.raises(ContextTooLong) as raised:
        _fitter(18).fit(Task("q", "aaaa", "bb"))
    assert "the judge prompt has 15 tokens and the judge writes up to 4: 19 > the context of 18 tokens" \
        in str(raised.value)
    assert "--truncate left|middle" in str(raised.value) and raised.value.code == "context_length_exceeded"


@pytest.mark.parametrize("truncate, a, b", [
    # "P:q A:<a> B:<b>" is 9 + 20 + 10 = 39 characters; the budget is 30 - 4 = 26, so 13 must go and
    # the responses keep 17: an even cap of 8 (both are longer), the spare one to a: 9 and 8. A marker
    # costs one more each (28), so the second count sheds 2 more: 8 and 7 tokens plus a marker each.
    ("left", MARKER + "a" * 8, MARKER + "b" * 7),
    ("middle", "a" * 4 + MARKER + "a" * 4, "b" * 4 + MARKER + "b" * 3),  # the larger half at the head
])
def test_truncation_shortens_the_longest_response_until_it_fits(truncate, a, b):
    fitted = _fitter(30, truncate).fit(Task("q", "a" * 20, "b" * 10))
    assert fitted.truncated and (fitted.task.response_a, fitted.task.response_b) == (a, b)
    assert fitted.prompt_tokens == 26


def test_a_short_response_is_left_whole():
    # 9 + 40 + 2 = 51 > 26: the responses keep 17, of which "bb" takes its 2 whole and a the other 15
    # (less 1 for the marker on the second count)
    fitted = _fitter(30, "left").fit(Task("q", "a" * 40, "bb"))
    assert (fitted.task.response_a, fitted.task.response_b) == (MARKER + "a" * 14, "bb")


def test_truncation_keeps_the_count_within_the_budget_for_many_shapes():
    for n_a in (0, 1, 7, 40, 300):
        for n_b in (0, 3, 50, 299):
            fitter = _fitter(60, "middle")
            fitted = fitter.fit(Task("prompt", "a" * n_a, "b" * n_b))
            assert fitted.prompt_tokens <= 56, (n_a, n_b)
            assert fitter.longest(fitted.task) == fitted.prompt_tokens


def test_truncation_of_a_single_response():
    fitted = _fitter(20, "left").fit(Task("q", "x" * 50))
    # "P:q A:<a> B:" is 9 + len(a): a keeps 20 - 4 - 9 = 7 characters, one of them the marker
    assert fitted.task.response_a == MARKER + "x" * 6 and fitted.task.response_b is None


def test_a_prompt_too_long_by_itself_is_refused_even_when_truncating():
    with pytest.raises(ContextTooLong, match="the request's prompt itself is too long"):
        _fitter(30, "left").fit(Task("q" * 40, "a", "b"))


def test_a_backend_that_cannot_tokenize_refuses_instead_of_truncating():
    fitter = PromptFitter(ContextLimit(20, 4, "left"), _prompts, _count, lambda text: None)
    with pytest.raises(ContextTooLong, match="cannot shorten text"):
        fitter.fit(Task("q", "a" * 50, "b"))


def test_counting_while_the_model_generates_does_not_collide(tiny_model, one_torch_thread):
    """The server counts tokens in other threads while a batch generates. The backend's padded calls
    switch its tokenizer's padding on and off (Rust state, borrowed mutably), so counting uses its own
    copy: the counts stay exact and no call meets the other's borrow ("Already borrowed")."""
    import threading

    from j1 import load_judge
    from j1.serve.tasks import judge_prompts

    with load_judge(str(tiny_model), max_new_tokens=32) as judge:
        prompts = judge_prompts(judge, Task("What is 2 + 3?", "5 " * 200, "6"))
        expected = judge.backend.count_tokens(prompts[0])
        done = threading.Event()
        counts, errors = [], []

        def count() -> None:
            while not done.is_set():
                try:
                    counts.append(judge.backend.count_tokens(prompts[0]))
                    judge.backend.token_spans("5 " * 200)
                except Exception as exc:  # noqa: BLE001 - the assertion reports it
                    errors.append(exc)

        counter = threading.Thread(target=count)
        counter.start()
        try:
            for _ in range(2):
                judge.compare_many([("Q", "a " * k, "b") for k in (1, 50, 300)])
        finally:
            done.set()
            counter.join(30)
    assert errors == [] and counts and set(counts) == {expected}
