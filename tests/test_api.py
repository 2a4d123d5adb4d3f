"""``j1.load_judge`` and ``Judge``: the judge the CLI would build, answering with ``j1 judge --json``'s
objects. Judges: a scripted upstream (tests/fake_openai.py) and the tiny random model."""

from __future__ import annotations

import json
import shutil

import pytest
from fake_openai import FakeOpenAIServer
from serve.serving import prefers_paris, scores_paris

import j1
from j1.api import Judge, load_judge
from j1.backends import Backend, Usage
from j1.cli.main import main
from j1.judging.judge import Judgment, to_json
from j1.judging.judges import DEFAULT_JUDGE, Manifest, manifest_for, write_manifest

PAIR = ("Capital of France?", "Lyon.", "Paris.")


def test_exported_from_the_package():
    assert j1.load_judge is load_judge and j1.Judge is Judge


def test_compare_over_http_is_j1_judge_json(capsys):
    with FakeOpenAIServer(prefers_paris) as upstream:
        assert main(["judge", "--base-url", upstream.base_url, "--prompt", PAIR[0], "--response-a", PAIR[1],
                     "--response-b", PAIR[2], "--json"]) == 0
        cli = json.loads(capsys.readouterr().out)
        with load_judge(base_url=upstream.base_url) as judge:
            judgment = judge.compare(*PAIR)
            many = judge.compare_many([PAIR, ("Capital of France?", "Paris!", "Nice.")])
            assert judge.compare_many([]) == []
        assert len(upstream.requests) == 2 + 2 + 4  # the CLI's pair, compare's, compare_many's two
    assert isinstance(judgment, Judgment) and to_json(judgment) == cli
    assert judgment.verdict == "B" and [j.verdict for j in many] == ["B", "A"]
    assert judge.name == "scripted-judge"


def test_score_is_j1_judge_pos_json_and_score_many_agrees(capsys):
    with FakeOpenAIServer(scores_paris) as upstream:
        assert main(["judge", "--base-url", upstream.base_url, "--format", "pos", "--prompt", PAIR[0],
                     "--response-a", "Paris.", "--json"]) == 0
        cli = json.loads(capsys.readouterr().out)
        with load_judge(base_url=upstream.base_url, format="pos") as judge:
            one = judge.score(PAIR[0], "Paris.")
        with load_judge(base_url=upstream.base_url, format="pos", temperature=1.0, samples=2) as judge:
            many = judge.score_many([(PAIR[0], "Paris."), (PAIR[0], "Lyon."), (PAIR[0], "???")])
            pair = judge.compare(*PAIR)  # a pointwise judge compares by scoring each response
    assert to_json(one) == cli and one["score"] == 8.0
    assert [m["score"] for m in many] == [8.0, 3.0, None] and all(len(m["samples"]) == 2 for m in many)
    assert many[2]["samples"][0].error is not None
    assert pair.verdict == "B" and pair.scores == {"A": 3.0, "B": 8.0} and "responses" in to_json(pair)


def test_a_judge_folder_sets_how_it_is_asked_and_flags_win(tiny_model, one_torch_thread, tmp_path, capsys):
    folder = shutil.copytree(tiny_model, tmp_path / "my-judge")
    prefill = "<think>fixed</think><score>"
    write_manifest(folder, Manifest(format="pos", template="compact", assistant_prefill=prefill, max_new_tokens=3,
                                    name="my-judge"))
    with load_judge(str(folder)) as judge:
        d = judge.describe()
        assert (d["name"], d["format"], d["template"], d["assistant_prefill"], d["max_new_tokens"]) == \
            ("my-judge", "pos", "compact", prefill, 3)
        assert d["manifest"]["name"] == "my-judge"
        # where it runs, as the device chose (the CPU here; bf16 where the CPU computes it natively)
        from j1.device import local_dtype

        want = local_dtype("auto", "cpu")
        assert d["device"] == {"device": "cpu", "dtype": want, "engine": "j1.decode", "batch_rows": 32}
        got = judge.score("What is 2 + 3?", "5")
    assert all(s.text.startswith(prefill) for s in got["samples"])
    # j1 judge reads the same manifest: the same JSON
    assert main(["judge", "--model", str(folder), "--prompt", "What is 2 + 3?", "--response-a", "5", "--json"]) == 0
    assert to_json(got) == json.loads(capsys.readouterr().out)
    with load_judge(str(folder), format="pav", max_new_tokens=5) as judge:
        assert (judge.format.name, judge.params.max_new_tokens, judge.format.template_name) == ("pav", 5, "compact")


