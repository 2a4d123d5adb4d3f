"""``j1.serve.protocol``: request checks, prompt-prefix stripping and the reward arithmetic, as tables."""

from __future__ import annotations

import pickle

import pytest

from j1.judging.judge import Judgment, OrderResult, Sample
from j1.serve.protocol import (
    ItemError,
    RequestError,
    Rewards,
    Task,
    pairwise_reward,
    pairwise_rewards,
    parse_json,
    parse_judge_request,
    parse_reward_request,
    pointwise_reward,
    pointwise_rewards,
    reward_answer,
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
    """A pair judged with the response as A; per-order verdict = the samples' majority (as j1.judging.judge)."""
    from j1.judging.judge import majority

    orders = [OrderResult(o, majority(vs).value, [_sample(v) for v in vs]) for o, vs in (("AB", ab), ("BA", ba))]
    return Judgment("pav", "A", orders, None)


def test_pairwise_rewards_and_logs():
    judgments = [
        _judgment(["A"], ["A"]),              # 1.0, consistent
        _judgment(["A"], ["B"]),              # 0.5, flipped
        _judgment(["invalid"], ["B"]),        # 0.0, one invalid sample: not counted for flips
        _judgment(["A", "A"], ["A", "B"]),    # 3 of 4 = 0.75; BA's majority is a tie: a flip (A vs tie)
    ]
    got = pairwise_rewards(judgments)
    assert got.rewards == [1.0, 0.5, 0.0, 0.75]
    # 1 invalid of 1+1+1+1+1+1+2+2 = 10 samples; flips: items 2 and 4 of the 3 valid in both orders.
    assert got.logs == {"invalid_rate": 0.1, "flip_rate": pytest.approx(2 / 3), "n": 4}


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
    got = parse_reward_request({"query": ["P1 a", "P2 b"], "prompts": ["P1 ", "P2 "], "labels": ["x", "y"]},
                               pairwise=True)
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
    ({"query": ["Q a"], "prompts": ["Q "]}, True, None),  # no labels: the group reward (win rate)
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
    ({"prompt": "Q", "response_a": "a", "response_b": "b"}, True, Task("Q", "a", "b", None)),
    ({"prompt": "Q", "response_a": "a", "samples": 3}, False, Task("Q", "a", None, 3)),
    ({"prompt": "Q", "response_a": "a", "response_b": "b"}, False, Task("Q", "a", "b", None)),
    ({"prompt": "", "response_a": "", "response_b": ""}, True, Task("", "", "", None)),
    ({"prompt": "Q", "response_a": "a", "samples": 64}, False, Task("Q", "a", None, 64)),  # the most
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
    ({"prompt": "Q", "response_a": "a", "samples": 0}, False, "'samples' must be an integer from 1 to 64, got 0"),
    ({"prompt": "Q", "response_a": "a", "samples": 1.5}, False, "'samples' must be an integer from 1 to 64, got 1.5"),
    ({"prompt": "Q", "response_a": "a", "samples": True}, False, "'samples' must be an integer from 1 to 64, got True"),
    ({"prompt": "Q", "response_a": "a", "samples": "2"}, False, "'samples' must be an integer from 1 to 64, got '2'"),
    ({"prompt": "Q", "response_a": "a", "samples": 10**30}, False, "from 1 to 64, got 1000000000000000000000000000000"),
    ({"prompt": "Q\ud800", "response_a": "a"}, False, "field 'prompt' holds an unpaired UTF-16 surrogate at character 1"),
])
def test_parse_judge_request_errors(body, pairwise, message):
    with pytest.raises(RequestError, match=message) as raised:
        parse_judge_request(body, pairwise=pairwise)
    assert raised.value.code == "invalid_request"


@pytest.mark.parametrize("body, message", [
    # a misspelt field is named (not reported as the field it misspells being missing)
    ({"prompt": "Q", "respons_a": "a"}, "unknown field 'respons_a': /v1/judge takes prompt, response_a, response_b, "
                                        "samples, criteria, reference"),
    ({"prompt": "Q", "response_a": "a", "temperature": 1.0}, "unknown field 'temperature': /v1/judge takes prompt, "
                                                             "response_a, response_b, samples, criteria, reference "
                                                             "(temperature is set when j1 serve starts"),
    ({"prompt": "Q", "response_a": "a", "seed": 1, "top_p": 0.5}, "unknown fields 'seed', 'top_p': /v1/judge"),
    ({"prompt": "Q", "response_a": "a", "seed": 1, "top_p": 0.5}, "(seed, top_p are set when j1 serve starts"),
    ({"prompt": "Q", "response_a": "a", "": 1}, "unknown field '':"),
    ({"prompt": "Q", "response_a": "a", "é\n": None}, "unknown field 'é\\n':"),  # named as repr() writes it
])
def test_unknown_judge_fields_are_named(body, message):
    with pytest.raises(RequestError) as raised:
        parse_judge_request(body, pairwise=False)
    assert message in str(raised.value) and raised.value.code == "unknown_field"


