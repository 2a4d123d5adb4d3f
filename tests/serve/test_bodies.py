"""``j1.serve.bodies``: the request models and the 400 message of every way a body can be wrong, as tables."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from j1.serve.bodies import (
    JudgeRequest,
    PairJudgeRequest,
    PairRewardRequest,
    RewardRequest,
    request_error,
    request_models,
)
from j1.serve.protocol import RequestError, Task


def parse(model, body, endpoint: str = "/endpoint"):
    """``body`` (JSON-encoded unless bytes) as ``model``, or the RequestError the server answers 400 with."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise request_error(exc, model, endpoint) from None


def test_reward_request_strips_prompts():
    got = parse(PairRewardRequest, {"query": ["P1 a", "P2 b"], "prompts": ["P1 ", "P2 "], "labels": ["x", "y"]})
    assert (got.prompts, got.responses, got.references) == (["P1 ", "P2 "], ["a", "b"], ["x", "y"])
    assert parse(RewardRequest, {"query": ["P1 a"], "prompts": ["P1 "], "labels": ["x"]}).references is None


@pytest.mark.parametrize("body, pairwise, message", [
    ([], True, "the body must be a JSON object, got an array"),
    ("x", True, "the body must be a JSON object, got a string"),
    ({}, True, "missing field 'query'"),
    ({"query": "a", "prompts": ["a"]}, True, "field 'query' must be a list, got a string"),
    ({"query": ["a", 3], "prompts": ["a", "b"]}, True, r"field 'query'\[1\] must be a string, got a number"),
    ({"query": ["a"]}, True, "missing field 'prompts'"),
    ({"query": ["a"], "prompts": [None]}, True, r"'prompts'\[0\] must be a string, got null"),
    ({"query": ["a", "b"], "prompts": ["a"]}, True, "'prompts' has 1 items and 'query' 2"),
    ({"query": [], "prompts": []}, True, r"field 'query' must have at least 1 item\(s\), got 0"),
    ({"query": ["Q a", "x"], "prompts": ["Q ", "Q "]}, True, "query 1: the query does not start with its prompt"),
    ({"query": ["Q a"], "prompts": ["Q "]}, True, None),  # no labels: the group reward (win rate)
    ({"query": ["Q a"], "prompts": ["Q "], "labels": ["x", "y"]}, True, "'labels' has 2 items and 'query' 1"),
    ({"query": ["Q a"], "prompts": ["Q "], "labels": [True]}, True, r"'labels'\[0\] must be a string, got a boolean"),
    ({"query": ["Q a"], "prompts": ["Q "], "labels": [{}]}, False, None),  # pointwise does not read labels
    ({"query": ["Q a"], "prompts": ["Q "], "criteria": 5}, True, "field 'criteria' must be a string or a list, got a"),
    ({"query": ["Q a"], "prompts": ["Q "], "criteria": [5]}, True, r"'criteria'\[0\] must be a string, got a number"),
    ({"query": ["Q a"], "prompts": ["Q "], "reference": ["4", None]}, True, "'reference' has 2 items and 'query' 1"),
    (b'{"query": ["Q a"], "prompts": ["Q \\ud800"]}', True, "the body is not valid JSON"),  # an unpaired surrogate
])
def test_reward_request_errors(body, pairwise, message):
    model = request_models(pairwise)[1]
    if message is None:
        parse(model, body)
        return
    with pytest.raises(RequestError, match=message):
        parse(model, body)


@pytest.mark.parametrize("body, criteria, reference", [
    ({"criteria": "Be brief."}, ["Be brief.", "Be brief."], [None, None]),  # one string: every item
    ({"reference": ["4", None]}, [None, None], ["4", None]),             # one per item, null: none
    ({}, [None, None], [None, None]),
])
def test_reward_request_tasks_carry_each_items_guidance(body, criteria, reference):
    req = parse(PairRewardRequest, {"query": ["Q a", "Q b"], "prompts": ["Q ", "Q "], **body})
    tasks = [req.task(i, req.responses[i], "ref") for i in range(2)]
    assert [t.criteria for t in tasks] == criteria and [t.reference for t in tasks] == reference
    assert tasks[1] == Task("Q ", "b", "ref", None, criteria[1], reference[1])


