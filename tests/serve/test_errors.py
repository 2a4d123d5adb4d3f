"""One error schema on every answer that is not 2xx (the app's own, FastAPI's 404/405/422, an
unexpected 500), deadlines (504), /metrics scraped and parsed with prometheus_client's parser, and
hypothesis fuzzing both POST endpoints on the tiny model: never a 500, always the schema."""

from __future__ import annotations

import json
import math
import time

import pytest
from fake_openai import FakeOpenAIServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families
from serve.serving import http, prefers_paris, running_app

from j1 import load_judge
from j1.serve.app import ERROR_CODES

PAIR = {"prompt": "Capital of France?", "response_a": "Lyon.", "response_b": "Paris."}


def assert_error(resp, status: int, code: str) -> dict:
    """The answer is ``{"error": {"code", "message", "status"}}`` with this status and code."""
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "status"}, body
    assert body["error"]["code"] == code and body["error"]["status"] == status
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert code in ERROR_CODES[status]
    return body["error"]


@pytest.fixture(scope="module")
def served():
    """j1 serve (pav, greedy) over the scripted upstream, with two test-only routes: one that needs a
    typed query parameter (FastAPI's own validation, answered 400) and one that fails (500)."""
    with FakeOpenAIServer(prefers_paris) as upstream, load_judge(base_url=upstream.base_url) as judge, \
            running_app(judge) as (url, app):

        @app.get("/typed")
        async def typed(n: int) -> dict:
            return {"n": n}

        @app.get("/boom")
        async def boom() -> dict:
            raise RuntimeError("a bug")

        yield url, upstream


@pytest.mark.parametrize("method, path, status, code, message", [
    ("GET", "/nope", 404, "not_found", "no endpoint /nope"),
    ("POST", "/v1/judg", 404, "not_found", "no endpoint /v1/judg"),
    ("GET", "/get_reward", 405, "method_not_allowed", "GET is not allowed on /get_reward"),
    ("DELETE", "/v1/judge", 405, "method_not_allowed", "DELETE is not allowed on /v1/judge"),
    ("POST", "/health", 405, "method_not_allowed", "POST is not allowed on /health"),
    ("GET", "/typed?n=x", 400, "validation_error", "query.n"),  # FastAPI's own 422, in the one schema as a 400
    ("GET", "/boom", 500, "internal_error", "RuntimeError"),
])
def test_framework_answers_use_the_error_schema(served, method, path, status, code, message):
    url, _ = served
    with http().Client() as client:
        resp = client.request(method, url + path)
    assert message in assert_error(resp, status, code)["message"]
    if status == 405:
        assert "allow" in resp.headers  # kept from the framework's answer


def test_the_error_answers_of_the_app_use_the_schema(served):
    url, _ = served
    with http().Client() as client:
        assert_error(client.post(url + "/v1/judge", content=b"{"), 400, "invalid_json")
        assert_error(client.post(url + "/v1/judge", json={**PAIR, "temprature": 0}), 400, "unknown_field")
        assert_error(client.post(url + "/v1/judge", json={**PAIR, "samples": 2}), 400, "greedy_judge")
        assert client.get(url + "/typed?n=3").json() == {"n": 3}


def test_the_key_size_and_queue_errors_use_the_schema():
    with FakeOpenAIServer(prefers_paris, latency=1.0) as upstream, load_judge(base_url=upstream.base_url) as judge, \
            running_app(judge, api_key="k", max_body_bytes=200, max_batch=1, max_queue=1, batch_wait_s=0,
                        upstream_batches=1) as (url, _):
        with http().Client(timeout=30) as client:
            assert_error(client.post(url + "/v1/judge", json=PAIR), 401, "unauthorized")
            auth = {"Authorization": "Bearer k"}
            assert_error(client.post(url + "/v1/judge", json={**PAIR, "prompt": "x" * 300}, headers=auth), 413,
                         "body_too_large")
            # one request in the judge, one waiting: a third is refused
            import threading

            flights = [threading.Thread(target=lambda: http().post(url + "/v1/judge", json=PAIR, headers=auth,
                                                                   timeout=30)) for _ in range(2)]
            flights[0].start()
            while upstream.in_flight == 0:
                time.sleep(0.01)
            flights[1].start()
            while client.get(url + "/health").json()["queued"] == 0:
                time.sleep(0.01)
            assert_error(client.post(url + "/v1/judge", json=PAIR, headers=auth), 503, "queue_full")
            for f in flights:
                f.join(30)


