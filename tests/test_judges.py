"""Judge manifests (judge.json), how --model resolves to weights, and the shipped judge."""

from __future__ import annotations

import json

import pytest

from j1.judging.judges import (
    DEFAULT_JUDGE,
    SHIPPED,
    SHIPPED_DIR,
    Manifest,
    base_reference,
    judge_weights,
    manifest_settings,
    read_manifest,
    record_metrics,
    trained_manifest,
    write_manifest,
)
from j1.judging.settings import JudgeSettings


def test_manifest_round_trips(tmp_path):
    m = Manifest(format="pav", template="digest", assistant_prefill="<think>x</think>\n<answer>[[", max_new_tokens=8,
                 base_model="smollm2-135m", name="j", metrics={"generic:h.jsonl": {"accuracy": 0.5}}, trained_by="j1 train")
    write_manifest(tmp_path, m)
    assert read_manifest(tmp_path) == m
    assert not list(tmp_path.glob(".judge.*"))  # the temp file was renamed, not left behind
    assert read_manifest(tmp_path / "nothing-here") is None


@pytest.mark.parametrize(("content", "message"), [
    ("[1]", "a JSON object"),
    ('{"template": "full"}', "missing key 'format'"),
    ('{"format": "pav", "colour": 1}', "unknown key 'colour'"),
    ('{"format": "xyz"}', "format 'xyz' must be one of"),
    ('{"format": "pav", "template": "terse"}', "template 'terse' must be one of"),
    ('{"format": "pav", "max_new_tokens": 0}', "max_new_tokens 0 must be an integer >= 1"),
    ('{"format": "pav", "samples": 1.5}', "samples 1.5 must be an integer >= 1"),
    ('{"format": "pav", "temperature": -1}', "temperature -1 must be a number >= 0"),
    ('{"format": "pav", "schema_version": 9}', "schema_version 9 is newer"),
    ('{"format": "pav", "inputs": ["gold"]}', "inputs ['gold'] must be a list of distinct names from criteria, "
                                              "reference"),
    ('{"format": "pav", "inputs": ["reference", "reference"]}', "inputs ['reference', 'reference'] must be"),
    ('{"format": "pav",\n "samples": }', "not valid JSON (line 2"),
])
def test_a_bad_manifest_names_file_and_key(tmp_path, content, message):
    (tmp_path / "judge.json").write_text(content)
    with pytest.raises(ValueError, match="judge.json: .*" + message.replace("(", r"\(").replace("[", r"\[")):
        read_manifest(tmp_path)


def test_record_metrics_adds_a_key_and_keeps_the_rest(tmp_path):
    write_manifest(tmp_path, Manifest(format="pav", metrics={"a": {"accuracy": 1.0}}))
    assert record_metrics(tmp_path, "b", {"accuracy": 0.25})
    assert read_manifest(tmp_path).metrics == {"a": {"accuracy": 1.0}, "b": {"accuracy": 0.25}}
    assert not record_metrics(tmp_path / "plain", "b", {})  # no manifest: nothing to update


PLAIN = dict(format="pav", template="full", max_new_tokens=512, temperature=0.0, samples=1)


@pytest.mark.parametrize(("given", "expected"), [
    # nothing given: all from the manifest
    ({}, dict(format="pas", template="compact", assistant_prefill="<think>", max_new_tokens=9, temperature=0.0,
              samples=1)),
    # a flag wins over the manifest; the rest still comes from it
    ({"max_new_tokens": 64, "template": "full"},
     dict(format="pas", template="full", assistant_prefill="<think>", max_new_tokens=64, temperature=0.0, samples=1)),
])
def test_unset_fields_come_from_the_manifest(tmp_path, given, expected):
    write_manifest(tmp_path, Manifest(format="pas", template="compact", assistant_prefill="<think>", max_new_tokens=9))
    settings, manifest = JudgeSettings(model=str(tmp_path), **given).resolved()
    assert manifest is not None
    assert {k: getattr(settings, k) for k in expected} == expected


def test_without_a_manifest_the_plain_defaults_apply(tmp_path):
    settings, manifest = JudgeSettings(model=str(tmp_path), samples=3).resolved()
    assert manifest is None
    assert (settings.format, settings.template, settings.assistant_prefill, settings.max_new_tokens,
            settings.samples) == ("pav", "full", None, 512, 3)
    # a served model has no manifest even when a folder of that name exists here
    write_manifest(tmp_path, Manifest(format="pas"))
    served, manifest = JudgeSettings(model=str(tmp_path), base_url="http://127.0.0.1:1/v1").resolved()
    assert manifest is None and served.format == "pav"
    # ... unless it is named as the judge the engine serves
    judged, manifest = JudgeSettings(base_url="http://127.0.0.1:1/v1", judge=str(tmp_path)).resolved()
    assert manifest == read_manifest(tmp_path) and judged.format == "pas"


