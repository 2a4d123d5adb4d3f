"""The local transformers backend on the embedded model: shared prefill, seeding, batching."""

from __future__ import annotations

import pytest

from j1.backends import SamplingParams
from j1.backends.local import LocalBackend

PROMPTS = [
    [{"role": "user", "content": "Name a colour."}],
    [{"role": "user", "content": "Write one short sentence about the sea and the moon, please."}],
    [{"role": "user", "content": "What is 3 + 4?"}],
]


def test_shared_prefill_matches_separate_prompts(embedded_fp32: LocalBackend):
    """Greedy: n samples from one shared prefill equal the single greedy answer, token for token (fp32)."""
    embedded_backend = embedded_fp32
    greedy = embedded_backend.generate(PROMPTS, SamplingParams(n=1, temperature=0, max_new_tokens=12))
    # Temperature ~0 through the sampling path with n=3 exercises the shared-prefill branch.
    shared = embedded_backend.generate(PROMPTS, SamplingParams(n=3, temperature=1e-4, max_new_tokens=12))
    for g, s in zip(greedy, shared, strict=True):
        assert len(s) == 3
        assert all(c.text == g[0].text for c in s)


def test_sampling_is_seeded_and_varies(embedded_backend: LocalBackend):
    params = SamplingParams(n=4, temperature=1.0, max_new_tokens=10, seed=7)
    first = embedded_backend.generate(PROMPTS[:1], params)
    again = embedded_backend.generate(PROMPTS[:1], params)
    assert [c.text for c in first[0]] == [c.text for c in again[0]]
    assert len({c.text for c in first[0]}) > 1  # 4 samples at T=1 are not all identical
    other = embedded_backend.generate(PROMPTS[:1], SamplingParams(n=4, temperature=1.0, max_new_tokens=10, seed=8))
    assert [c.text for c in other[0]] != [c.text for c in first[0]]


def test_finish_reason_and_tokens(embedded_backend: LocalBackend):
    out = embedded_backend.generate(PROMPTS[:1], SamplingParams(n=1, temperature=0, max_new_tokens=3))
    assert out[0][0].finish_reason == "length"
    assert out[0][0].completion_tokens == 3


def test_batches_respect_limits(embedded_backend: LocalBackend):
    b = LocalBackend.from_model(embedded_backend.model, embedded_backend.tokenizer, batch_rows=8)
    batches = b._batches([5, 50, 7, 48, 6], n=4)  # 8 rows / 4 samples = 2 prompts per batch
    assert sorted(i for batch in batches for i in batch) == [0, 1, 2, 3, 4]
    assert all(len(batch) <= 2 for batch in batches)
    assert batches[0] == [0, 4]  # shortest first: lengths 5 and 6 share a batch


