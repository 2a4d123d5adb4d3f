"""``/openapi.json`` is what a generated client reads: a valid OpenAPI 3 document (openapi-spec-validator)
whose request schemas take the bodies the server takes and refuse what it refuses, and whose answer schemas
real answers validate against (jsonschema), for a pairwise and a pointwise judge. ``docs=False`` serves none."""

from __future__ import annotations

import json

import jsonschema
import pytest
from fake_openai import FakeOpenAIServer
from openapi_spec_validator import validate
from serve.serving import http, prefers_paris, running_app, scores_paris

from j1 import load_judge

PAIR = {"prompt": "Capital of France?", "response_a": "Lyon.", "response_b": "Paris.", "criteria": "Be right."}
REWARD = {"query": ["Q? Paris.", "Q? Lyon."], "prompts": ["Q? ", "Q? "], "labels": ["Lyon.", "Paris."]}


def _served(script, fmt: str):
    @pytest.fixture(scope="module")
    def served():
        with FakeOpenAIServer(script) as upstream, load_judge(base_url=upstream.base_url, format=fmt) as judge, \
                running_app(judge) as (url, _), http().Client(timeout=30) as client:
            yield url, client, client.get(url + "/openapi.json").json()
    return served


pairwise = _served(prefers_paris, "pav")
pointwise = _served(scores_paris, "pos")


def _schema(doc: dict, path: str, part: str, method: str = "post") -> jsonschema.Draft202012Validator:
    """A validator of ``path``'s request body (``part`` "request") or answer (a status), refs resolved in ``doc``."""
    op = doc["paths"][path][method]
    where = op["requestBody"] if part == "request" else op["responses"][part]
    return jsonschema.Draft202012Validator({**where["content"]["application/json"]["schema"],
                                            "components": doc["components"]})


@pytest.mark.parametrize("served", ["pairwise", "pointwise"])
def test_the_document_is_valid_openapi_3_naming_both_endpoints_and_their_fields(served, request):
    _, _, doc = request.getfixturevalue(served)
    validate(doc)  # raises on an invalid document
    assert doc["openapi"].startswith("3.")
    schemas = doc["components"]["schemas"]
    for path, fields in (("/v1/judge", {"prompt", "response_a", "response_b", "samples", "criteria", "reference"}),
                         ("/get_reward", {"query", "prompts", "labels", "criteria", "reference"})):
        ref = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        body = schemas[ref.rsplit("/", 1)[1]]
        assert set(body["properties"]) == fields and body["additionalProperties"] is False
        assert all(p.get("description") for p in body["properties"].values())
    assert '"422"' not in json.dumps(doc)  # no answer is FastAPI's validation error


def test_a_pairwise_judge_publishes_response_b_as_required(pairwise, pointwise):
    def required(doc):
        ref = doc["paths"]["/v1/judge"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        return doc["components"]["schemas"][ref.rsplit("/", 1)[1]]["required"]
    assert required(pairwise[2]) == ["prompt", "response_a", "response_b"]
    assert required(pointwise[2]) == ["prompt", "response_a"]


@pytest.mark.parametrize("served, path, body", [
    ("pairwise", "/v1/judge", PAIR),
    ("pairwise", "/get_reward", REWARD),
    ("pairwise", "/get_reward", {k: v for k, v in REWARD.items() if k != "labels"}),  # the group reward
    ("pointwise", "/v1/judge", {"prompt": "Q?", "response_a": "Paris."}),              # scored alone
    ("pointwise", "/v1/judge", PAIR),                                                   # two, each scored
    ("pointwise", "/get_reward", {**REWARD, "reference": ["Paris.", None]}),
])
def test_real_answers_validate_against_the_schema(served, path, body, request):
    url, client, doc = request.getfixturevalue(served)
    _schema(doc, path, "request").validate(body)  # what a generated client sends
    resp = client.post(url + path, json=body)
    assert resp.status_code == 200, resp.text
    _schema(doc, path, "200").validate(resp.json())


@pytest.mark.parametrize("body", [
    {**PAIR, "temperature": 1.0},                   # a field the server does not take
    {**PAIR, "samples": 0},                         # out of range
    {**PAIR, "samples": "2"},                       # no coercion
    {k: v for k, v in PAIR.items() if k != "response_a"},
])
def test_the_schema_refuses_what_the_server_refuses_with_the_400_it_publishes(pairwise, body):
    url, client, doc = pairwise
    assert not _schema(doc, "/v1/judge", "request").is_valid(body)
    resp = client.post(url + "/v1/judge", json=body)
    assert resp.status_code == 400
    _schema(doc, "/v1/judge", "400").validate(resp.json())


def test_docs_page_is_served_and_no_docs_turns_both_off(pairwise):
    url, client, _ = pairwise
    page = client.get(url + "/docs")
    assert page.status_code == 200 and "/openapi.json" in page.text
    with FakeOpenAIServer(prefers_paris) as upstream, load_judge(base_url=upstream.base_url) as judge, \
            running_app(judge, docs=False) as (off, _):
        with http().Client() as c:
            assert [c.get(off + p).status_code for p in ("/openapi.json", "/docs")] == [404, 404]


@pytest.mark.parametrize("path", ["/health", "/v1/models"])
def test_the_get_answers_validate_against_the_schema(pairwise, path):
    url, client, doc = pairwise
    resp = client.get(url + path)
    assert resp.status_code == 200, resp.text
    _schema(doc, path, "200", method="get").validate(resp.json())
    with pytest.raises(jsonschema.ValidationError):  # the schema says something: an empty answer fails it
        _schema(doc, path, "200", method="get").validate({})
