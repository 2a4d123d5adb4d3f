"""``j1.serve.protocol``: request checks, prompt-prefix stripping and the reward arithmetic, as tables."""

from __future__ import annotations

import pickle

import pytest

from j1.judge import Judgment, OrderResult, Sample
from j1.serve.protocol import (
    JudgeRequest,
    RequestError,
    Rewards,
    pairwise_reward,
    pairwise_rewards,
    parse_json,
    parse_judge_request,
    parse_reward_request,
    pointwise_reward,
    pointwise_rewards,
    strip_prompt,
)


@pytest.mark.parametrize("query, prompt, response", [
    ("Q? A", "Q? ", "A"),
    ("Q?", "Q?", ""),                          # an empty response
    ("A", "", "A"),                            # an empty prompt
    ("<|user|>é?<|assistant|>ünï", "<|user|>é?<|assistant|>", "ünï"),  # unicode and chat markup
    ("Q? Q? A", "Q? ", "Q? A"),                # only the prefix goes, not later repeats
    ("Q?\n\nA\n", "Q?\n", "\nA\n"),            # whitespace kept as the policy wrote it
])
def test_strip_prompt(query, prompt, response):
    assert strip_prompt(query, prompt) == response


@pytest.mark.parametrize("query, prompt", [
    ("A", "Q? "),          # the prompt is missing
    ("q? A", "Q? "),       # case differs
    ("Q?A", "Q? "),        # a space differs
    ("", "Q?"),            # an empty query
    ("Q", "Q? "),          # the query is a strict prefix of the prompt
])
def test_strip_prompt_refuses_a_query_without_its_prompt(query, prompt):
    with pytest.raises(RequestError, match="does not start with its prompt"):
        strip_prompt(query, prompt)


@pytest.mark.parametrize("verdicts, reward", [
    (["A", "A"], 1.0),                        # preferred in both orders
    (["B", "B"], 0.0),                        # the reference preferred in both
    (["A", "B"], 0.5),                        # position bias: one order each
    (["A", "invalid"], 0.5),                  # invalid is not a preference
    (["invalid", "invalid"], 0.0),
    (["tie", "tie"], 0.0),                    # nor is a tie
    (["A", "A", "A", "B", "invalid", "tie"], 0.5),  # 3 samples per order: 3 of 6 prefer the response
    (["A"], 1.0),
])
def test_pairwise_reward(verdicts, reward):
    assert pairwise_reward(verdicts) == reward


def test_pairwise_reward_of_nothing_raises():
    with pytest.raises(ValueError, match="no judge samples"):
        pairwise_reward([])


@pytest.mark.parametrize("score, reward", [(10.0, 1.0), (0.0, 0.0), (7.5, 0.75), (None, 0.0)])
def test_pointwise_reward(score, reward):
    assert pointwise_reward(score) == reward


def _sample(verdict: str) -> Sample:
    return Sample(verdict, None, None, "", None if verdict != "invalid" else "no verdict")


def _judgment(ab: list[str], ba: list[str]) -> Judgment:
    """A pair judged with the response as A; per-order verdict = the samples' majority (as j1.judge)."""
    from j1.judge import majority

    orders = [OrderResult(o, majority(vs).value, [_sample(v) for v in vs]) for o, vs in (("AB", ab), ("BA", ba))]
    return Judgment("pav", "A", orders, None)


def test_pairwise_rewards_and_logs():
    judgments = [
        _judgment(["A"], ["A"]),              # 1.0, consistent
        _judgment(["A"], ["B"]),              # 0.5, flipped
        _judgment(["invalid"], ["B"]),        # 0.0, one invalid sample, not a flip
        _judgment(["A", "A"], ["A", "B"]),    # 3 of 4 = 0.75; BA's majority is a tie: a flip (A vs tie)
    ]
    got = pairwise_rewards(judgments)
    assert got.rewards == [1.0, 0.5, 0.0, 0.75]
    # 1 invalid of 1+1+1+1+1+1+2+2 = 10 samples; flips: items 2 and 4 of 4.
    assert got.logs == {"invalid_rate": 0.1, "flip_rate": 0.5, "n": 4}


def test_pointwise_rewards_and_logs():
    results = [
        {"score": 8.0, "samples": [Sample("A", {"A": 8.0}, None, "")]},
        {"score": None, "samples": [_sample("invalid"), _sample("invalid")]},
        {"score": 4.0, "samples": [Sample("A", {"A": 4.0}, None, ""), _sample("invalid")]},
    ]
    got = pointwise_rewards(results)
    assert got.rewards == [0.8, 0.0, 0.4]
    assert got.logs == {"invalid_rate": 3 / 5, "n": 3}  # 3 invalid of 5 samples


@pytest.mark.parametrize("fn", [pairwise_rewards, pointwise_rewards])
def test_rewards_of_nothing_raise(fn):
    with pytest.raises(ValueError, match="no judgments"):
        fn([])


