"""The context limit on the shipped judge (j1-135m: SmolLM2-135M's 8,192 tokens, 8 new tokens): the
issue's 30,000-token prompt is refused at once with no model work, one such item in a /get_reward
batch costs only itself, ``--truncate`` judges shortened responses, and the tokens counted are the
tokens the model reads."""

from __future__ import annotations

import time

import pytest
from serve.serving import http, running_app

from j1 import load_judge
from j1.serve.tasks import Task, judge_prompts

PROMPT = "What is 2 + 3?"
HUGE = "hello " * 30_000  # 30,000 tokens: "hello " is one token in SmolLM2's tokenizer


@pytest.fixture(scope="module")
def judge(one_torch_thread):
    with load_judge("j1-135m") as judge:
        yield judge


def _rss() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmRSS:"))


def test_the_issue_prompt_is_refused_at_once_naming_both_numbers(judge):
    with running_app(judge) as (url, app):
        assert app.state.limit.context == 8192 and app.state.limit.source == "the model's config"
        with http().Client(timeout=60) as client:
            before_rss, before_calls = _rss(), judge.backend.usage.requests
            for _ in range(3):
                started = time.monotonic()
                resp = client.post(url + "/v1/judge", json={"prompt": PROMPT, "response_a": HUGE, "response_b": "5"})
                took = time.monotonic() - started
                assert resp.status_code == 413 and took < 1.0, took
            grew = _rss() - before_rss
    error = resp.json()["error"]
    assert error["code"] == "context_length_exceeded"
    # the rendered prompt (30,000 tokens of response, the digest template and the prefill) and 8 new tokens
    tokens = judge.backend.count_tokens(judge_prompts(judge, Task(PROMPT, HUGE, "5"))[0])
    assert 30_000 < tokens < 30_300
    assert error["message"].startswith(f"the judge prompt has {tokens} tokens and the judge writes up to 8: "
                                       f"{tokens + 8} > the context of 8192 tokens")
    assert judge.backend.usage.requests == before_calls  # no model work at all
    assert grew < 64 * 2**20, grew


def test_one_item_too_long_costs_only_itself_in_a_reward_batch(judge):
    q = "Q: " + PROMPT + " A: "
    body = {"query": [q + "5", q + HUGE, q + "6"], "prompts": [q] * 3, "labels": ["6", "5", "5"]}
    with running_app(judge) as (url, _):
        with http().Client(timeout=120) as client:
            out = client.post(url + "/get_reward", json=body).json()
            alone = client.post(url + "/get_reward", json={k: [v[0], v[2]] for k, v in body.items()}).json()
    with running_app(judge, error_reward=-1.0) as (url, _):
        negative = http().post(url + "/get_reward", json=body, timeout=120).json()
    # the other items get the rewards they get without the long one beside them
    assert [out["rewards"][0], out["rewards"][2]] == alone["rewards"]
    assert out["rewards"][1] == 0.0 and negative["rewards"][1] == -1.0
    assert out["scores"] == out["rewards"]
    (error,) = out["errors"]
    assert error["index"] == 1 and error["code"] == "context_length_exceeded"
    assert error["message"].startswith("item 1: the judge prompt has ")
    assert out["extra_logs"]["n"] == 3 and out["extra_logs"]["error_rate"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("truncate", ["left", "middle"])
def test_truncation_judges_shortened_responses_within_the_context(judge, truncate, monkeypatch):
    # a 640-token context keeps the model's work small on a CPU; --max_context reaches serve through the
    # backend alone (j1 serve builds the judge with it: ServeSpec.judge_settings)
    monkeypatch.setattr(judge.backend, "max_context", 640)
    response = "The answer is 5. " + "Let me check once more. " * 300 + "So 2 + 3 = 5."
    pair = {"prompt": PROMPT, "response_a": response, "response_b": "6"}
    with running_app(judge, truncate=truncate) as (url, _):
        with http().Client(timeout=120) as client:
            limits = client.get(url + "/v1/models").json()["data"][0]["limits"]
            assert client.get(url + "/health").json()["limits"] == limits
            before = judge.backend.usage.prompt_tokens
            resp = client.post(url + "/v1/judge", json=pair)
            read = judge.backend.usage.prompt_tokens - before
    assert limits["truncate"] == truncate and limits["max_context"] == 640 and limits["context_from"] == "--max_context"
    assert resp.status_code == 200 and resp.json()["truncated"] is True
    assert resp.json()["verdict"] in ("A", "B", "tie", "invalid", "inconsistent")
    assert 2 * 600 < read <= 2 * (640 - 8)  # both orders filled close to the budget, never over it


def test_the_tokens_counted_are_the_tokens_the_model_reads(judge):
    task = Task(PROMPT, "2 + 3 = 5. ü漢🙂", "It is 6.")
    counted = sum(judge.backend.count_tokens(m) for m in judge_prompts(judge, task))
    with running_app(judge) as (url, _):
        before = judge.backend.usage.prompt_tokens
        resp = http().post(url + "/v1/judge", json={"prompt": task.prompt, "response_a": task.response_a,
                                                     "response_b": task.response_b}, timeout=120)
    assert resp.status_code == 200 and "truncated" not in resp.json()
    assert judge.backend.usage.prompt_tokens - before == counted


def test_a_max_new_tokens_that_fills_the_context_is_refused_at_start(judge, monkeypatch):
    from j1.serve.app import ServerSettings, create_app

    monkeypatch.setattr(judge.backend, "max_context", 8)
    with pytest.raises(ValueError, match="max_new_tokens 8 leaves no room for a prompt in the context of 8 tokens"):
        create_app(judge, ServerSettings())


def test_a_max_context_over_the_models_positions_is_warned_about(judge, monkeypatch, caplog):
    """``j1 serve --max_context 100000`` on the 8,192-position model: the flag goes to the backend (one path),
    the limit is the flag's, and the server says it is over the model's positions."""
    import logging

    from j1.serve.app import ServerSettings, context_limit
    from j1.serve.spec import ServeSpec

    assert ServeSpec(max_context=100_000).judge_settings().backend_kwargs()["max_context"] == 100_000
    monkeypatch.setattr(judge.backend, "max_context", 100_000)
    assert judge.backend.context_window() == 100_000 and judge.backend.model_context() == 8192
    with caplog.at_level(logging.WARNING, logger="j1.serve.app"):
        limit = context_limit(judge, ServerSettings())
    assert (limit.context, limit.source) == (100_000, "--max_context")
    assert "--max_context 100000 is over the model's 8192 positions" in caplog.text


def test_a_prompt_too_long_by_itself_is_told_so_not_to_truncate(judge):
    """--truncate shortens responses only: a 413 for a request whose prompt alone overflows says so, and the
    one for long responses keeps the --truncate advice."""
    with running_app(judge) as (url, _):
        with http().Client(timeout=60) as client:
            long_prompt = client.post(url + "/v1/judge", json={"prompt": HUGE, "response_a": "4", "response_b": "5"})
            long_answer = client.post(url + "/v1/judge", json={"prompt": PROMPT, "response_a": HUGE, "response_b": "5"})
    message = long_prompt.json()["error"]["message"]
    assert long_prompt.status_code == 413 and "the request's prompt alone takes" in message
    assert "shorten the prompt" in message and "--truncate" not in message
    assert "--truncate left|middle" in long_answer.json()["error"]["message"]
