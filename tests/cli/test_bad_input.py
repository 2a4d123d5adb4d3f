"""Bad input to every command: one line naming the file, line and field; exit 2; no traceback; no
empty output folder; no hub request for a path that looks local; no model loaded (issue 26).

Each case runs the real CLI (``j1.cli.main.main``) in-process, so a traceback would surface as an
exception here. Loading a model or a hub dataset raises AssertionError (not an error the CLI
reports), so a case that reached one fails.
"""

from __future__ import annotations

import json
import re

import pytest

from j1.cli.main import main

CPU = ["--use_cpu", "true", "--bf16", "false", "--report_to", "none"]
NOWHERE = "http://127.0.0.1:9/v1"  # nothing listens: a case that reached the server would fail differently
GOOD_PAIR = {"id": "p1", "prompt": "2+2?", "chosen": "4", "rejected": "5", "kind": "k", "source": "s"}
GOOD_ROLLOUT = {"pair_id": "p", "order": "AB", "label": "A", "completion": "<think>t</think><answer>[[A]]</answer>"}

# name -> file content (str: text; bytes: raw)
FILES = {
    "empty.jsonl": "",
    "blank.jsonl": "\n\n",
    "math_badjson.jsonl": '{"question": "1+1?", "answer": "#### 2"}\n{bad json\n',
    "math_nofield.jsonl": '{"question": "1+1?", "answer": "#### 2"}\n{"question": "2+2?"}\n',
    "math_notstr.jsonl": '{"question": 7, "answer": "#### 2"}\n',
    "notutf8.jsonl": b'{"question": "1+1?", "answer": "#### 2"}\n{"question": "\xff"}\n',
    "array.jsonl": '[1, 2]\n',
    "chat_nofield.jsonl": '{"instruction": "hi"}\n{"x": 1}\n',
    "pairs_nofield.jsonl": json.dumps(GOOD_PAIR) + "\n" + '{"id": "p2", "prompt": "q", "chosen": "a"}\n',
    "pairs.jsonl": json.dumps(GOOD_PAIR) + "\n",
    "pairs_badjson.jsonl": json.dumps(GOOD_PAIR) + "\n{bad json\n",
    "pairs_badthoughts.jsonl": json.dumps(GOOD_PAIR) + "\n" + json.dumps({**GOOD_PAIR, "thoughts": {"A": "x"}}) + "\n",
    "rollouts_badlabel.jsonl": json.dumps(GOOD_ROLLOUT) + "\n" + json.dumps({**GOOD_ROLLOUT, "label": "C"}) + "\n",
    "rollouts_nofield.jsonl": json.dumps({k: v for k, v in GOOD_ROLLOUT.items() if k != "completion"}) + "\n",
    "bad.json": '{"rows": [1,\n',
    "bad.parquet": "not parquet",
    "eval_nofield.jsonl": '{"prompt": "p", "chosen": "c", "rejected": "r"}\n{"prompt": "p", "chosen": "c"}\n',
    "bad.yaml": "learning_rate: [1\n",
    "unknown.yaml": "source: x.jsonl\nout: o.jsonl\nno_such_key: 1\n",
}

