"""How engines differ, against the scripted server's switches (``fake_openai``): n refused or ignored, stop
strings cut from the text, Retry-After, context errors, max_tokens fitted to the context, the completions
endpoint with the judge's own chat template, and verdict margins from logprobs."""

from __future__ import annotations

import pytest
from fake_openai import FakeOpenAIServer

from j1.backends import BackendError, ContextTooLong, SamplingParams
from j1.backends import openai_http as http
from j1.backends.openai_http import OpenAIBackend
from j1.formats import get_format
from j1.judging.chat import render, with_prefill
from j1.judging.judge import judging, to_sample

MSG = [[{"role": "user", "content": f"question {i}"}] for i in range(3)]
PAV = get_format("pav")
ANSWER = "<think>both answer</think><answer>[[A]]</answer>"


@pytest.fixture(scope="module")
def tokenizer():
    from j1.models import embedded_model_dir, load_tokenizer

    return load_tokenizer(str(embedded_model_dir()))


def test_a_server_that_refuses_n_gets_one_request_per_sample():
    with FakeOpenAIServer(refuse_n=True) as server:
        out = OpenAIBackend(server.base_url, "m", backoff=0.01).generate(MSG[:1], SamplingParams(n=3, temperature=1))
        assert len(out[0]) == 3
        assert [r["n"] for r in server.requests] == [3, 1, 1, 1]  # the 400 is not retried as is


@pytest.mark.parametrize("stop_reason", [False, True])
def test_the_answer_ends_at_its_closing_tag_and_keeps_it(stop_reason):
    """The engine stops at the closing tag and drops it (OpenAI's rule); j1 puts it back, so the answer
    parses. With vLLM's stop_reason the engine says so; without it, the answer must end exactly there."""
    with FakeOpenAIServer(lambda m, k, b: ANSWER + " and more", stop_reason=stop_reason) as server:
        out = OpenAIBackend(server.base_url, "m").generate(MSG[:1], judging(SamplingParams(temperature=0), PAV))
        assert server.requests[0]["stop"] == ["</answer>"]
    (comp,) = out[0]
    assert (comp.text, comp.finish_reason) == (ANSWER, "stop")
    assert to_sample(PAV, comp, "AB").verdict == "A"


def test_an_end_before_the_closing_tag_is_not_mended():
    # The model stopped (EOS) inside its thought: nothing is added, the answer stays invalid.
    with FakeOpenAIServer(lambda m, k, b: "<think>I stop here") as server:
        (comp,), = OpenAIBackend(server.base_url, "m").generate(MSG[:1], judging(SamplingParams(temperature=0), PAV))
    assert comp.text == "<think>I stop here" and to_sample(PAV, comp, "AB").verdict == "invalid"


def test_retry_after_is_honoured(monkeypatch):
    waits = []
    real_sleep = http.asyncio.sleep

    async def record(delay, *args, **kwargs):
        waits.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(http.asyncio, "sleep", record)
    with FakeOpenAIServer(fail_first=2, fail_status=429, retry_after="7") as server:
        out = OpenAIBackend(server.base_url, "m", max_retries=3, backoff=0.01).generate(MSG[:1], SamplingParams())
    assert len(out[0]) == 1 and waits == [7.0, 7.0]  # as asked, not the 0.01 s backoff


def test_a_context_error_is_that_prompts_alone():
    """vLLM's 400 for a prompt over its context: ContextTooLong naming the prompt, not retried; the
    prompts that fit are answered (j1 eval counts the one invalid, with the reason)."""
    long_prompt = [{"role": "user", "content": "x" * 500}]
    with FakeOpenAIServer(context=300) as server:
        backend = OpenAIBackend(server.base_url, "m", max_retries=3, backoff=0.01)
        seen, error = {}, None
        try:
            for i, comps in backend.stream([MSG[0], long_prompt], SamplingParams(max_new_tokens=8)):
                seen[i] = comps
        except ContextTooLong as exc:
            error = exc
        assert error is not None and error.index == 1 and "maximum context length is 300" in str(error)
        assert sum(1 for r in server.requests if r["messages"] == long_prompt) == 1


def test_max_tokens_is_fitted_into_the_engine_context(tokenizer):
    """With the judge's tokenizer and the engine's max_model_len (vLLM lists it), a prompt that leaves less
    room than max_new_tokens gets max_tokens of that room; one that leaves none is refused unsent."""
    with FakeOpenAIServer(model="m", max_model_len=60) as server:
        backend = OpenAIBackend(server.base_url, "m", tokenizer=tokenizer, endpoint="completions")
        assert backend.engine_context == 60
        short = [{"role": "user", "content": "hi"}]
        prompt_tokens = backend.count_tokens(short)
        backend.generate([short], SamplingParams(max_new_tokens=512))
        assert server.requests[-1]["max_tokens"] == 60 - prompt_tokens
        with pytest.raises(ContextTooLong, match="> the context of 60 tokens"):
            backend.generate([[{"role": "user", "content": "word " * 80}]], SamplingParams())
        assert len(server.requests) == 1


def test_the_completions_endpoint_sends_the_judges_own_rendering(tokenizer):
    prefill = "<think>fixed</think>\n<answer>[["
    messages = with_prefill(PAV.render("2+2?", "4", "5"), prefill)
    with FakeOpenAIServer(lambda m, k, b: "A]]</answer>") as server:
        backend = OpenAIBackend(server.base_url, "m", tokenizer=tokenizer)  # auto: completions with a tokenizer
        (comp,), = backend.generate([messages], judging(SamplingParams(temperature=0), PAV))
        (sent,) = server.requests
    assert backend.endpoint == "completions" and sent["_endpoint"] == "completions"
    assert sent["prompt"] == render(tokenizer, messages) and sent["prompt"].endswith(prefill)
    assert comp.text == prefill + "A]]</answer>" and to_sample(PAV, comp, "AB").verdict == "A"


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_the_verdict_margin_comes_from_the_engines_logprobs(endpoint, tokenizer):
    """The top alternatives at the verdict letter give its log-odds: shown A -0.2 vs B -1.7 is +1.5 for
    shown A; in order BA shown A is the original B, so the sample's margin for the original A is -1.5."""
    def tops(text, i):
        return {"A": -0.2, "B": -1.7} if text[:i].endswith("[[") else {text[i]: -0.1}

    with FakeOpenAIServer(lambda m, k, b: ANSWER, top_logprobs=tops) as server:
        backend = OpenAIBackend(server.base_url, "m", tokenizer=tokenizer if endpoint == "completions" else None,
                                endpoint=endpoint)
        params = judging(SamplingParams(temperature=0, logprobs=5), PAV)
        (comp,), = backend.generate([PAV.render("q", "a", "b")], params)
        assert server.requests[0]["logprobs"] in (True, 5)
    assert to_sample(PAV, comp, "AB").margin == pytest.approx(1.5)
    assert to_sample(PAV, comp, "BA").margin == pytest.approx(-1.5)


def test_the_engine_must_serve_the_judge_it_is_asked_for():
    with FakeOpenAIServer(model="other-model") as server:
        with pytest.raises(BackendError, match="serves other-model, not 'j1-135m'.*--served-model-name j1-135m"):
            OpenAIBackend(server.base_url, "j1-135m", check_model=True)