def test_rewards_json_is_openrlhfs_answer_and_pickles():
    r = Rewards([1.0, 0.5], {"invalid_rate": 0.0, "n": 2})
    assert r.to_json() == {"rewards": [1.0, 0.5], "scores": [1.0, 0.5], "extra_logs": {"invalid_rate": 0.0, "n": 2}}
    assert pickle.loads(pickle.dumps(r)) == r


def test_parse_reward_request_strips_prompts():
    got = parse_reward_request({"query": ["P1 a", "P2 b"], "prompts": ["P1 ", "P2 "], "labels": ["x", "y"],
                                "extra": 1}, pairwise=True)
    assert (got.prompts, got.responses, got.references) == (["P1 ", "P2 "], ["a", "b"], ["x", "y"])
    pointwise = parse_reward_request({"query": ["P1 a"], "prompts": ["P1 "]}, pairwise=False)
    assert pointwise.references is None


@pytest.mark.parametrize("body, pairwise, message", [
    ([], True, "must be a JSON object, got an array"),
    ("x", True, "must be a JSON object, got a string"),
    ({}, True, "missing field 'query'"),
    ({"query": "a", "prompts": ["a"]}, True, "field 'query' must be a list of strings, got a string"),
    ({"query": ["a", 3], "prompts": ["a", "b"]}, True, r"field 'query'\[1\] must be a string, got a number"),
    ({"query": ["a"]}, True, "missing field 'prompts'"),
    ({"query": ["a"], "prompts": [None]}, True, r"'prompts'\[0\] must be a string, got null"),
    ({"query": ["a", "b"], "prompts": ["a"]}, True, "'query' has 2 items and 'prompts' 1"),
    ({"query": [], "prompts": []}, True, "'query' is empty"),
    ({"query": ["Q a", "x"], "prompts": ["Q ", "Q "]}, True, "query 1: the query does not start with its prompt"),
    ({"query": ["Q a"], "prompts": ["Q "]}, True, "missing field 'labels'"),
    ({"query": ["Q a"], "prompts": ["Q "], "labels": ["x", "y"]}, True, "'labels' has 2 items and 'query' 1"),
    ({"query": ["Q a"], "prompts": ["Q "], "labels": [True]}, True, r"'labels'\[0\] must be a string, got a boolean"),
    ({"query": ["Q a"], "prompts": ["Q "], "labels": [{}]}, False, None),  # pointwise ignores labels
])
def test_parse_reward_request_errors(body, pairwise, message):
    if message is None:
        parse_reward_request(body, pairwise=pairwise)
        return
    with pytest.raises(RequestError, match=message):
        parse_reward_request(body, pairwise=pairwise)


@pytest.mark.parametrize("body, pairwise, expected", [
    ({"prompt": "Q", "response_a": "a", "response_b": "b"}, True, JudgeRequest("Q", "a", "b", None)),
    ({"prompt": "Q", "response_a": "a", "samples": 3}, False, JudgeRequest("Q", "a", None, 3)),
    ({"prompt": "Q", "response_a": "a", "response_b": "b"}, False, JudgeRequest("Q", "a", "b", None)),
    ({"prompt": "", "response_a": "", "response_b": "", "other": []}, True, JudgeRequest("", "", "", None)),
])
def test_parse_judge_request(body, pairwise, expected):
    assert parse_judge_request(body, pairwise=pairwise) == expected


@pytest.mark.parametrize("body, pairwise, message", [
    ([1], True, "must be a JSON object"),
    ({"response_a": "a", "response_b": "b"}, True, "missing field 'prompt'"),
    ({"prompt": "Q", "response_b": "b"}, True, "missing field 'response_a'"),
    ({"prompt": "Q", "response_a": "a"}, True, "missing field 'response_b': this judge compares two"),
    ({"prompt": 1, "response_a": "a", "response_b": "b"}, True, "field 'prompt' must be a string, got a number"),
    ({"prompt": "Q", "response_a": "a", "response_b": ["b"]}, True, "'response_b' must be a string, got an array"),
    ({"prompt": "Q", "response_a": "a", "samples": 0}, False, "'samples' must be an integer >= 1, got 0"),
    ({"prompt": "Q", "response_a": "a", "samples": 1.5}, False, "'samples' must be an integer >= 1, got 1.5"),
    ({"prompt": "Q", "response_a": "a", "samples": True}, False, "'samples' must be an integer >= 1, got True"),
    ({"prompt": "Q", "response_a": "a", "samples": "2"}, False, "'samples' must be an integer >= 1, got '2'"),
])
def test_parse_judge_request_errors(body, pairwise, message):
    with pytest.raises(RequestError, match=message):
        parse_judge_request(body, pairwise=pairwise)


@pytest.mark.parametrize("body, value", [(b'{"a": [1, "\xc3\xa9"]}', {"a": [1, "é"]}), (b"[]", []), (b"null", None)])
def test_parse_json(body, value):
    assert parse_json(body) == value


@pytest.mark.parametrize("body", [b"", b"{", b"\xff\xfe", b"{'a': 1}", b"NaN x"])
def test_parse_json_errors(body):
    with pytest.raises(RequestError, match="not valid JSON"):
        parse_json(body)