@pytest.mark.parametrize("body, pairwise, expected", [
    ({"prompt": "Q", "response_a": "a", "response_b": "b"}, True, Task("Q", "a", "b", None)),
    ({"prompt": "Q", "response_a": "a", "samples": 3}, False, Task("Q", "a", None, 3)),
    ({"prompt": "Q", "response_a": "a", "response_b": "b"}, False, Task("Q", "a", "b", None)),
    ({"prompt": "", "response_a": "", "response_b": ""}, True, Task("", "", "", None)),
    ({"prompt": "Q", "response_a": "a", "samples": 64}, False, Task("Q", "a", None, 64)),  # the most
    ({"prompt": "Q", "response_a": "a", "criteria": "é ✓", "reference": None}, False, Task("Q", "a", criteria="é ✓")),
])
def test_judge_request(body, pairwise, expected):
    assert parse(request_models(pairwise)[0], body).task() == expected


@pytest.mark.parametrize("body, pairwise, message", [
    ([1], True, "the body must be a JSON object, got an array"),
    ({"response_a": "a", "response_b": "b"}, True, "missing field 'prompt': the request the responses answer"),
    ({"prompt": "Q", "response_b": "b"}, True, "missing field 'response_a'"),
    ({"prompt": "Q", "response_a": "a"}, True, "missing field 'response_b': the second response"),
    ({"prompt": 1, "response_a": "a", "response_b": "b"}, True, "field 'prompt' must be a string, got a number"),
    ({"prompt": "Q", "response_a": "a", "response_b": ["b"]}, True, "'response_b' must be a string, got an array"),
    ({"prompt": "Q", "response_a": "a", "samples": 0}, False, "field 'samples' must be >= 1, got 0"),
    ({"prompt": "Q", "response_a": "a", "samples": 1.5}, False, "'samples' must be an integer, got a number"),
    ({"prompt": "Q", "response_a": "a", "samples": True}, False, "'samples' must be an integer, got a boolean"),
    ({"prompt": "Q", "response_a": "a", "samples": "2"}, False, "'samples' must be an integer, got a string"),
    ({"prompt": "Q", "response_a": "a", "samples": 10**30}, False, "must be <= 64, got 1000000000000000000000000000000"),
    ({"prompt": [], "response_a": "a"}, False, "field 'prompt' is an empty list"),
    ({"prompt": [{"role": "user"}], "response_a": "a"}, False, "field 'prompt' message 1 must be an object"),
    (b'{"prompt": "Q\\ud800", "response_a": "a"}', False, "the body is not valid JSON"),
    (b'{"prompt": ', False, "the body is not valid JSON: EOF while parsing"),
    (b"[" * 100_000 + b"]" * 100_000, False, "the body is not valid JSON: recursion limit exceeded"),
    (b"\xff\xfe", False, "the body is not valid JSON"),
])
def test_judge_request_errors(body, pairwise, message):
    with pytest.raises(RequestError, match=message) as raised:
        parse(request_models(pairwise)[0], body)
    assert raised.value.code == ("invalid_json" if "JSON:" in message or "not valid JSON" in message
                                 else "invalid_request")


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
    ({"prompt": 1, "x": 1}, "unknown field 'x'"),  # an unknown field is named first, before a wrong type
])
def test_unknown_judge_fields_are_named(body, message):
    with pytest.raises(RequestError) as raised:
        parse(JudgeRequest, body, "/v1/judge")
    assert message in str(raised.value) and raised.value.code == "unknown_field"


@pytest.mark.parametrize("body, message", [
    ({"query": ["Q a"], "prompts": ["Q "], "labels": ["b"], "label": ["b"]}, "unknown field 'label': /get_reward "
                                                                            "takes query, prompts, labels"),
    ({"query": ["Q a"], "prompts": ["Q "], "labels": ["b"], "temperature": 0}, "temperature is set when"),
])
def test_unknown_reward_fields_are_named(body, message):
    with pytest.raises(RequestError) as raised:
        parse(PairRewardRequest, body, "/get_reward")
    assert message in str(raised.value) and raised.value.code == "unknown_field"


@pytest.mark.parametrize("model", [JudgeRequest, PairJudgeRequest, RewardRequest, PairRewardRequest])
def test_every_field_has_a_one_line_description(model):
    # /openapi.json shows them; a client generator writes them as doc comments
    for name, field in model.model_fields.items():
        assert field.description and "\n" not in field.description, name
