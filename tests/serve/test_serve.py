"""``j1 serve`` through real HTTP on loopback: OpenRLHF's /get_reward with hand-worked rewards,
/v1/judge against ``j1 judge --json``, the error answers, a full queue, a client that leaves, and a
SIGTERM with a request in flight. The judge is a scripted OpenAI-compatible upstream
(tests/fake_openai.py) or the tiny random model."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from urllib.parse import urlparse

import pytest
from fake_openai import FakeOpenAIServer
from serve.serving import free_port, http, prefers_paris, running_app, scores_paris

from j1 import load_judge
from j1.cli.main import main

PROMPT = "<|user|>Capital of France?<|assistant|>"  # an OpenRLHF prompt: chat markup included


def reward_body(responses: list[str], references: list[str] | None) -> dict:
    body = {"query": [PROMPT + r for r in responses], "prompts": [PROMPT] * len(responses)}
    if references is not None:
        body["labels"] = references
    return body


@pytest.fixture
def upstream():
    with FakeOpenAIServer(prefers_paris) as server:
        yield server


@pytest.fixture
def served(upstream):
    """j1 serve (pav, greedy) in a thread over the scripted upstream; yields (url, upstream)."""
    with load_judge(base_url=upstream.base_url) as judge, running_app(judge) as (url, _):
        yield url, upstream


def post(url: str, path: str, body=None, **kw):
    with http().Client(timeout=60) as client:
        return client.post(url + path, json=body, **kw) if body is not None else client.post(url + path, **kw)


# -- /get_reward: OpenRLHF's remote reward model -------------------------------------------------


def test_get_reward_pairwise_hand_worked(served):
    url, upstream = served
    resp = post(url, "/get_reward", reward_body(
        ["It is Paris.", "Lyon.", "Marseille."],
        ["Lyon.", "Paris.", "Lyon."]))
    assert resp.status_code == 200
    out = resp.json()
    # The judge prefers the shown response about Paris, and says A when neither is:
    # 1) Paris vs Lyon: AB -> A (the response), BA -> B, i.e. the response again: 2 of 2 = 1.0
    # 2) Lyon vs Paris: the reference wins in both orders: 0 of 2 = 0.0
    # 3) Marseille vs Lyon: A in both orders = the response in AB, the reference in BA: 1 of 2 = 0.5, a flip
    assert out["rewards"] == [1.0, 0.0, 0.5]
    assert out["scores"] == out["rewards"]
    assert out["extra_logs"] == {"invalid_rate": 0.0, "flip_rate": pytest.approx(1 / 3), "n": 3, "error_rate": 0.0,
                                 "truncated_rate": 0.0}
    assert out["errors"] == []
    assert len(upstream.requests) == 6  # 3 pairs x 2 orders, one batch
    # the judge saw the request as OpenRLHF sent it and the response without it
    # (requests run concurrently, so find the pair's by content rather than by arrival order)
    shown = [r["messages"][-1]["content"] for r in upstream.requests if "It is Paris." in r["messages"][-1]["content"]]
    assert len(shown) == 2 and all(PROMPT in t and PROMPT + "It is Paris." not in t for t in shown)


def test_get_reward_invalid_counts_as_not_preferred(served):
    url, _ = served
    out = post(url, "/get_reward", reward_body(["Paris.", "??? Paris"], ["Lyon.", "Lyon."])).json()
    # 2) the judge writes no verdict in either order: 0 of 2 preferred; 2 of the 4 samples invalid, no flip
    assert out["rewards"] == [1.0, 0.0]
    assert out["extra_logs"] == {"invalid_rate": 0.5, "flip_rate": 0.0, "n": 2, "error_rate": 0.0,
                                 "truncated_rate": 0.0}


def test_get_reward_samples_count_in_the_share():
    with FakeOpenAIServer(prefers_paris) as upstream, \
            load_judge(base_url=upstream.base_url, temperature=1.0, samples=3) as judge, \
            running_app(judge) as (url, _):
        out = post(url, "/get_reward", reward_body(["Marseille."], ["Lyon."])).json()
        assert [r["n"] for r in upstream.requests] == [3, 3]
    # 3 samples x 2 orders, all "A": the 3 of AB prefer the response, the 3 of BA the reference: 3/6
    assert out["rewards"] == [0.5]


def test_get_reward_pointwise_scores_over_ten():
    with FakeOpenAIServer(scores_paris) as upstream, \
            load_judge(base_url=upstream.base_url, format="pos") as judge, running_app(judge) as (url, _):
        # labels are optional for a pointwise judge
        out = post(url, "/get_reward", reward_body(["Paris.", "Lyon.", "??? no"], None)).json()
    # 8/10, 3/10, and no score: 0.0 (1 invalid sample of 3)
    assert out["rewards"] == [0.8, 0.3, 0.0]
    assert out["extra_logs"] == {"invalid_rate": pytest.approx(1 / 3), "n": 3, "error_rate": 0.0,
                                 "truncated_rate": 0.0}


# -- /v1/judge and the read-only endpoints -------------------------------------------------------


def test_v1_judge_is_j1_judge_json(served, capsys):
    url, upstream = served
    pair = {"prompt": "Capital of France?", "response_a": "Lyon.", "response_b": "Paris, of course."}
    assert main(["judge", "--base-url", upstream.base_url, "--prompt", pair["prompt"], "--response-a",
                 pair["response_a"], "--response-b", pair["response_b"], "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    resp = post(url, "/v1/judge", pair)
    assert resp.status_code == 200 and resp.json() == cli and cli["verdict"] == "B"


def test_v1_judge_pointwise_single_response_is_j1_judge_json(capsys):
    with FakeOpenAIServer(scores_paris) as upstream:
        args = ["--prompt", "Capital of France?", "--response-a", "Paris."]
        assert main(["judge", "--base-url", upstream.base_url, "--format", "pos", *args, "--json"]) == 0
        cli = json.loads(capsys.readouterr().out)
        with load_judge(base_url=upstream.base_url, format="pos") as judge, running_app(judge) as (url, _):
            got = post(url, "/v1/judge", {"prompt": "Capital of France?", "response_a": "Paris."}).json()
    assert got == cli and cli["score"] == 8.0


def test_v1_judge_on_the_tiny_model_matches_j1_judge(tiny_model, one_torch_thread, capsys):
    """The local path: the same model, inputs and seed give j1 judge's JSON (greedy, 16 tokens)."""
    pair = {"prompt": "What is 2 + 3?", "response_a": "5", "response_b": "6"}
    assert main(["judge", "--model", str(tiny_model), "--prompt", pair["prompt"], "--response-a", pair["response_a"],
                 "--response-b", pair["response_b"], "--max-new-tokens", "16", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    # j1 judge adds the probe's margin (a second pass the reward server does not make); the rest is the same
    assert isinstance(cli.pop("margin"), float) and isinstance(cli.pop("low_confidence"), bool)
    with load_judge(str(tiny_model), max_new_tokens=16) as judge, running_app(judge) as (url, _):
        got = post(url, "/v1/judge", pair).json()
        rewards = post(url, "/get_reward", {"query": ["Q: 5", "Q: 6"], "prompts": ["Q: ", "Q: "],
                                            "labels": ["6", "5"]}).json()
    assert got == cli
    assert len(rewards["rewards"]) == 2 and all(0.0 <= r <= 1.0 for r in rewards["rewards"])
    assert rewards["extra_logs"]["n"] == 2


def test_health_and_models(served):
    url, upstream = served
    with http().Client() as client:
        health = client.get(url + "/health").json()
        assert set(health.pop("batches")) == {"batches", "requests", "items", "largest", "wait_s", "run_s"}
        # an HTTP upstream counts no tokens here: the context is unchecked (the upstream checks its own)
        assert health.pop("limits") == {"max_context": None, "context_from": "unknown (no local tokenizer)",
                                        "max_new_tokens": 512, "truncate": "error", "request_timeout_s": 300.0,
                                        "error_reward": 0.0, "max_samples": 64}
        assert health == {"status": "ok", "judge": "scripted-judge", "queued": 0, "running": 0}
        (model,) = client.get(url + "/v1/models").json()["data"]
    assert model["id"] == "scripted-judge" and model["judge"]["format"] == "pav"
    assert model["judge"]["base_url"] == upstream.base_url and model["judge"]["manifest"] is None


# -- error answers -------------------------------------------------------------------------------


@pytest.mark.parametrize("path, body, code, message", [
    ("/get_reward", b"{not json", "invalid_json", "the body is not valid JSON"),
    ("/get_reward", b"[1]", "invalid_request", "the body must be a JSON object"),
    ("/get_reward", b'{"prompts": ["Q"]}', "invalid_request", "missing field 'query'"),
    ("/get_reward", b'{"query": ["Q a"], "prompts": ["Q "], "labels": null, "k": 1}', "unknown_field",
     "unknown field 'k'"),
    ("/get_reward", b'{"query": ["a"], "prompts": ["Q "], "labels": ["b"]}', "invalid_request",
     "query 0: the query does not start"),
    ("/get_reward", b'{"query": ["Q a"], "prompts": ["Q "], "labels": ["b"], "lables": ["b"]}', "unknown_field",
     "unknown field 'lables': /get_reward takes query, prompts, labels"),
    ("/v1/judge", b'{"prompt": "Q", "response_a": "a"}', "invalid_request", "missing field 'response_b'"),
    ("/v1/judge", b'{"prompt": "Q", "response_a": 1, "response_b": "b"}', "invalid_request",
     "'response_a' must be a string"),
    # the case: a sampling setting sent to a greedy judge was silently ignored (a 200)
    ("/v1/judge", b'{"prompt": "Q", "response_a": "a", "response_b": "b", "temperature": 1.0}', "unknown_field",
     "unknown field 'temperature'"),
    ("/v1/judge", b'{"prompt": "Q", "respnse_a": "a", "response_b": "b"}', "unknown_field",
     "unknown field 'respnse_a'"),
    # a greedy judge cannot give 3 different samples
    ("/v1/judge", b'{"prompt": "Q", "response_a": "a", "response_b": "b", "samples": 3}', "greedy_judge",
     "field 'samples': 3 samples from a greedy judge (temperature 0) would be 3 copies of one answer"),
])
def test_bad_requests_answer_400_with_the_reason(served, path, body, code, message):
    url, upstream = served
    resp = post(url, path, content=body, headers={"Content-Type": "application/json"})
    assert resp.status_code == 400
    assert resp.json() == {"error": {"code": code, "message": resp.json()["error"]["message"], "status": 400}}
    assert message in resp.json()["error"]["message"]
    assert upstream.requests == []  # nothing reached the judge


def test_a_wrong_or_missing_key_answers_401(upstream):
    body = reward_body(["Paris."], ["Lyon."])
    with load_judge(base_url=upstream.base_url) as judge, running_app(judge, api_key="s3cret") as (url, _):
        assert post(url, "/get_reward", body).status_code == 401
        wrong = post(url, "/get_reward", body, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
        assert "Authorization: Bearer KEY" in wrong.json()["error"]["message"]
        assert post(url, "/v1/judge", {}, headers={"Authorization": "Basic s3cret"}).status_code == 401
        with http().Client() as client:
            assert client.get(url + "/v1/models").status_code == 401
            assert client.get(url + "/health").status_code == 200  # liveness probes need no key
        good = post(url, "/get_reward", body, headers={"Authorization": "Bearer s3cret"})
        assert good.status_code == 200 and good.json()["rewards"] == [1.0]


def test_a_body_over_the_limit_answers_413(upstream):
    big = reward_body(["Paris. " * 100], ["Lyon."])
    with load_judge(base_url=upstream.base_url) as judge, running_app(judge, max_body_bytes=300) as (url, _):
        declared = post(url, "/get_reward", big)
        assert declared.status_code == 413 and "limit is 300" in declared.json()["error"]["message"]
        # chunked, without a Content-Length: counted as it arrives
        data = json.dumps(big).encode()
        chunked = post(url, "/get_reward", content=iter([data[:200], data[200:]]))
        assert chunked.status_code == 413 and "over 300 bytes" in chunked.json()["error"]["message"]
        assert post(url, "/get_reward", reward_body(["Paris."], ["Lyon."])).status_code == 200
    assert len(upstream.requests) == 2  # only the small request was judged


def test_a_failing_upstream_answers_502():
    with FakeOpenAIServer(prefers_paris, fail_first=100, fail_status=400) as upstream, \
            load_judge("scripted-judge", base_url=upstream.base_url, max_retries=0) as judge, \
            running_app(judge) as (url, _):
        resp = post(url, "/get_reward", reward_body(["Paris."], ["Lyon."]))
    assert resp.status_code == 502 and "HTTP 400" in resp.json()["error"]["message"]


def _in_thread(fn, *args):
    out: dict = {}
    thread = threading.Thread(target=lambda: out.setdefault("r", fn(*args)), daemon=True)
    thread.start()
    return thread, out


def _wait(cond, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def _health(url: str) -> dict:
    with http().Client() as client:
        return client.get(url + "/health").json()


def test_a_full_queue_answers_503():
    with FakeOpenAIServer(prefers_paris, latency=1.0) as upstream, \
            load_judge(base_url=upstream.base_url) as judge, \
            running_app(judge, max_batch=1, max_queue=1, batch_wait_s=0, upstream_batches=1) as (url, _):
        first, r1 = _in_thread(post, url, "/get_reward", reward_body(["Paris."], ["Lyon."]))
        _wait(lambda: upstream.in_flight > 0)  # the first is in the judge
        second, r2 = _in_thread(post, url, "/get_reward", reward_body(["Lyon."], ["Paris."]))
        _wait(lambda: _health(url)["queued"] == 1)  # the second waits: the queue is full
        third = post(url, "/get_reward", reward_body(["Marseille."], ["Lyon."]))
        assert third.status_code == 503 and third.headers["retry-after"] == "1"
        assert "--max-queue" in third.json()["error"]["message"]
        first.join(30)
        second.join(30)
    assert r1["r"].json()["rewards"] == [1.0] and r2["r"].json()["rewards"] == [0.0]


def _send_and_leave_later(url: str, path: str, body: dict) -> socket.socket:
    """Send a request on a raw socket and return it unread; closing it is a client that left."""
    where = urlparse(url)
    data = json.dumps(body).encode()
    sock = socket.create_connection((where.hostname, where.port))
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    return sock


def test_a_client_leaving_mid_batch_harms_no_one():
    with FakeOpenAIServer(prefers_paris, latency=1.0) as upstream, \
            load_judge(base_url=upstream.base_url) as judge, \
            running_app(judge, max_batch=8, batch_wait_s=0.3) as (url, _):
        leaver = _send_and_leave_later(url, "/get_reward", reward_body(["LEAVER Paris."], ["Lyon."]))
        stayer, out = _in_thread(post, url, "/get_reward", reward_body(["STAYER Lyon."], ["Paris."]))
        _wait(lambda: len(upstream.requests) == 4)  # both pairs, both orders: one batch in the judge
        leaver.close()
        stayer.join(30)
        assert out["r"].status_code == 200 and out["r"].json()["rewards"] == [0.0]
        # the server goes on as before
        assert post(url, "/get_reward", reward_body(["Paris."], ["Lyon."])).json()["rewards"] == [1.0]
        assert _health(url)["queued"] == 0


def test_a_client_leaving_while_queued_is_never_judged():
    with FakeOpenAIServer(prefers_paris, latency=1.0) as upstream, \
            load_judge(base_url=upstream.base_url) as judge, \
            running_app(judge, max_batch=1, batch_wait_s=0, upstream_batches=1) as (url, _):
        first, r1 = _in_thread(post, url, "/get_reward", reward_body(["FIRST Paris."], ["Lyon."]))
        _wait(lambda: upstream.in_flight > 0)
        leaver = _send_and_leave_later(url, "/get_reward", reward_body(["LEAVER Paris."], ["Lyon."]))
        _wait(lambda: _health(url)["queued"] == 1)
        leaver.close()
        third, r3 = _in_thread(post, url, "/get_reward", reward_body(["THIRD Lyon."], ["Paris."]))
        first.join(30)
        third.join(30)
    assert r1["r"].json()["rewards"] == [1.0] and r3["r"].json()["rewards"] == [0.0]
    judged = " ".join(m["content"] for r in upstream.requests for m in r["messages"])
    assert "FIRST" in judged and "THIRD" in judged and "LEAVER" not in judged


# -- the command -----------------------------------------------------------------------------------


def test_sigterm_answers_the_request_in_flight_and_refuses_new_ones():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with FakeOpenAIServer(prefers_paris, latency=2.0) as upstream:
        proc = subprocess.Popen(
            [sys.executable, "-m", "j1.cli.main", "serve", "--base-url", upstream.base_url, "--model", "scripted-judge",
             "--port", str(port), "--batch_wait_ms", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, "NO_COLOR": "1"})
        try:
            deadline = time.monotonic() + 120
            while True:
                assert proc.poll() is None, proc.stderr.read()
                try:
                    if _health(url)["status"] == "ok":
                        break
                except http().TransportError:
                    assert time.monotonic() < deadline, "j1 serve did not start"
                    time.sleep(0.2)
            flight, out = _in_thread(post, url, "/get_reward", reward_body(["Paris."], ["Lyon."]))
            _wait(lambda: upstream.in_flight > 0)
            proc.send_signal(signal.SIGTERM)
            # New connections are refused (an error the client sees, not a silent loss) while the
            # request in flight is still being judged.
            deadline = time.monotonic() + 1.5
            while True:
                try:
                    _health(url)
                except http().ConnectError:
                    break
                assert time.monotonic() < deadline, "still accepting connections after SIGTERM"
                time.sleep(0.05)
            assert flight.is_alive()
            flight.join(30)
            assert out["r"].status_code == 200 and out["r"].json()["rewards"] == [1.0]
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
            stderr = proc.stderr.read()
            proc.stderr.close()
    assert "Shutting down" in stderr and "Traceback" not in stderr


@pytest.mark.parametrize("args, env, message", [
    (["--api-key-env", "J1_TEST_UNSET_KEY"], {}, "--api_key_env J1_TEST_UNSET_KEY: that variable is unset"),
    (["--model", "/nonexistent/judge"], {}, "model folder /nonexistent/judge not found"),
])
def test_bad_input_is_one_line_and_exit_2(args, env, message, capsys, monkeypatch):
    monkeypatch.delenv("J1_TEST_UNSET_KEY", raising=False)
    assert main(["serve", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("j1 serve: error: ") and message in err[-1]
    assert not any("Traceback" in line for line in err)


@pytest.mark.parametrize("args, message", [
    (["--port", "70000"], "--port 70000: must be in 0..65535"),
    (["--max_queue", "0"], "--max_queue 0: must be >= 1"),
    (["--format", "xyz"], "--format 'xyz' is not a judge format"),
    (["--truncate", "right"], "--truncate 'right': choose one of error, left, middle"),
    (["--max_context", "100"], "--max_context 100: must be over --max_new_tokens 512"),
    (["--request_timeout", "0"], "--request_timeout 0.0: must be > 0 seconds"),
    (["--shutdown_timeout", "-1"], "--shutdown_timeout -1.0: must be > 0 seconds"),
    (["--error_reward", "nan"], "--error_reward nan: must be a finite number"),
])
def test_bad_flags_exit_2(args, message, capsys):
    with pytest.raises(SystemExit) as done:
        main(["serve", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", *args])
    assert done.value.code == 2 and message in capsys.readouterr().err