# (case id, argv, the error line after "j1 CMD: error: " with {d} = the input folder, output that must not exist)
CASES = [
    ("synth math: missing source", ["synth", "math", "--source", "{d}/missing.jsonl", "--out", "{o}/p.jsonl",
                                    "--base_url", NOWHERE],
     "source {d}/missing.jsonl: no such file", "{o}"),
    ("synth math: malformed line", ["synth", "math", "--source", "{d}/math_badjson.jsonl", "--out", "{o}/p.jsonl",
                                    "--base_url", NOWHERE],
     "{d}/math_badjson.jsonl:2: not valid JSON (Expecting property name enclosed in double quotes)", "{o}"),
    ("synth math: row without a field", ["synth", "math", "--source", "{d}/math_nofield.jsonl", "--out",
                                         "{o}/p.jsonl", "--base_url", NOWHERE],
     "{d}/math_nofield.jsonl:2: missing field 'answer'", "{o}"),
    ("synth math: field of the wrong type", ["synth", "math", "--source", "{d}/math_notstr.jsonl", "--out",
                                             "{o}/p.jsonl", "--base_url", NOWHERE],
     "{d}/math_notstr.jsonl:1: field 'question' must be str, got int", "{o}"),
    ("synth math: not UTF-8", ["synth", "math", "--source", "{d}/notutf8.jsonl", "--out", "{o}/p.jsonl",
                               "--base_url", NOWHERE],
     "{d}/notutf8.jsonl:2: not UTF-8 text (byte 15 of the line)", "{o}"),
    ("synth math: a line that is not an object", ["synth", "math", "--source", "{d}/array.jsonl", "--out",
                                                  "{o}/p.jsonl", "--base_url", NOWHERE],
     "{d}/array.jsonl:1: expected a JSON object, got list", "{o}"),
    ("synth math: empty source", ["synth", "math", "--source", "{d}/empty.jsonl", "--out", "{o}/p.jsonl",
                                  "--base_url", NOWHERE],
     "source {d}/empty.jsonl: no problems (it has no rows)", "{o}"),
    ("synth math: malformed .json", ["synth", "math", "--source", "{d}/bad.json", "--out", "{o}/p.jsonl",
                                     "--base_url", NOWHERE],
     "{d}/bad.json:2: not valid JSON (Expecting value)", "{o}"),
    ("synth math: not a parquet file", ["synth", "math", "--source", "{d}/bad.parquet", "--out", "{o}/p.jsonl",
                                        "--base_url", NOWHERE],
     "{d}/bad.parquet: not a readable Parquet file", "{o}"),
    ("synth math: bad config value", ["synth", "math", "--source", "{d}/empty.jsonl", "--out", "{o}/p.jsonl",
                                      "--samples", "1"],
     "--samples 1: a pair needs a right and a wrong sample; use >= 2", "{o}"),
    ("synth math: not a number", ["synth", "math", "--source", "{d}/empty.jsonl", "--out", "{o}/p.jsonl",
                                  "--samples", "many"],
     "argument --samples: invalid int value: 'many' (j1 synth math --help lists the options)", "{o}"),
    ("synth math: unknown flag", ["synth", "math", "--source", "{d}/empty.jsonl", "--out", "{o}/p.jsonl",
                                  "--smaples", "4"],
     "unknown option --smaples (did you mean --samples?)", "{o}"),
    ("synth math: missing config file", ["synth", "math", "--config", "{d}/nope.yaml"],
     "{d}/nope.yaml: no such file or folder", None),
    ("synth math: malformed config file", ["synth", "math", "--config", "{d}/bad.yaml"],
     "while parsing a flow sequence in \"{d}/bad.yaml\", line 1, column 16", None),
    ("synth math: unknown config key", ["synth", "math", "--config", "{d}/unknown.yaml"],
     "{d}/unknown.yaml: unknown key 'no_such_key'", None),
    ("synth chat: missing source", ["synth", "chat", "--source", "{d}/missing.jsonl", "--out", "{o}/p.jsonl",
                                    "--base_url", NOWHERE],
     "source {d}/missing.jsonl: no such file", "{o}"),
    ("synth chat: row without a prompt", ["synth", "chat", "--source", "{d}/chat_nofield.jsonl", "--out",
                                          "{o}/p.jsonl", "--base_url", NOWHERE],
     "{d}/chat_nofield.jsonl:2: no prompt field (looked for messages, conversation, instruction, prompt, "
     "question, query, text); fields are ['x']; name it with --prompt-field", "{o}"),
    ("synth chat: empty source", ["synth", "chat", "--source", "{d}/blank.jsonl", "--out", "{o}/p.jsonl",
                                  "--base_url", NOWHERE],
     "source {d}/blank.jsonl: no prompts (it has no rows, or only empty prompts)", "{o}"),
    ("synth chat: bad config value", ["synth", "chat", "--source", "{d}/blank.jsonl", "--out", "{o}/p.jsonl",
                                      "--samples", "2"],
     "--samples 2: chat pairs use one answer per prompt; use --samples 1", "{o}"),
    ("synth mismatch: missing source", ["synth", "mismatch", "--source", "{d}/missing.jsonl", "--out",
                                        "{o}/p.jsonl"],
     "source {d}/missing.jsonl: no such file", "{o}"),
    ("synth mismatch: empty source", ["synth", "mismatch", "--source", "{d}/empty.jsonl", "--out", "{o}/p.jsonl"],
     "source {d}/empty.jsonl: no problems (it has no rows)", "{o}"),
    ("synth mismatch: boxed share out of range", ["synth", "mismatch", "--source", "{d}/empty.jsonl", "--out",
                                                  "{o}/p.jsonl", "--boxed_share", "1.5"],
     "--boxed_share 1.5: must be in [0, 1]", "{o}"),
    ("synth thoughts: missing pairs", ["synth", "thoughts", "--pairs", "{d}/missing.jsonl", "--out", "{o}/t.jsonl"],
     "{d}/missing.jsonl: no such file", "{o}"),
    ("synth thoughts: row without a field", ["synth", "thoughts", "--pairs", "{d}/pairs_nofield.jsonl", "--out",
                                             "{o}/t.jsonl"],
     "{d}/pairs_nofield.jsonl:2: missing field 'rejected'", "{o}"),
    ("synth thoughts: malformed line", ["synth", "thoughts", "--pairs", "{d}/pairs_badjson.jsonl", "--out", "{o}/t.jsonl"],
     "{d}/pairs_badjson.jsonl:2: not valid JSON (Expecting property name enclosed in double quotes)", "{o}"),
    ("synth thoughts: bad thoughts field", ["synth", "thoughts", "--pairs", "{d}/pairs_badthoughts.jsonl", "--out",
                                            "{o}/t.jsonl"],
     "{d}/pairs_badthoughts.jsonl:2: field 'thoughts' must hold a string 'A' and a string 'B' (the thought for each "
     "letter the better response is shown under)", "{o}"),
    ("synth thoughts: share out of range", ["synth", "thoughts", "--pairs", "{d}/pairs.jsonl", "--out", "{o}/t.jsonl",
                                            "--reference_share", "2"],
     "--reference_share 2.0: must be in [0, 1]", "{o}"),
    ("synth mix: missing input", ["synth", "mix", "--inputs", "{d}/missing.jsonl", "--out_dir", "{o}"],
     "--inputs '{d}/missing.jsonl': no such pair file {d}/missing.jsonl", "{o}"),
    ("synth mix: row without a field", ["synth", "mix", "--inputs", "{d}/pairs_nofield.jsonl", "--out_dir", "{o}"],
     "{d}/pairs_nofield.jsonl:2: missing field 'rejected'", "{o}"),
    ("synth mix: empty input", ["synth", "mix", "--inputs", "{d}/empty.jsonl", "--out_dir", "{o}"],
     "--inputs '{d}/empty.jsonl': {d}/empty.jsonl has no pairs", "{o}"),
    ("synth mix: bad amount", ["synth", "mix", "--inputs", "{d}/pairs.jsonl:lots", "--out_dir", "{o}"],
     "--inputs '{d}/pairs.jsonl:lots': the part after ':' must be a pair count or 'all'", "{o}"),
    ("synth mix: more than there is", ["synth", "mix", "--inputs", "{d}/pairs.jsonl:2", "--out_dir", "{o}"],
     "--inputs '{d}/pairs.jsonl:2': asks for 2 pairs but {d}/pairs.jsonl has 1 new ones; lower N or use "
     "{d}/pairs.jsonl:all", "{o}"),
    ("warmup: missing train file", ["warmup", "--train_file", "{d}/missing.jsonl", "--output_dir", "{o}", *CPU],
     "{d}/missing.jsonl: no such file or folder", "{o}"),
    ("warmup: empty train file", ["warmup", "--train_file", "{d}/empty.jsonl", "--output_dir", "{o}", *CPU],
     "{d}/empty.jsonl: no pairs", "{o}"),
    ("warmup: bad config value", ["warmup", "--train_file", "{d}/pairs.jsonl", "--output_dir", "{o}", *CPU,
                                  "--verdicts", "best"],
     "--verdicts 'best': choose one of ['random', 'gold', 'rationale']", "{o}"),
    ("warmup: adapter without LoRA", ["warmup", "--train_file", "{d}/pairs.jsonl", "--output_dir", "{o}", *CPU,
                                      "--init_adapter", "j1-135m"],
     "--init_adapter needs --use_peft", "{o}"),
    ("train: missing train file", ["train", "--train_file", "{d}/missing.jsonl", "--output_dir", "{o}", *CPU],
     "{d}/missing.jsonl: no such file or folder", "{o}"),
    ("train: malformed line", ["train", "--train_file", "{d}/math_badjson.jsonl", "--output_dir", "{o}", *CPU],
     "{d}/math_badjson.jsonl:1: missing field 'prompt'", "{o}"),
    ("train: row without a field", ["train", "--train_file", "{d}/pairs_nofield.jsonl", "--output_dir", "{o}", *CPU],
     "{d}/pairs_nofield.jsonl:2: missing field 'rejected'", "{o}"),
    ("train: empty train file", ["train", "--train_file", "{d}/empty.jsonl", "--output_dir", "{o}", *CPU],
     "{d}/empty.jsonl: no pairs", "{o}"),
    ("train: bad config value", ["train", "--train_file", "{d}/pairs.jsonl", "--output_dir", "{o}", *CPU,
                                 "--formulation", "pairwise"],
     "--formulation 'pairwise': choose one of ['pav', 'pas', 'pavs', 'pos', 'multitask']", "{o}"),
    ("train: missing checkpoint", ["train", "--train_file", "{d}/pairs.jsonl", "--output_dir", "{o}", *CPU,
                                   "--resume_from_checkpoint", "{d}/nockpt"],
     "--resume_from_checkpoint {d}/nockpt: not a folder", "{o}"),
    ("train: no checkpoint to resume", ["train", "--train_file", "{d}/pairs.jsonl", "--output_dir", "{o}", *CPU,
                                        "--resume_from_checkpoint", "latest"],
     "--resume_from_checkpoint latest: no complete checkpoint-* folder in {o}", "{o}"),
    ("reward: missing input", ["reward", "--input", "{d}/missing.jsonl", "--output", "{o}/r.jsonl"],
     "{d}/missing.jsonl: no such file or folder", "{o}"),
    ("reward: bad label", ["reward", "--input", "{d}/rollouts_badlabel.jsonl", "--output", "{o}/r.jsonl"],
     "{d}/rollouts_badlabel.jsonl:2: label 'C': must be 'A' or 'B' (the better response, in AB naming)", "{o}"),
    ("reward: row without a field", ["reward", "--input", "{d}/rollouts_nofield.jsonl", "--output", "{o}/r.jsonl"],
     "{d}/rollouts_nofield.jsonl:1: missing field 'completion'", "{o}"),
    ("reward: empty input", ["reward", "--input", "{d}/empty.jsonl", "--output", "{o}/r.jsonl"],
     "{d}/empty.jsonl: no rollouts (the file has no rows)", "{o}"),
    ("reward: bad config value", ["reward", "--input", "{d}/empty.jsonl", "--output", "{o}/r.jsonl",
                                  "--format", "pairwise"],
     "--format 'pairwise' is not a judge format; choose one of [", "{o}"),
    ("eval: missing data", ["eval", "--benchmark", "generic", "--data", "{d}/missing.jsonl", "--out", "{o}",
                            "--base_url", NOWHERE, "--model", "m"],
     "--data {d}/missing.jsonl: no such file (and not a Hugging Face dataset id 'owner/name')", "{o}"),
    ("eval: empty data", ["eval", "--benchmark", "generic", "--data", "{d}/empty.jsonl", "--out", "{o}",
                          "--base_url", NOWHERE, "--model", "m"],
     "--data {d}/empty.jsonl: no generic items", "{o}"),
    ("eval: row without a field", ["eval", "--benchmark", "generic", "--data", "{d}/eval_nofield.jsonl", "--out",
                                   "{o}", "--base_url", NOWHERE, "--model", "m"],
     "{d}/eval_nofield.jsonl:2: missing field 'rejected'", "{o}"),
    ("eval: bad config value", ["eval", "--benchmark", "judgebnch", "--data", "{d}/empty.jsonl", "--out", "{o}"],
     "--benchmark 'judgebnch': unknown; choose one of", "{o}"),
    ("score: not a run folder", ["score", "{d}"],
     "{d}/run.json not found; is {d} a j1 eval, consistency or attack run folder?", None),
    ("score: malformed judgments", ["score", "{d}/run"],
     "{d}/run/judgments.jsonl:2: missing field 'slot'", None),
    ("probe: missing data", ["probe", "--data", "{d}/missing.jsonl"],
     "{d}/missing.jsonl: no such file or folder", None),
    ("probe: empty data", ["probe", "--data", "{d}/empty.jsonl"],
     "{d}/empty.jsonl: no pairs", None),
    ("probe: missing model folder", ["probe", "--data", "{d}/pairs.jsonl", "--model", "{d}/nomodel"],
     "model folder {d}/nomodel not found", None),
    ("serve: missing model folder", ["serve", "--model", "{d}/nomodel"],
     "model folder {d}/nomodel not found", None),
    ("serve: unset key variable", ["serve", "--api_key_env", "J1_TEST_NO_SUCH_VARIABLE"],
     "--api_key_env J1_TEST_NO_SUCH_VARIABLE: that variable is unset or empty", None),
    ("judge: unreachable server", ["judge", "--base_url", NOWHERE, "--model", "m", "--max_retries", "0", "--prompt",
                                   "p", "--response-a", "a", "--response-b", "b"],
     NOWHERE + " (POST /chat/completions): connection error after 1 attempts", None),
    ("judge: missing model folder", ["judge", "--model", "{d}/nomodel", "--prompt", "p", "--response-a", "a",
                                     "--response-b", "b"],
     "model folder {d}/nomodel not found", None),
]

LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (DEBUG|INFO|WARNING) ")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad-input")
    for name, content in FILES.items():
        path = folder / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    # an eval run folder whose judgments.jsonl has a line without its slot
    run = folder / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"config": {"benchmark": "generic", "format": "pav", "samples": 1,
                                                         "seed": 0}}))
    line = {"item": "i", "category": "c", "pairs": [["A", "B", "A"]], "slot": "AB", "texts": ["x"]}
    (run / "judgments.jsonl").write_text(json.dumps(line) + "\n" + json.dumps({k: v for k, v in line.items()
                                                                                if k != "slot"}) + "\n")
    return folder


def _run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as done:  # argparse-level errors exit from the parser
        return done.code


@pytest.mark.parametrize("argv,message,leftover", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line(argv, message, leftover, inputs, tmp_path, capsys, no_model_no_hub):
    out = tmp_path / "out"
    fill = {"d": str(inputs), "o": str(out)}
    command = " ".join(["j1", *argv[: 2 if argv[0] == "synth" else 1]])
    assert _run([a.format(**fill) for a in argv]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip() and not LOG_LINE.match(line)]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{command}: error: " + message.format(**fill)), lines[0]
    if leftover is not None:
        assert not out.exists(), sorted(out.rglob("*"))


def test_debug_shows_the_traceback(inputs, tmp_path):
    from j1.schema import RowError

    with pytest.raises(RowError, match=r"math_nofield\.jsonl:2: missing field 'answer'"):
        main(["synth", "math", "--source", str(inputs / "math_nofield.jsonl"), "--out", str(tmp_path / "p.jsonl"),
              "--base_url", NOWHERE, "--debug"])


def test_a_local_looking_source_never_asks_the_hub(tmp_path, no_model_no_hub):
    from j1.data.sources import load_chat_prompts, looks_local

    # `no_model_no_hub` makes a hub request fail the test with AssertionError, not FileNotFoundError.
    for source in ("missing.jsonl", "data/sub/missing", "./missing", str(tmp_path / "x")):
        assert looks_local(source)
        with pytest.raises(FileNotFoundError, match="no such file"):
            load_chat_prompts(source)
    # an HF id (owner/name[:config]) may go to the hub
    assert not looks_local("openai/gsm8k:main") and not looks_local("tatsu-lab/alpaca")


def test_removed_on_error_keeps_what_holds_files(tmp_path):
    from j1.cli.common import removed_on_error

    new, kept, existing = tmp_path / "a" / "b", tmp_path / "k", tmp_path / "e"
    existing.mkdir()
    with pytest.raises(ValueError), removed_on_error(new, kept, existing):
        (new / "c").mkdir(parents=True)
        kept.mkdir()
        (kept / "f").write_text("x")
        raise ValueError("boom")
    # the whole new, empty chain goes; a folder with a file and one that was there before stay
    assert not (tmp_path / "a").exists() and (kept / "f").exists() and existing.is_dir()


def test_the_installed_command_prints_one_line(tmp_path):
    # the real process: exit status 2 and one line on stderr, no traceback
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "j1.cli.main", "synth", "math", "--source",
                           str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o" / "p.jsonl")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1] == f"j1 synth math: error: source {tmp_path}/missing.jsonl: no such file"
    assert "Traceback" not in done.stderr and not (tmp_path / "o").exists()
