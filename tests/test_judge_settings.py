"""``JudgeSettings``: one way to build a judge. The CLI's specs, ``j1 serve``'s and ``j1.load_judge``'s keywords give
the same settings, and the settings the same backend (recorded here by a backend that loads nothing)."""

from __future__ import annotations

import pytest

from j1.api import load_judge
from j1.backends import Backend, Usage
from j1.judging.judges import DEFAULT_JUDGE, Manifest, manifest_for, write_manifest
from j1.judging.settings import JudgeSettings, names_judge
from j1.judging.spec import JudgeSpec
from j1.serve.spec import ServeSpec

URL = "http://127.0.0.1:9/v1"
PAIR = dict(prompt="2+2?", response_a="4", response_b="5")


class _Recorded(Backend):
    """Records what it was built for; generates nothing."""

    def __init__(self, model, base_url, api_key=None, **kw):
        self.model_name, self.built = str(model), (model, base_url, api_key, kw)
        self.usage = Usage()

    def stream(self, prompts, params):
        raise AssertionError("not expected to generate")


@pytest.fixture
def recorded(monkeypatch):
    monkeypatch.setattr("j1.backends.make_backend", _Recorded)


@pytest.mark.parametrize(("settings", "expected"), [
    (JudgeSettings(), {"batch_rows": None, "max_batch_tokens": 65536, "dtype": "auto", "device": None,
                       "max_context": None}),
    (JudgeSettings(batch_rows=4, dtype="float32", max_context=2048, concurrency=2),  # concurrency: served only
     {"batch_rows": 4, "max_batch_tokens": 65536, "dtype": "float32", "device": None, "max_context": 2048}),
    (JudgeSettings(base_url=URL, timeout=5.0, batch_rows=4),  # batch_rows: local only
     {"concurrency": 32, "timeout": 5.0, "max_retries": 4, "endpoint": "auto", "max_context": None}),
    (JudgeSettings(base_url=URL, max_context=100_000),  # the engine's context: one path, the backend's
     {"concurrency": 32, "timeout": 120.0, "max_retries": 4, "endpoint": "auto", "max_context": 100_000}),
])
def test_backend_kwargs_are_the_kind_of_backend_s_own(settings, expected):
    assert settings.backend_kwargs() == expected


def test_a_served_judge_needs_its_engine():
    with pytest.raises(ValueError, match="JudgeSettings.judge names a judge an engine serves: set base_url"):
        JudgeSettings(judge=DEFAULT_JUDGE)


def test_settings_are_taken_whole_by_load_judge(recorded):
    with pytest.raises(TypeError, match="the JudgeSettings hold every setting"):
        load_judge(JudgeSettings(), samples=2)
    judge = load_judge(JudgeSettings(model=DEFAULT_JUDGE, batch_rows=3))
    assert judge.backend.built[2:] == (None, {"batch_rows": 3, "max_batch_tokens": 65536, "dtype": "auto",
                                              "device": None, "max_context": None})


@pytest.mark.parametrize(("flags", "keywords"), [
    # the default judge, a local batch and context
    (dict(batch_rows=4, max_context=4096), dict(batch_rows=4, max_context=4096)),
    # a flag over the manifest, and sampling
    (dict(model=DEFAULT_JUDGE, template="digest", temperature=1.0, samples=3, top_p=0.9, seed=7),
     dict(template="digest", temperature=1.0, samples=3, top_p=0.9, seed=7)),
])
def test_the_cli_serve_and_the_api_build_the_same_local_judge(recorded, flags, keywords):
    api = load_judge(DEFAULT_JUDGE, **keywords)
    cli = load_judge(JudgeSpec(**PAIR, **flags).judge_settings())
    served = load_judge(ServeSpec(**flags).judge_settings())
    for judge in (cli, served):
        assert judge.backend.built == api.backend.built
        assert (judge.name, judge.format.name, judge.format.template_name, judge.prefill, judge.params) == \
            (api.name, api.format.name, api.format.template_name, api.prefill, api.params)
        assert judge.manifest == manifest_for(DEFAULT_JUDGE)


def test_the_cli_and_the_api_ask_a_served_judge_alike(recorded, tmp_path):
    folder = tmp_path / "my-judge"
    write_manifest(folder, Manifest(format="pas", template="compact", assistant_prefill="<think>", name="served-j"))
    assert names_judge(str(folder)) and names_judge(str(folder / "judge.json")) and not names_judge(str(tmp_path))
    flags = dict(judge=str(folder), base_url=URL, endpoint="chat", timeout=9.0)
    spec = JudgeSpec(**PAIR, **flags)
    assert spec.judge_settings("k") == JudgeSettings(
        model="served-j", base_url=URL, judge=str(folder), api_key="k", format="pas", template="compact",
        assistant_prefill="<think>", max_new_tokens=512, temperature=0.0, samples=1, endpoint="chat", timeout=9.0)
    api = load_judge(str(folder), base_url=URL, api_key="k", endpoint="chat", timeout=9.0)
    cli = load_judge(spec.judge_settings("k"))
    # the engine is asked for the manifest's name, checked against its /v1/models; chat: no tokenizer needed
    assert api.backend.built == cli.backend.built == (
        "served-j", URL, "k", {"concurrency": 32, "timeout": 9.0, "max_retries": 4, "endpoint": "chat",
                               "max_context": None, "tokenizer": None, "check_model": True})
    assert (api.format.name, api.prefill, api.name) == (cli.format.name, cli.prefill, cli.name) == \
        ("pas", "<think>", "served-j")
    # a name of the engine's own (--model beside --judge; served_name in the API)
    renamed = load_judge(str(folder), base_url=URL, served_name="other", endpoint="chat")
    assert renamed.backend.built[0] == "other"
    assert JudgeSpec(**PAIR, **flags, model="other").judge_settings().model == "other"


def test_the_flags_and_the_settings_default_alike():
    """A judge built from no flags and one built from no keywords must not differ by a default."""
    import dataclasses

    settings = {f.name: f.default for f in dataclasses.fields(JudgeSettings)}
    flags = {f.name: f.default for f in dataclasses.fields(JudgeSpec) if f.name in settings}
    assert len(flags) >= 15, sorted(flags)
    differ = {k: (v, settings[k]) for k, v in flags.items() if v is not dataclasses.MISSING and v != settings[k]}
    assert differ == {}