def test_a_failing_upstream_answers_502_with_the_schema():
    with FakeOpenAIServer(prefers_paris, fail_first=100, fail_status=400) as upstream, \
            load_judge("scripted-judge", base_url=upstream.base_url, max_retries=0) as judge, \
            running_app(judge) as (url, _):
        assert_error(http().post(url + "/v1/judge", json=PAIR, timeout=30), 502, "upstream_error")


def test_a_request_over_its_deadline_answers_504_and_its_judgment_is_dropped():
    with FakeOpenAIServer(prefers_paris, latency=2.0) as upstream, load_judge(base_url=upstream.base_url) as judge, \
            running_app(judge, request_timeout_s=0.3) as (url, app):
        started = time.monotonic()
        resp = http().post(url + "/v1/judge", json=PAIR, timeout=30)
        took = time.monotonic() - started
        error = assert_error(resp, 504, "timeout")
        assert "0.3 s (--request_timeout)" in error["message"] and took < 1.5
        # the request left the batcher (its answer is dropped when the upstream returns)
        deadline = time.monotonic() + 1
        while app.state.batcher.waiting:
            assert time.monotonic() < deadline, "the timed-out request is still waiting"
            time.sleep(0.01)


def _metrics(url: str) -> dict:
    text = http().get(url + "/metrics").text
    return {f.name: f for f in text_string_to_metric_families(text)}


def _value(families: dict, name: str, sample: str, **labels) -> float:
    for s in families[name].samples:
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return 0.0


def test_metrics_count_requests_judgments_batches_and_errors():
    with FakeOpenAIServer(prefers_paris) as upstream, load_judge(base_url=upstream.base_url) as judge, \
            running_app(judge, batch_wait_s=0) as (url, _):
        with http().Client(timeout=30) as client:
            assert client.post(url + "/v1/judge", json=PAIR).status_code == 200
            body = {"query": ["Q Paris.", "Q Lyon."], "prompts": ["Q ", "Q "], "labels": ["Lyon.", "Paris."]}
            assert client.post(url + "/get_reward", json=body).status_code == 200
            assert client.post(url + "/v1/judge", json={**PAIR, "temperature": 1}).status_code == 400
            assert client.get(url + "/nope").status_code == 404
            scrape = client.get(url + "/metrics")
        assert scrape.headers["content-type"].startswith("text/plain")
        m = _metrics(url)
    assert _value(m, "j1_serve_requests", "j1_serve_requests_total", route="/v1/judge", code="200") == 1
    assert _value(m, "j1_serve_requests", "j1_serve_requests_total", route="/v1/judge", code="400") == 1
    assert _value(m, "j1_serve_requests", "j1_serve_requests_total", route="/get_reward", code="200") == 1
    assert _value(m, "j1_serve_requests", "j1_serve_requests_total", route="other", code="404") == 1
    assert _value(m, "j1_serve_requests", "j1_serve_requests_total", route="/metrics", code="200") == 1
    assert _value(m, "j1_serve_request_seconds", "j1_serve_request_seconds_count", route="/v1/judge") == 2
    # 1 pair + 2 pairs judged, in two judge calls (two requests, one after the other), each waited once
    assert _value(m, "j1_serve_judgments", "j1_serve_judgments_total") == 3
    assert _value(m, "j1_serve_batch_items", "j1_serve_batch_items_count") == 2
    assert _value(m, "j1_serve_batch_items", "j1_serve_batch_items_sum") == 3
    assert _value(m, "j1_serve_queue_wait_seconds", "j1_serve_queue_wait_seconds_count") == 2
    assert _value(m, "j1_serve_errors", "j1_serve_errors_total", code="unknown_field") == 1
    assert _value(m, "j1_serve_errors", "j1_serve_errors_total", code="not_found") == 1
    assert _value(m, "j1_serve_queued_requests", "j1_serve_queued_requests") == 0


