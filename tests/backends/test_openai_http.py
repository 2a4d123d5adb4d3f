"""The OpenAI-compatible backend against a scripted server speaking the real protocol on loopback."""

from __future__ import annotations

import gc
import pickle
import threading

import pytest
from fake_openai import FakeOpenAIServer

from j1.backends import BackendError, SamplingParams
from j1.backends.openai_http import OpenAIBackend

MSG = [[{"role": "user", "content": f"q{i}"}] for i in range(6)]


def test_n_samples_and_model_discovery(fake_openai):
    backend = OpenAIBackend(fake_openai.base_url)
    assert backend.model_name == "scripted-judge"  # from GET /models
    out = backend.generate(MSG[:2], SamplingParams(n=3, temperature=1, max_new_tokens=8))
    assert [len(o) for o in out] == [3, 3]
    assert [r["n"] for r in fake_openai.requests] == [3, 3]  # one request per prompt, n at once
    assert fake_openai.requests[0]["max_tokens"] == 8
    assert backend.usage.completion_tokens == 30


def test_server_that_ignores_n_gets_one_request_per_sample():
    with FakeOpenAIServer(honour_n=False) as server:
        backend = OpenAIBackend(server.base_url, "m")
        out = backend.generate(MSG[:1], SamplingParams(n=3, temperature=1))
        assert len(out[0]) == 3
        assert [r["n"] for r in server.requests] == [3, 1, 1]  # n asked once, the rest fanned out
        assert len({r["seed"] for r in server.requests}) == 3  # each sample its own seed
        backend.generate(MSG[1:2], SamplingParams(n=3, temperature=1))
        assert [r["n"] for r in server.requests[3:]] == [1, 1, 1]  # known now: singles from the start
        assert len({r["seed"] for r in server.requests[3:]}) == 3  # each sample its own seed


def test_retries_then_succeeds():
    with FakeOpenAIServer(fail_first=2, fail_status=503) as server:
        backend = OpenAIBackend(server.base_url, "m", max_retries=3, backoff=0.01)
        out = backend.generate(MSG[:1], SamplingParams())
        assert len(out[0]) == 1 and len(server.requests) == 3


def test_gives_up_naming_server_and_status():
    with FakeOpenAIServer(fail_first=100, fail_status=503) as server:
        backend = OpenAIBackend(server.base_url, "m", max_retries=1, backoff=0.01)
        with pytest.raises(BackendError, match=r"127\.0\.0\.1.*HTTP 503"):
            backend.generate(MSG[:1], SamplingParams())


def test_client_error_is_not_retried():
    with FakeOpenAIServer(fail_first=100, fail_status=400) as server:
        backend = OpenAIBackend(server.base_url, "m", max_retries=3, backoff=0.01)
        with pytest.raises(BackendError, match="HTTP 400"):
            backend.generate(MSG[:1], SamplingParams())
        assert len(server.requests) == 1


def test_unreachable_server():
    backend = OpenAIBackend("http://127.0.0.1:9/v1", "m", max_retries=0, timeout=2)
    with pytest.raises(BackendError, match="connection error"):
        backend.generate(MSG[:1], SamplingParams())


@pytest.mark.parametrize("limit", [1, 3])
def test_concurrency_limit_is_used_and_respected(limit):
    # Each request holds the server for 0.2 s, so the client's requests overlap up to its limit.
    with FakeOpenAIServer(latency=0.2) as server:
        OpenAIBackend(server.base_url, "m", concurrency=limit).generate(MSG, SamplingParams())
        assert server.max_in_flight == limit


def test_a_prefill_asks_the_server_to_continue_it():
    """vLLM/SGLang continue a final assistant message with continue_final_message and return the
    continuation only; the backend puts the prefill back in front (the Backend contract)."""
    with FakeOpenAIServer(lambda messages, index, body: "A]]</answer>") as server:
        backend = OpenAIBackend(server.base_url, "m")
        prompt = [*MSG[0], {"role": "assistant", "content": "<think>t</think><answer>[["}]
        out = backend.generate([prompt, MSG[1]], SamplingParams(n=2, temperature=1))
        assert [c.text for c in out[0]] == ["<think>t</think><answer>[[A]]</answer>"] * 2
        assert [c.text for c in out[1]] == ["A]]</answer>"] * 2  # no prefill: the reply as is
        sent = {r["messages"][-1]["role"]: r for r in server.requests}
    assert sent["assistant"]["continue_final_message"] is True and sent["assistant"]["add_generation_prompt"] is False
    assert "continue_final_message" not in sent["user"] and "add_generation_prompt" not in sent["user"]


def test_calls_share_one_client_and_its_connections():
    with FakeOpenAIServer() as server:
        backend = OpenAIBackend(server.base_url, "m", concurrency=1)
        for _ in range(3):
            assert len(backend.generate(MSG[:2], SamplingParams())) == 2
        assert len(server.requests) == 6 and server.connections == 1  # kept alive across calls
        backend.close()
        backend.generate(MSG[:1], SamplingParams())  # a closed backend opens again on use
        assert server.connections == 2


def test_concurrency_is_one_limit_across_threads():
    # Two threads call at once (as j1 serve's batches do); together they keep at most `limit` in flight.
    with FakeOpenAIServer(latency=0.2) as server:
        backend = OpenAIBackend(server.base_url, "m", concurrency=2)
        out: list = []
        threads = [threading.Thread(target=lambda: out.append(backend.generate(MSG, SamplingParams())))
                   for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [len(o) for o in out] == [6, 6] and server.max_in_flight == 2


def test_a_used_backend_pickles_and_its_copy_works():
    with FakeOpenAIServer() as server:
        backend = OpenAIBackend(server.base_url)
        backend.generate(MSG[:1], SamplingParams())
        copy = pickle.loads(pickle.dumps(backend))
        assert copy.model_name == "scripted-judge"
        assert [c.text for c in copy.generate(MSG[:1], SamplingParams())[0]] == \
               [c.text for c in backend.generate(MSG[:1], SamplingParams())[0]]


def test_leaving_a_stream_early_cancels_the_requests_left():
    with FakeOpenAIServer(latency=0.3) as server:
        backend = OpenAIBackend(server.base_url, "m", concurrency=1)
        stream = backend.stream(MSG, SamplingParams())
        next(stream)
        stream.close()
        # The next call gets the one slot at once: nothing left over from the first stream runs before it.
        assert len(backend.generate(MSG[:1], SamplingParams())) == 1
        assert len(server.requests) <= 3


def test_a_backend_dropped_without_close_stops_its_thread():
    with FakeOpenAIServer() as server:
        backend = OpenAIBackend(server.base_url, "m")
        backend.generate(MSG[:1], SamplingParams())
        thread = backend._io.thread
        del backend
        gc.collect()
        thread.join(timeout=5)
        assert not thread.is_alive()