def test_stream_yields_every_prompt_once(embedded_backend: LocalBackend):
    seen = [i for i, _ in embedded_backend.stream(PROMPTS, SamplingParams(n=2, temperature=1, max_new_tokens=4))]
    assert sorted(seen) == [0, 1, 2]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"n": 0}, "at least one"), ({"n": 2, "temperature": 0}, "identical"), ({"temperature": -1}, ">= 0"),
     ({"max_new_tokens": 0}, ">= 1")],
)
def test_sampling_params_checks(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SamplingParams(**kwargs)


def test_a_prefill_is_continued_and_returned_whole(embedded_backend: LocalBackend):
    """Prefilling the first words of the greedy answer gives back the same greedy answer: the model
    continues the open assistant message, and the completion text holds the prefill too."""
    params = SamplingParams(n=1, temperature=0, max_new_tokens=16)
    answer = embedded_backend.generate(PROMPTS[1:2], params)[0][0].text
    head = answer[: answer.index(" ", len(answer) // 3)]  # cut before a space: the same tokens
    out = embedded_backend.generate([[*PROMPTS[1], {"role": "assistant", "content": head}]],
                                    SamplingParams(n=2, temperature=1e-4, max_new_tokens=16))[0]
    assert all(c.text.startswith(head) for c in out)
    assert out[0].text[: len(answer) - 8] == answer[: len(answer) - 8]  # 16 new tokens reach further


def test_the_gpu_engine_gives_the_cpu_engines_greedy_answers(embedded_fp32: LocalBackend, monkeypatch):
    """On a GPU the backend decodes with generate and a static cache (j1.device.fast_decode); forced
    here on the CPU, its greedy answers are j1.backends.decode's, token for token (fp32)."""
    import j1.device

    embedded_backend = embedded_fp32
    params = SamplingParams(n=1, temperature=0, max_new_tokens=12)
    assert embedded_backend.engine == "j1.decode"
    fast = embedded_backend.generate(PROMPTS, params)
    monkeypatch.setattr(j1.device, "fast_decode", lambda device: False)
    assert embedded_backend.engine == "generate (static cache)"
    static = embedded_backend.generate(PROMPTS, params)
    assert [[c.text for c in r] for r in static] == [[c.text for c in r] for r in fast]
    assert [[c.finish_reason for c in r] for r in static] == [[c.finish_reason for c in r] for r in fast]


def test_the_device_sets_dtype_and_batch_rows(embedded_backend: LocalBackend):
    # the CPU defaults: bf16 where the CPU computes it (AVX-512 BF16, AMX), else float32; 32 rows a batch
    from j1.device import cpu_native_bf16

    want = "bfloat16" if cpu_native_bf16() else "float32"
    assert (embedded_backend.dtype, embedded_backend.batch_rows) == (want, 32)


@pytest.mark.parametrize("engine", ["j1.decode", "generate (static cache)"])
def test_rows_stop_at_their_answer_and_the_texts_are_the_same(embedded_fp32: LocalBackend, engine, monkeypatch):
    """A judge's rows stop at their answer's closing tag (SamplingParams.stop, as j1.judging.judge.judging sets it):
    fewer tokens decoded, the same texts, finish reasons and token counts as decoding on to the limit."""
    import dataclasses

    import j1.device
    from j1.formats import get_format
    from j1.judging.chat import with_prefill
    from j1.judging.judge import judging
    from j1.pairs import render_both

    embedded_backend = embedded_fp32
    if engine != "j1.decode":
        monkeypatch.setattr(j1.device, "fast_decode", lambda device: False)
    assert embedded_backend.engine == engine
    fmt = get_format("pav", "compact")
    prompts = [with_prefill(m, "<think>Compare.</think>\n<answer>[[")
               for _, m in render_both(fmt, "What is 2 + 3?", "5.", "6.")]
    stop = judging(SamplingParams(n=4, temperature=1.0, max_new_tokens=16, seed=1), fmt)
    runs = {}
    for name, params in (("stop", stop), ("on", dataclasses.replace(stop, stop=()))):
        written: list[int] = []
        out = dict(embedded_backend.stream(prompts, params, on_tokens=written.extend))
        runs[name] = ([(c.text, c.finish_reason, c.completion_tokens) for i in sorted(out) for c in out[i]], len(written))
    (texts, decoded), (texts_on, decoded_on) = runs["stop"], runs["on"]
    assert texts == texts_on
    ended = [t for t in texts if t[1] == "stop"]
    assert ended and all(t[0].endswith("</answer>") for t in ended)  # some rows did end at their answer
    assert decoded < decoded_on and decoded >= sum(t[2] for t in texts)  # what was kept was decoded


@pytest.mark.parametrize("head, pieces, want", [
    # (prefill, the row's token texts in order, at which token the row is complete; None: never)
    ("<think>x</think><answer>[[", ["A", "]]", "</", "answer", ">"], 5),
    ("<think>x</think><answer>[[", ["A", "]]</answer>", " more"], 2),
    ("<think>x</think><answer>[[", ["Q", "]]</answer>"], None),  # closes, but not a valid answer: decode on
    ("<answer>[[", ["A", "]]</answer>"], None),  # pav needs a thought first: no valid answer
    ("<think>x</think><answer>[[A]]</answer>", [" more"], None),  # the end lies in the prefill: not past the head
    ("", ["<think>", "x", "</think>", "<answer>", "[[B]]", "</answer>"], 6),
])
def test_answer_ends_complete_a_row_at_the_token_that_closes_its_answer(embedded_backend, head, pieces, want):
    from j1.backends.local import AnswerEnds
    from j1.formats import get_format
    from j1.judging.judge import judging

    tok = embedded_backend.tokenizer
    tokens = [tok(p, add_special_tokens=False).input_ids for p in pieces]
    ends = AnswerEnds(tok, [head], judging(SamplingParams(), get_format("pav", "compact")))
    complete_at, count = None, 0
    for piece in tokens:
        for t in piece:
            count += 1
            if ends([0], [t]) and complete_at is None:
                complete_at = count
    last_tokens = [sum(len(p) for p in tokens[:k + 1]) for k in range(len(tokens))]
    assert complete_at == (None if want is None else last_tokens[want - 1])
    assert (0 in ends.ended) is (want is not None)