@pytest.mark.parametrize(("manifest", "given", "expected"), [
    (Manifest("pos", samples=3), {"format": None, "samples": 1}, {"format": "pos", "samples": 1}),
    (Manifest("pos", samples=3), {"format": None, "samples": None}, {"format": "pos", "samples": 3}),
    (None, {"format": None, "template": "digest"}, {"format": "pav", "template": "digest"}),
    (None, {"assistant_prefill": None}, {"assistant_prefill": None}),  # no plain default: stays unset
    (Manifest("pav", assistant_prefill="<think>"), {"assistant_prefill": None}, {"assistant_prefill": "<think>"}),
])
def test_manifest_settings_fill_only_what_is_unset(manifest, given, expected):
    assert manifest_settings(manifest, given, PLAIN) == expected


def test_base_reference_is_relative_for_folders(tmp_path):
    (tmp_path / "warmup").mkdir()
    judge = tmp_path / "train" / "final"
    judge.mkdir(parents=True)
    assert base_reference(str(tmp_path / "warmup"), judge) == "../../warmup"
    assert base_reference("smollm2-135m", judge) == "smollm2-135m"
    assert base_reference("org/model", judge) == "org/model"
    m = trained_manifest(formulation="multitask", template="full", prefill=None, max_new_tokens=32,
                         base_model=None, judge_dir=judge, trained_by="j1 train")
    assert (m.format, m.base_model, m.name) == ("pav", None, "final")


def judge_paths(model, base=None):
    w = judge_weights(model, base)
    return w.weights, w.adapter


def test_judge_paths(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "config.json").write_text("{}")
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(full)}))
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "adapter_config.json").write_text("{}")
    assert judge_paths(str(full)) == (str(full), None)
    assert judge_paths("org/some-model") == ("org/some-model", None)  # a Hugging Face id
    assert judge_paths(str(adapter)) == (str(full), str(adapter))
    assert judge_paths(str(bare), base="other/base") == ("other/base", str(bare))
    assert judge_paths(str(full), base="x") == (str(full), None)  # a full model needs no base
    with pytest.raises(ValueError, match="pass the base model with --base"):
        judge_paths(str(bare))
    with pytest.raises(ValueError, match="not found"):
        judge_paths(str(tmp_path / "runs" / "missing"))


def test_the_manifest_names_an_adapters_base_relative_to_the_judge(tmp_path):
    (tmp_path / "base").mkdir()
    judge = tmp_path / "judge"
    judge.mkdir()
    (judge / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "/moved/away"}))
    write_manifest(judge, Manifest(format="pav", base_model="../base"))
    assert judge_paths(str(judge)) == (str(judge / "../base"), str(judge))
    # an explicit base still wins
    assert judge_paths(str(judge), base="org/other") == ("org/other", str(judge))


def test_the_default_judge_ships_with_the_package():
    assert DEFAULT_JUDGE in SHIPPED
    folder = SHIPPED_DIR / DEFAULT_JUDGE
    m = read_manifest(folder)
    assert m.base_model == "smollm2-135m"  # the embedded base: loads offline
    for name in ("adapter_model.safetensors", "adapter_config.json", "run.json", "MODEL_CARD.md"):
        assert (folder / name).is_file(), name
    assert (folder / "adapter_model.safetensors").stat().st_size < 10_000_000
    w = judge_weights(DEFAULT_JUDGE)
    assert w.adapter == str(folder) and w.manifest == m


def test_the_manifest_records_the_inputs_a_judge_was_trained_with(tmp_path):
    """A manifest of j1 before schema 3 has no ``inputs``: its judge read none (j1 could not render them then)."""
    from j1.judging.judges import untrained_inputs, warn_untrained_inputs

    m = trained_manifest(formulation="pav", template="full", prefill=None, max_new_tokens=8, base_model=None,
                         judge_dir=tmp_path, trained_by="j1 train", inputs=["reference"])
    write_manifest(tmp_path, m)
    assert read_manifest(tmp_path).inputs == ["reference"] and read_manifest(tmp_path).schema_version == 3
    (tmp_path / "judge.json").write_text('{"format": "pav", "schema_version": 2}')
    old = read_manifest(tmp_path)
    assert old.inputs == [] and untrained_inputs(old, ["reference", "criteria"]) == ["criteria", "reference"]
    assert untrained_inputs(m, ["reference"]) == [] and untrained_inputs(None, ["criteria"]) == []
    warned: set[str] = set()
    assert warn_untrained_inputs(m, ["criteria", "reference"], warned) == ["criteria"]
    assert warn_untrained_inputs(m, ["criteria"], warned) == []  # once
    assert read_manifest(SHIPPED_DIR / DEFAULT_JUDGE).inputs == []  # the shipped judge read none