class _NoModel(Backend):
    """A backend that records what it was built for and generates nothing."""

    def __init__(self, model, base_url, **kw):
        self.model_name, self.built = str(model), (model, base_url, kw)
        self.usage = Usage()

    def stream(self, prompts, params):
        raise AssertionError("not expected to generate")


def test_no_name_is_the_shipped_judge_with_its_manifest(monkeypatch):
    monkeypatch.setattr("j1.backends.make_backend",
                        lambda model, base_url, api_key=None, **kw: _NoModel(model, base_url, **kw))
    judge = load_judge(batch_rows=4)
    m = manifest_for(DEFAULT_JUDGE)
    local = {"batch_rows": 4, "max_batch_tokens": 65536, "dtype": "auto", "device": None, "max_context": None}
    assert judge.backend.built == (DEFAULT_JUDGE, None, local)
    # one name for the setting (--batch_rows); the API's former spelling still reaches it
    assert load_judge(max_batch_rows=4).backend.built == (DEFAULT_JUDGE, None, local)
    assert (judge.name, judge.format.name, judge.prefill, judge.params.max_new_tokens) == \
        (m.name, m.format, m.assistant_prefill, m.max_new_tokens)
    # the served model: no manifest applies; the name is the server's
    served = load_judge(base_url="http://127.0.0.1:9/v1", timeout=5.0)
    http = {"concurrency": 32, "timeout": 5.0, "max_retries": 4, "endpoint": "auto", "max_context": None}
    assert served.backend.built == (None, "http://127.0.0.1:9/v1", http) and served.manifest is None
    assert served.format.name == "pav" and served.params.max_new_tokens == 512


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(colour="red"), TypeError, "unknown setting 'colour'"),
    (dict(concurrency=4), TypeError, "'concurrency' applies to a served judge"),
    (dict(base_url="http://127.0.0.1:9/v1", dtype="bfloat16"), TypeError, "'dtype' applies to a local judge"),
    (dict(format="zzz"), ValueError, "unknown format 'zzz'"),
    (dict(template="zzz"), ValueError, "unknown judge template 'zzz'"),
    (dict(samples=3), ValueError, "temperature=0 gives n identical samples"),
    (dict(max_new_tokens=0), ValueError, "max_new_tokens=0"),
])
def test_bad_settings_fail_before_any_model_loads(kwargs, error, message):
    # a model that does not exist: reaching the load would fail differently
    with pytest.raises(error, match=message):
        load_judge("/nonexistent/judge", **kwargs)


def test_misuse_is_named():
    with FakeOpenAIServer(prefers_paris) as upstream, load_judge(base_url=upstream.base_url) as judge:
        with pytest.raises(ValueError, match="score\\(\\) asks a pointwise judge; this one is 'pav'"):
            judge.score("Q", "a")
        with pytest.raises(TypeError, match="item 0: response_b must be a string, got int"):
            judge.compare("Q", "a", 3)
        with pytest.raises(TypeError, match="item 1: expected \\(prompt, response_a, response_b\\)"):
            judge.compare_many([("Q", "a", "b"), ("Q", "a")])
        with pytest.raises(ValueError, match="n=2 with temperature=0"):
            judge.compare("Q", "a", "b", samples=2)
        with pytest.raises(ValueError, match="samples 0: must be an integer >= 1|n=0"):
            judge.compare("Q", "a", "b", samples=0)
        assert upstream.requests == []
