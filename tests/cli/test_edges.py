"""The CLI's edges (issue 43, item 6): every command, given a missing, empty, malformed or wrong-schema
input or an invalid value, exits 2 with one line on stderr, no traceback, no model loaded and no new
file or folder (the directory tree is compared before and after). Also: j1's words for an unknown flag
or YAML key, ``--config``/``--debug`` in every help, an uncached hub id failing fast offline, ``j1 judge``
refusing empty text, and one file mode for every file of a run.

Each case runs in a fresh working folder that holds the inputs; outputs are named relative to it, so
anything a failed command leaves behind shows in the tree.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from j1.cli.main import COMMANDS, main

GOOD_PAIR = {"id": "p1", "prompt": "2+2?", "chosen": "4", "rejected": "5", "kind": "k", "source": "s"}
WRONG = '{"x": 1, "y": "z"}\n'  # valid JSON, but no field any command reads

INPUTS = {
    "empty.jsonl": "",
    "bad.jsonl": '{"prompt": "p", \n',
    "wrong.jsonl": WRONG,
    "pairs.jsonl": json.dumps(GOOD_PAIR) + "\n",
    # chosen/rejected rows (one response each side): not the K responses j1 consistency needs
    "chosen_rejected.jsonl": json.dumps(GOOD_PAIR) + "\n",
    # j1 label: a row with one response has no pair to judge
    "one_response.jsonl": json.dumps({"prompt": "2+2?", "responses": ["4"]}) + "\n",
    "emptydir/.keep": "",
    "badrun/run.json": "{not json",
    "badrun/judgments.jsonl": "",
    "badrun/metrics.json": "{not json",
    "wrongrun/run.json": json.dumps({"config": {"benchmark": "generic", "format": "pav", "samples": 1, "seed": 0}}),
    "wrongrun/judgments.jsonl": WRONG,
    "wrongrun/metrics.json": json.dumps({"x": 1}),
    # a j1 label run: j1 score has nothing to rescore in it
    "labelrun/run.json": json.dumps({"command": "label", "config": {"data": "rows.jsonl", "format": "pav"}}),
    "labelrun/judgments.jsonl": WRONG,
    "badshow/results.jsonl": '{"id": \n',
    "wrongshow/results.jsonl": WRONG,
    "unknown.yaml": "foo: 1\n",
    "notmapping.yaml": "- a\n- b\n",
}

PAIR_FLAGS = ["--prompt", "p", "--response_a", "a", "--response_b", "b"]
CPU = ["--use_cpu", "true", "--bf16", "false", "--report_to", "none"]

# (case id, argv, a phrase the one error line holds). Paths are relative to the case's working folder.
CASES = [
    # synth math / chat / mismatch / mix
    ("synth math: missing", ["synth", "math", "--source", "missing.jsonl", "--out", "out/p.jsonl"], "missing.jsonl"),
    ("synth math: empty", ["synth", "math", "--source", "empty.jsonl", "--out", "out/p.jsonl"], "empty.jsonl"),
    ("synth math: malformed", ["synth", "math", "--source", "bad.jsonl", "--out", "out/p.jsonl"], "bad.jsonl:1"),
    ("synth math: wrong schema", ["synth", "math", "--source", "wrong.jsonl", "--out", "out/p.jsonl"],
     "wrong.jsonl:1"),
    ("synth math: invalid value", ["synth", "math", "--source", "pairs.jsonl", "--out", "out/p.jsonl",
                                   "--top_p", "0"], "--top_p 0.0"),
    ("synth chat: missing", ["synth", "chat", "--source", "missing.jsonl", "--out", "out/p.jsonl"], "missing.jsonl"),
    ("synth chat: empty", ["synth", "chat", "--source", "empty.jsonl", "--out", "out/p.jsonl"], "empty.jsonl"),
    ("synth chat: malformed", ["synth", "chat", "--source", "bad.jsonl", "--out", "out/p.jsonl"], "bad.jsonl:1"),
    ("synth chat: wrong schema", ["synth", "chat", "--source", "wrong.jsonl", "--out", "out/p.jsonl"],
     "wrong.jsonl:1"),
    ("synth chat: invalid value", ["synth", "chat", "--source", "pairs.jsonl", "--out", "out/p.jsonl",
                                   "--temperature", "-1"], "--temperature -1.0"),
    ("synth mismatch: missing", ["synth", "mismatch", "--source", "missing.jsonl", "--out", "out/p.jsonl"],
     "missing.jsonl"),
    ("synth mismatch: empty", ["synth", "mismatch", "--source", "empty.jsonl", "--out", "out/p.jsonl"], "empty.jsonl"),
    ("synth mismatch: malformed", ["synth", "mismatch", "--source", "bad.jsonl", "--out", "out/p.jsonl"],
     "bad.jsonl:1"),
    ("synth mismatch: wrong schema", ["synth", "mismatch", "--source", "wrong.jsonl", "--out", "out/p.jsonl"],
     "wrong.jsonl:1"),
    ("synth mismatch: invalid value", ["synth", "mismatch", "--source", "pairs.jsonl", "--out", "out/p.jsonl",
                                       "--pairs", "1"], "--pairs 1"),
    ("synth mix: missing", ["synth", "mix", "--inputs", "missing.jsonl", "--out_dir", "out"], "missing.jsonl"),
    ("synth mix: empty", ["synth", "mix", "--inputs", "empty.jsonl", "--out_dir", "out"], "empty.jsonl"),
    ("synth mix: malformed", ["synth", "mix", "--inputs", "bad.jsonl", "--out_dir", "out"], "bad.jsonl:1"),
    ("synth mix: wrong schema", ["synth", "mix", "--inputs", "wrong.jsonl", "--out_dir", "out"], "wrong.jsonl:1"),
    ("synth mix: invalid value", ["synth", "mix", "--inputs", "pairs.jsonl", "--out_dir", "out",
                                  "--heldout_fraction", "2"], "--heldout-fraction 2.0"),
    # reward
    ("reward: missing", ["reward", "--input", "missing.jsonl", "--output", "out/r.jsonl"], "missing.jsonl"),
    ("reward: empty", ["reward", "--input", "empty.jsonl", "--output", "out/r.jsonl"], "empty.jsonl"),
    ("reward: malformed", ["reward", "--input", "bad.jsonl", "--output", "out/r.jsonl"], "bad.jsonl:1"),
    ("reward: wrong schema", ["reward", "--input", "wrong.jsonl", "--output", "out/r.jsonl"], "wrong.jsonl:1"),
    ("reward: invalid value", ["reward", "--input", "pairs.jsonl", "--output", "out/r.jsonl", "--consistency", "x"],
     "--consistency 'x'"),
    # judge (its input is the text itself)
    ("judge: empty prompt", ["judge", "--prompt", " ", "--response_a", "a", "--response_b", "b"], "--prompt is empty"),
    ("judge: empty response", ["judge", "--prompt", "p", "--response_a", "a", "--response_b", ""],
     "--response_b is empty"),
    ("judge: missing response", ["judge", "--prompt", "p", "--response_a", "a"], "add --response-b"),
    ("judge: missing model folder", ["judge", *PAIR_FLAGS, "--model", "./nomodel"], "model folder ./nomodel"),
    ("judge: invalid value", ["judge", *PAIR_FLAGS, "--temperature", "-1"], "--temperature -1.0"),
    # eval and score
    ("eval: missing", ["eval", "--benchmark", "generic", "--data", "missing.jsonl", "--out", "out"], "missing.jsonl"),
    ("eval: empty", ["eval", "--benchmark", "generic", "--data", "empty.jsonl", "--out", "out"], "empty.jsonl"),
    ("eval: malformed", ["eval", "--benchmark", "generic", "--data", "bad.jsonl", "--out", "out"], "bad.jsonl:1"),
    ("eval: wrong schema", ["eval", "--benchmark", "generic", "--data", "wrong.jsonl", "--out", "out"],
     "wrong.jsonl:1"),
    ("eval: invalid value", ["eval", "--benchmark", "generic", "--data", "pairs.jsonl", "--out", "out",
                             "--temperature", "-1"], "--temperature -1.0"),
    ("score: missing", ["score", "norun"], "norun/run.json not found"),
    ("score: empty", ["score", "emptydir"], "emptydir/run.json not found"),
    ("score: malformed", ["score", "badrun"], "badrun/run.json"),
    ("score: wrong schema", ["score", "wrongrun"], "wrongrun/judgments.jsonl:1"),
    ("score: invalid value", ["score", "wrongrun", "--n_boot", "0"], "--n-boot 0"),
    ("score: a j1 label run", ["score", "labelrun"], "labelrun/run.json: a j1 label run; j1 score rescores"),
    ("eval: no benchmark", ["eval", "--data", "pairs.jsonl", "--out", "out"], "needs --benchmark, one of: autoj, "),
    ("eval: a split of a file", ["eval", "--benchmark", "generic", "--data", "pairs.jsonl", "--split", "test",
                                 "--out", "out"], "--split 'test': --data pairs.jsonl is a file"),
    # show
    ("show: missing", ["show", "norun"], "norun/results.jsonl not found"),
    ("show: empty", ["show", "emptydir"], "emptydir/results.jsonl not found"),
    ("show: malformed", ["show", "badshow"], "badshow/results.jsonl:1"),
    ("show: wrong schema", ["show", "wrongshow"], "wrongshow/results.jsonl:1: missing field 'command'"),
    ("show: invalid value", ["show", "wrongshow", "--limit", "-1"], "--limit -1"),
    # probe
    ("probe: missing", ["probe", "--data", "missing.jsonl"], "missing.jsonl"),
    ("probe: empty", ["probe", "--data", "empty.jsonl"], "empty.jsonl"),
    ("probe: malformed", ["probe", "--data", "bad.jsonl"], "bad.jsonl:1"),
    ("probe: wrong schema", ["probe", "--data", "wrong.jsonl"], "wrong.jsonl:1"),
    ("probe: invalid value", ["probe", "--data", "pairs.jsonl", "--batch_size", "0"], "--batch_size 0"),
    # attack
    ("attack: missing", ["attack", "--data", "missing.jsonl", "--out", "out"], "missing.jsonl"),
    ("attack: empty", ["attack", "--data", "empty.jsonl", "--out", "out"], "empty.jsonl"),
    ("attack: malformed", ["attack", "--data", "bad.jsonl", "--out", "out"], "bad.jsonl:1"),
    ("attack: wrong schema", ["attack", "--data", "wrong.jsonl", "--out", "out"], "wrong.jsonl:1"),
    ("attack: invalid value", ["attack", "--data", "pairs.jsonl", "--out", "out", "--limit", "0"], "--limit 0"),
    # consistency
    ("consistency: missing", ["consistency", "--data", "missing.jsonl", "--out", "out"], "missing.jsonl"),
    ("consistency: empty", ["consistency", "--data", "empty.jsonl", "--out", "out"], "empty.jsonl"),
    ("consistency: malformed", ["consistency", "--data", "bad.jsonl", "--out", "out"], "bad.jsonl:1"),
    ("consistency: wrong schema", ["consistency", "--data", "chosen_rejected.jsonl", "--out", "out"],
     "chosen_rejected.jsonl:1"),
    ("consistency: invalid value", ["consistency", "--data", "pairs.jsonl", "--out", "out", "--responses", "2"],
     "--responses 2"),
    # label
    ("label: missing", ["label", "--data", "missing.jsonl", "--out", "out"], "missing.jsonl"),
    ("label: empty", ["label", "--data", "empty.jsonl", "--out", "out"], "empty.jsonl"),
    ("label: malformed", ["label", "--data", "bad.jsonl", "--out", "out"], "bad.jsonl:1"),
    ("label: wrong schema", ["label", "--data", "wrong.jsonl", "--out", "out"], "wrong.jsonl:1: missing field 'prompt'"),
    ("label: one response", ["label", "--data", "one_response.jsonl", "--out", "out"],
     "one_response.jsonl:1: field 'responses' has 1"),
    ("label: invalid value", ["label", "--data", "pairs.jsonl", "--out", "out", "--keep", "some"], "--keep 'some'"),
    ("label: pointwise format", ["label", "--data", "pairs.jsonl", "--out", "out", "--format", "pos"], "j1 label"),
    # compare
    ("compare: missing", ["compare", "norun"], "norun"),
    ("compare: empty", ["compare", "emptydir"], "emptydir"),
    ("compare: malformed", ["compare", "badrun"], "badrun"),
    ("compare: wrong schema", ["compare", "wrongrun"], "wrongrun"),
    ("compare: invalid value", ["compare", "--json", "maybe"], "--json"),
    # export verl
    ("export: missing", ["export", "verl", "--pairs", "missing.jsonl", "--out", "out"], "missing.jsonl"),
    ("export: empty", ["export", "verl", "--pairs", "empty.jsonl", "--out", "out"], "empty.jsonl"),
    ("export: malformed", ["export", "verl", "--pairs", "bad.jsonl", "--out", "out"], "bad.jsonl:1"),
    ("export: wrong schema", ["export", "verl", "--pairs", "wrong.jsonl", "--out", "out"], "wrong.jsonl:1"),
    ("export: second file bad", ["export", "verl", "--pairs", "pairs.jsonl", "wrong.jsonl", "--out", "out"],
     "wrong.jsonl:1"),
    ("export: invalid value", ["export", "verl", "--pairs", "pairs.jsonl", "--out", "out", "--format", "x"],
     "--format 'x'"),
    # train and warmup
    ("train: missing", ["train", "--train_file", "missing.jsonl", "--output_dir", "out", *CPU], "missing.jsonl"),
    ("train: empty", ["train", "--train_file", "empty.jsonl", "--output_dir", "out", *CPU], "empty.jsonl"),
    ("train: malformed", ["train", "--train_file", "bad.jsonl", "--output_dir", "out", *CPU], "bad.jsonl:1"),
    ("train: wrong schema", ["train", "--train_file", "wrong.jsonl", "--output_dir", "out", *CPU], "wrong.jsonl:1"),
    ("train: invalid value", ["train", "--train_file", "pairs.jsonl", "--output_dir", "out", *CPU, "--max_pairs", "0"],
     "--max_pairs 0"),
    ("warmup: missing", ["warmup", "--train_file", "missing.jsonl", "--output_dir", "out", *CPU], "missing.jsonl"),
    ("warmup: empty", ["warmup", "--train_file", "empty.jsonl", "--output_dir", "out", *CPU], "empty.jsonl"),
    ("warmup: malformed", ["warmup", "--train_file", "bad.jsonl", "--output_dir", "out", *CPU], "bad.jsonl:1"),
    ("warmup: wrong schema", ["warmup", "--train_file", "wrong.jsonl", "--output_dir", "out", *CPU], "wrong.jsonl:1"),
    ("warmup: invalid value", ["warmup", "--train_file", "pairs.jsonl", "--output_dir", "out", *CPU, "--loss_tokens", "0"],
     "--loss_tokens 0"),
    # more invalid values, each caught before a model loads
    ("eval: invalid timeout", ["eval", "--benchmark", "generic", "--data", "pairs.jsonl", "--out", "out",
                               "--timeout", "0"], "--timeout 0.0"),
    ("attack: invalid top_p", ["attack", "--data", "pairs.jsonl", "--out", "out", "--top_p", "1.5"], "--top_p 1.5"),
    ("synth chat: invalid rewrite temperature", ["synth", "chat", "--source", "pairs.jsonl", "--out", "out/p.jsonl",
                                                 "--rewrite_samples", "1", "--rewrite_temperature", "-1"],
     "--rewrite-temperature -1.0"),
    ("warmup: invalid check temperature", ["warmup", "--train_file", "pairs.jsonl", "--output_dir", "out", *CPU,
                                           "--check_temperature", "-1"], "--check_temperature -1.0"),
    # demo (its inputs are a judge folder and its options)
    ("demo: missing judge", ["demo", "--minutes", "0", "--judge", "nojudge", "--out", "out"], "--judge 'nojudge'"),
    ("demo: out is a file", ["demo", "--minutes", "0", "--out", "pairs.jsonl"], "--out pairs.jsonl: is a file"),
    ("demo: malformed train args", ["demo", "--minutes", "5", "--train_args", "'open", "--out", "out"],
     "--train_args"),
    ("demo: invalid value", ["demo", "--minutes", "-1", "--out", "out"], "--minutes -1.0"),
    # every command: unknown flags and YAML keys in j1's words
    ("eval: unknown flag", ["eval", "--nosuchflag", "1"], "unknown option --nosuchflag"),
    ("eval: misspelt flag", ["eval", "--benchmark", "generic", "--data", "pairs.jsonl", "--out", "out",
                             "--no_progrss"], "unknown option --no_progrss (did you mean --no_progress?)"),
    ("train: unknown config key", ["train", "--config", "unknown.yaml"], "unknown.yaml: unknown key 'foo'"),
    ("judge: config not a mapping", ["judge", "--config", "notmapping.yaml"], "notmapping.yaml: must hold a YAML"),
    ("export: missing config", ["export", "verl", "--config", "nope.yaml"], "nope.yaml: no such file"),
]

LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (DEBUG|INFO|WARNING) ")


def _tree(root: Path) -> dict[str, int]:
    """Every path under ``root`` with its size (-1 for a folder)."""
    return {str(p.relative_to(root)): (-1 if p.is_dir() else p.stat().st_size) for p in sorted(root.rglob("*"))}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    for name, content in INPUTS.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as done:
        return done.code


@pytest.mark.parametrize("argv,phrase", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_leaves_nothing(argv, phrase, workdir, capsys, no_model_no_hub):
    before = _tree(workdir)
    assert _run(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip() and not LOG_LINE.match(line)]
    assert len(lines) == 1, err
    command = " ".join(["j1", *argv[: 2 if argv[0] in ("synth", "export") else 1]])
    assert lines[0].startswith(f"{command}: error: "), lines[0]
    assert phrase in lines[0], lines[0]
    assert _tree(workdir) == before  # no new file or folder, nothing changed


def test_every_command_is_in_the_table():
    assert {c[1][0] for c in CASES} == set(COMMANDS) - {"serve"}  # serve's edges: tests/serve


def test_unknown_key_names_the_closest(workdir, capsys):
    (workdir / "typo.yaml").write_text("train_file: pairs.jsonl\nlearning_rat: 1e-6\n")
    assert _run(["train", "--config", "typo.yaml"]) == 2
    assert capsys.readouterr().err.strip() == ("j1 train: error: typo.yaml: unknown key 'learning_rat' "
                                                "(did you mean learning_rate?)")


def test_a_config_file_still_works_with_flags_over_it(workdir):
    from j1.cli.common import parse
    from j1.judging.spec import JudgeSpec

    (workdir / "judge.yaml").write_text("prompt: from yaml\nresponse_a: a\nresponse_b: b\nmax_new_tokens: 7\n")
    cfg = parse(JudgeSpec, ["--config", "judge.yaml", "--max_new_tokens", "9"], prog="j1 judge")
    assert (cfg.prompt, cfg.max_new_tokens) == ("from yaml", 9)
    cfg = parse(JudgeSpec, ["--config=judge.yaml"], prog="j1 judge")
    assert cfg.max_new_tokens == 7


def test_an_uncached_hub_id_fails_fast_offline(tmp_path):
    # The real process, as a user runs it: one line, exit 2, well under 5 s (import time included).
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "OMP_NUM_THREADS": "1"}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "j1.cli.main", "judge", "--model", "nobody/no-such-model",
                           *PAIR_FLAGS], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    took = time.monotonic() - started
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "j1 judge: error: --model nobody/no-such-model: not a folder and not in the Hugging Face cache, and "
        "HF_HUB_OFFLINE is set; download it first (hf download nobody/no-such-model) or give a local folder"]
    assert took < 5.0, f"{took:.1f} s"


def test_an_unreachable_hub_fails_fast(monkeypatch):
    from j1 import hub

    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", "http://127.0.0.1:9")  # nothing listens
    started = time.monotonic()
    with pytest.raises(ValueError, match=r"--model nobody/no-such-model: .* http://127\.0\.0\.1:9 cannot be reached"):
        hub.check_hub_model("nobody/no-such-model")
    assert time.monotonic() - started < hub.HUB_CONNECT_TIMEOUT_S + 1
    for fine in (None, "smollm2-135m", "j1-135m", "./some/folder", "/abs/path"):
        hub.check_hub_model(fine)  # shipped, embedded and path-like names are not hub ids


def test_files_of_a_run_share_one_mode(tmp_path):
    from j1.runs.atomic import JsonlAppender, new_file_mode, write_json_atomic, write_text_atomic

    old = os.umask(0o022)
    try:
        assert new_file_mode() == 0o644
        write_json_atomic(tmp_path / "run.json", {"a": 1})
        write_text_atomic(tmp_path / "report.md", "x")
        with JsonlAppender(tmp_path / "judgments.jsonl") as out:
            out.write({"a": 1})
        (tmp_path / "plain.txt").write_text("x")
        os.umask(0o077)
        assert new_file_mode() == 0o600
        write_text_atomic(tmp_path / "private.md", "x")
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes == {"run.json": 0o644, "report.md": 0o644, "judgments.jsonl": 0o644, "plain.txt": 0o644,
                     "private.md": 0o600}


def test_hub_inputs_skip_served_models_and_check_datasets(monkeypatch):
    from types import SimpleNamespace

    from j1.cli import common

    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", "http://127.0.0.1:9")  # nothing listens
    # a served model is the server's business; a local-looking file is the reader's
    common.check_hub_inputs(SimpleNamespace(model="nobody/served", base_url="http://127.0.0.1:8000/v1",
                                            data="rows.jsonl"))
    with pytest.raises(ValueError, match=r"^--data nobody/rows: not a local file, and http://127\.0\.0\.1:9 cannot"):
        common.check_hub_inputs(SimpleNamespace(data="nobody/rows"))
    with pytest.raises(ValueError, match=r"^--sampler_model nobody/m: "):
        common.check_hub_inputs(SimpleNamespace(model="j1-135m", sampler_model="nobody/m"))
    # offline, a dataset is left to `datasets`, which reads its cache or fails at once
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    common.check_hub_inputs(SimpleNamespace(data="nobody/rows"))


def test_a_failed_start_leaves_no_half_made_folder(tmp_path):
    from j1.cli.common import removed_on_error

    # run.json and an empty judgments.jsonl are a start, not a result: the new folder goes
    new, kept = tmp_path / "new", tmp_path / "kept"
    with pytest.raises(RuntimeError), removed_on_error(new, kept):
        new.mkdir()
        (new / "run.json").write_text("{}")
        (new / "judgments.jsonl").write_text("")
        kept.mkdir()
        (kept / "run.json").write_text("{}")
        (kept / "judgments.jsonl").write_text('{"a": 1}\n')  # a judged prompt: kept, to be resumed
        raise RuntimeError("the model failed to load")
    assert not new.exists() and (kept / "judgments.jsonl").exists()


def test_eval_whose_model_fails_to_load_leaves_nothing(workdir, capsys):
    # A folder that is no model passes the checks and fails in the loader, after the run folder was made.
    (workdir / "notamodel").mkdir()
    (workdir / "d.jsonl").write_text(json.dumps({"prompt": "p", "chosen": "c", "rejected": "r"}) + "\n")
    before = _tree(workdir)
    assert _run(["eval", "--benchmark", "generic", "--data", "d.jsonl", "--out", "out", "--model", "./notamodel"]) == 2
    lines = [x for x in capsys.readouterr().err.splitlines() if not LOG_LINE.match(x)]
    assert len(lines) == 1 and lines[0].startswith("j1 eval: error: ") and "notamodel" in lines[0]
    assert _tree(workdir) == before


def test_every_file_of_an_export_has_one_mode(workdir):
    old = os.umask(0o022)
    try:
        assert _run(["export", "verl", "--pairs", "pairs.jsonl", "--out", "out"]) == 0
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (workdir / "out").iterdir()}
    assert modes == {"pairs.parquet": 0o644, "run.json": 0o644}  # the parquet was a mkstemp file (0600)
