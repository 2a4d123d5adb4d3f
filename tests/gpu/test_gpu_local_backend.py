"""``LocalBackend`` on the device it picks by itself (cuda when there is one), in the dtype it picks there:
judgments come back, greedy ones repeat, seeded samples repeat; in fp32 its default engine gives the
greedy completions of plain ``generate`` (``share_prefill=False``)."""

from __future__ import annotations

import pytest

from j1.backends import SamplingParams
from j1.formats import get_format
from j1.judging.judge import judge_pairs, to_json
from j1.pairs import Verdict

pytestmark = pytest.mark.gpu

ITEMS = [
    ("What is 2 + 3?", "5", "6"),
    ("Capital of France?", "Paris.", "Lyon, a city in the south-east of France."),
    ("Spell 'cat' backwards.", "tac", "cta"),
]


@pytest.fixture(scope="module")
def backend(tiny_model):
    from j1.backends.local import LocalBackend

    b = LocalBackend(str(tiny_model))  # no device given: the backend's own choice
    yield b
    b.close()


def _prompts(n: int):
    return [[{"role": "user", "content": f"Question {i}: " + "why? " * i}] for i in range(n)]


def test_the_backend_puts_the_model_on_the_device(backend, device, generations):
    assert backend.device == device
    assert {p.device.type for p in backend.model.parameters()} == {device}
    backend.generate(_prompts(2), SamplingParams(n=2, temperature=1.0, max_new_tokens=4))
    assert generations.on(device)


def test_judgments_come_back_and_greedy_repeats(backend):
    params = SamplingParams(n=1, temperature=0.0, max_new_tokens=12)
    fmt = get_format("pav", "compact")
    first = [to_json(j) for j in judge_pairs(backend, fmt, ITEMS, params)]
    again = [to_json(j) for j in judge_pairs(backend, fmt, ITEMS, params)]
    assert first == again and len(first) == len(ITEMS)
    for judgment in first:
        assert [o["order"] for o in judgment["orders"]] == ["AB", "BA"]
        assert all(len(o["samples"]) == 1 for o in judgment["orders"])
        assert judgment["verdict"] in set(Verdict)


def test_seeded_samples_repeat_and_finish_reasons_hold(backend):
    params = SamplingParams(n=3, temperature=1.0, max_new_tokens=8, seed=7)
    prompts = _prompts(4)
    before = backend.usage.requests
    first = backend.generate(prompts, params)
    assert backend.generate(prompts, params) == first
    assert backend.usage.requests - before == 2 * len(prompts)
    assert [len(c) for c in first] == [3] * len(prompts)
    for comp in (c for row in first for c in row):
        assert comp.finish_reason in {"stop", "length"}
        if comp.finish_reason == "length":
            assert comp.completion_tokens == params.max_new_tokens
        else:
            assert 1 <= comp.completion_tokens <= params.max_new_tokens
    other = backend.generate(prompts, SamplingParams(n=3, temperature=1.0, max_new_tokens=8, seed=8))
    assert other != first


@pytest.mark.parametrize("engine", ["default", "generate (static cache)"])
def test_the_engine_gives_generate_greedy_completions(tiny_model, monkeypatch, engine):
    """The device's engine (j1.backends.decode on a CPU, generate with a static cache on a GPU), and the GPU's
    engine on any device, give plain ``generate``'s greedy completions; in fp32, since a bf16 path
    may part from another at a rounding tie."""
    from j1.backends.local import LocalBackend

    if engine != "default":
        import j1.device

        monkeypatch.setattr(j1.device, "fast_decode", lambda device: False)
    fp32 = LocalBackend(str(tiny_model), dtype="float32")
    assert engine == "default" or fp32.engine == engine
    unshared = LocalBackend.from_model(fp32.model, fp32.tokenizer, share_prefill=False)
    params = SamplingParams(n=1, temperature=0.0, max_new_tokens=10)
    prompts = _prompts(5)
    assert fp32.generate(prompts, params) == unshared.generate(prompts, params)