def test_metrics_need_no_key_and_each_app_counts_apart():
    with FakeOpenAIServer(prefers_paris) as upstream, load_judge(base_url=upstream.base_url) as judge:
        with running_app(judge, api_key="k") as (url, _):
            assert http().get(url + "/metrics").status_code == 200  # a scraper, like /health, needs no key
            assert http().get(url + "/nope").status_code == 404
        with running_app(judge) as (url, _):
            m = _metrics(url)
    assert _value(m, "j1_serve_requests", "j1_serve_requests_total", code="404") == 0


# -- fuzzing on the tiny model: the context check and truncation see arbitrary unicode ------------------

_scalars = st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=20)
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)
# Unicode of every category, long enough to go over the context, and unpaired surrogates (JSON's \ud800)
_texts = st.integers(0, 9).flatmap(
    lambda k: st.text(max_size=40) if k < 5 else st.text(min_size=1500, max_size=2500) if k < 9
    else st.sampled_from(["\ud800", "a\udfffb", ""]))
_fields = st.sampled_from(["prompt", "response_a", "response_b", "samples", "temperature", "query", "prompts",
                           "labels", "", "n"])


def _perturb(draw, body: dict, keys: list[str]) -> dict:
    """One time in two the body stays well formed; else a field goes, or one of the wrong type, or one the
    endpoint does not take, comes in."""
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
        if draw(st.booleans()):
            body.pop(draw(st.sampled_from(keys)), None)
        else:
            body[draw(_fields)] = draw(_json)
    return body


@st.composite
def judge_bodies(draw):
    body = {k: draw(_texts) for k in ("prompt", "response_a", "response_b")}
    if draw(st.integers(0, 3)) == 0:
        body["samples"] = draw(st.integers(-1, 70) | _json)
    return _perturb(draw, body, list(body))


@st.composite
def reward_bodies(draw):
    n = draw(st.integers(1, 3))
    prompts = [draw(_texts) for _ in range(n)]
    body = {"query": [p + draw(_texts) for p in prompts], "prompts": prompts, "labels": [draw(_texts) for _ in range(n)]}
    return _perturb(draw, body, ["query", "prompts", "labels"])


@pytest.fixture(scope="module")
def fuzzed(tiny_model, one_torch_thread):
    """The tiny model (greedy, 2 new tokens) with a 1,000-token context and --truncate middle."""
    with load_judge(str(tiny_model), max_new_tokens=2, max_context=1000) as judge, \
            running_app(judge, truncate="middle", batch_wait_s=0) as (url, _):
        with http().Client(timeout=60) as client:
            yield url, client


def _check(resp) -> dict | None:
    assert resp.status_code < 500, resp.text
    if resp.status_code == 200:
        return resp.json()
    assert resp.status_code in (400, 413), resp.text
    body = resp.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "status"}
    assert body["error"]["code"] in ERROR_CODES[resp.status_code]
    return None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(body=st.one_of(judge_bodies(), judge_bodies(), judge_bodies(), _json), cut=st.sampled_from([False] * 9 + [True]))
def test_fuzz_v1_judge(fuzzed, body, cut):
    url, client = fuzzed
    data = json.dumps(body).encode()
    data = data[: len(data) // 2] if cut else data  # now and then, a body that ends early
    out = _check(client.post(url + "/v1/judge", content=data, headers={"Content-Type": "application/json"}))
    if out is not None:
        assert out["verdict"] in ("A", "B", "tie", "invalid", "inconsistent")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(body=st.one_of(reward_bodies(), reward_bodies(), reward_bodies(), _json))
def test_fuzz_get_reward(fuzzed, body):
    url, client = fuzzed
    out = _check(client.post(url + "/get_reward", content=json.dumps(body).encode(),
                             headers={"Content-Type": "application/json"}))
    if out is not None:
        n = len(body["query"])
        assert len(out["rewards"]) == n and all(math.isfinite(r) for r in out["rewards"])
        assert out["extra_logs"]["n"] == n and all(isinstance(v, (int, float)) for v in out["extra_logs"].values())
        assert all(e["code"] == "context_length_exceeded" for e in out["errors"])