@pytest.mark.parametrize("body, message", [
    ({"query": ["Q a"], "prompts": ["Q "], "labels": ["b"], "label": ["b"]}, "unknown field 'label': /get_reward "
                                                                            "takes query, prompts, labels"),
    ({"query": ["Q a"], "prompts": ["Q "], "labels": ["b"], "temperature": 0}, "temperature is set when"),
])
def test_unknown_reward_fields_are_named(body, message):
    with pytest.raises(RequestError) as raised:
        parse_reward_request(body, pairwise=True)
    assert message in str(raised.value) and raised.value.code == "unknown_field"


def test_a_surrogate_in_a_reward_list_names_the_item():
    with pytest.raises(RequestError, match=r"field 'query'\[1\] holds an unpaired UTF-16 surrogate at character 2"):
        parse_reward_request({"query": ["Q a", "Q \udfff"], "prompts": ["Q ", "Q "]}, pairwise=False)


def test_max_samples_is_the_servers():
    assert parse_judge_request({"prompt": "Q", "response_a": "a", "samples": 3}, pairwise=False,
                               max_samples=3).samples == 3
    with pytest.raises(RequestError, match="from 1 to 2, got 3"):
        parse_judge_request({"prompt": "Q", "response_a": "a", "samples": 3}, pairwise=False, max_samples=2)


@pytest.mark.parametrize("body, value", [(b'{"a": [1, "\xc3\xa9"]}', {"a": [1, "é"]}), (b"[]", []), (b"null", None)])
def test_parse_json(body, value):
    assert parse_json(body) == value


@pytest.mark.parametrize("body", [b"", b"{", b"\xff\xfe", b"{'a': 1}", b"NaN x"])
def test_parse_json_errors(body):
    with pytest.raises(RequestError, match="not valid JSON") as raised:
        parse_json(body)
    assert raised.value.code == "invalid_json"


def test_parse_json_too_deep_is_a_request_error():
    with pytest.raises(RequestError, match="nested too deeply"):
        parse_json(b"[" * 100_000 + b"]" * 100_000)


def _rewards(values: list[float], pairwise: bool = True) -> Rewards:
    logs = {"invalid_rate": 0.25, "flip_rate": 0.5} if pairwise else {"invalid_rate": 0.25}
    return Rewards(values, {**logs, "n": len(values)})


@pytest.mark.parametrize("rewards, judged, failed, error_reward, pairwise, truncated, values, logs", [
    # nothing failed: the judged rewards, the judge's rates, n of all items, no errors
    (_rewards([1.0, 0.5]), [0, 1], [], 0.0, True, 0, [1.0, 0.5],
     {"invalid_rate": 0.25, "flip_rate": 0.5, "n": 2, "error_rate": 0.0, "truncated_rate": 0.0}),
    # the middle item failed: it gets the error reward in its place; 1 of 3 failed, 1 of 3 shortened
    (_rewards([1.0, 0.5]), [0, 2], [1], -1.0, True, 1, [1.0, -1.0, 0.5],
     {"invalid_rate": 0.25, "flip_rate": 0.5, "n": 3, "error_rate": 1 / 3, "truncated_rate": 1 / 3}),
    # all failed: no judge rates to report (0.0), every item the error reward
    (None, [], [0, 1], 0.0, True, 0, [0.0, 0.0],
     {"invalid_rate": 0.0, "flip_rate": 0.0, "n": 2, "error_rate": 1.0, "truncated_rate": 0.0}),
    (None, [], [0], 0.25, False, 0, [0.25], {"invalid_rate": 0.0, "n": 1, "error_rate": 1.0, "truncated_rate": 0.0}),
    (_rewards([0.7], pairwise=False), [1], [0], 0.0, False, 0, [0.0, 0.7],
     {"invalid_rate": 0.25, "n": 2, "error_rate": 0.5, "truncated_rate": 0.0}),
])
def test_reward_answer_table(rewards, judged, failed, error_reward, pairwise, truncated, values, logs):
    errors = [ItemError(i, "context_length_exceeded", f"item {i}: too long") for i in reversed(failed)]
    out = reward_answer(rewards, judged, errors, n=len(values), error_reward=error_reward, pairwise=pairwise,
                        truncated=truncated)
    assert out["rewards"] == out["scores"] == values
    assert out["extra_logs"] == pytest.approx(logs)
    assert all(isinstance(v, (int, float)) for v in out["extra_logs"].values())  # OpenRLHF logs numbers
    assert out["errors"] == [{"index": i, "code": "context_length_exceeded", "message": f"item {i}: too long"}
                             for i in failed]  # in item order


@pytest.mark.parametrize("rewards, judged, failed, n, message", [
    (_rewards([1.0]), [0], [0], 1, "do not make 1"),      # an item both judged and failed
    (_rewards([1.0, 1.0]), [0], [1], 2, "2 rewards for 1 judged"),
    (None, [], [], 0, "no items"),
])
def test_reward_answer_refuses_inconsistent_parts(rewards, judged, failed, n, message):
    with pytest.raises(ValueError, match=message):
        reward_answer(rewards, judged, [ItemError(i, "x", "y") for i in failed], n=n, error_reward=0.0,
                      pairwise=True)
