"""A pair whose judge prompt cannot fit the model's context is refused before any model work: ``j1 eval``
counts it invalid with the reason and goes on; ``j1 judge`` and ``j1 probe`` say so in one line."""

from __future__ import annotations

import json

from j1.cli.main import main

LONG = "word " * 3000  # ~3,000 tokens: past the tiny model's 2,048-token context
PAIRS = [("What is 2 + 3?", "5", "6"), (LONG, "yes", "no"), ("Capital of France?", "Paris", "Lyon")]
REASON = "> the context of 2048 tokens"


def _pairs(path):
    with path.open("w") as fh:
        for i, (prompt, chosen, rejected) in enumerate(PAIRS):
            fh.write(json.dumps({"id": f"p{i}", "prompt": prompt, "chosen": chosen, "rejected": rejected,
                                 "kind": "test", "source": "tests", "meta": {}}) + "\n")
    return path


def _errors(capsys) -> list[str]:
    """stderr's lines but the weight loader's progress bar (transformers', drawn while the model loads)."""
    return [x for x in capsys.readouterr().err.splitlines() if x.strip() and "Loading weights" not in x]


def test_eval_counts_a_pair_too_long_as_invalid_and_goes_on(tiny_model, one_torch_thread, tmp_path):
    out = tmp_path / "out"
    assert main(["eval", "--model", str(tiny_model), "--benchmark", "generic", "--data", str(_pairs(tmp_path / "p.jsonl")),
                 "--out", str(out), "--max_new_tokens", "4", "--no_progress"]) == 0
    lines = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    errors = {(r["item"], r["slot"]): r["error"] for r in lines if r["error"]}
    assert set(errors) == {("p1", "AB"), ("p1", "BA")}  # both orders of the long pair, and nothing else
    assert all("the judge prompt has" in e and REASON in e for e in errors.values())
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n"] == 3  # the long pair is counted: invalid, as a judge that cannot read it


def test_judge_refuses_a_prompt_too_long_in_one_line(tiny_model, one_torch_thread, capsys):
    code = main(["judge", "--model", str(tiny_model), "--prompt", LONG, "--response_a", "yes", "--response_b", "no",
                 "--max_new_tokens", "4"])
    err = _errors(capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith("j1 judge: error: the judge prompt has") and REASON in err[0]


def test_probe_refuses_a_pair_too_long_in_one_line(tiny_model, one_torch_thread, tmp_path, capsys):
    code = main(["probe", "--model", str(tiny_model), "--data", str(_pairs(tmp_path / "p.jsonl"))])
    err = _errors(capsys)
    assert code == 2 and len(err) == 1 and REASON in err[0] and "(pair p1 order AB)" in err[0]


def test_eval_truncate_shortens_long_responses_to_fit(tiny_model, one_torch_thread, tmp_path):
    # a long response (not request) is shortened to fit, so the pair is judged; a long request still cannot be
    pairs = tmp_path / "p.jsonl"
    with pairs.open("w") as fh:
        for i, (prompt, chosen, rejected) in enumerate([("Which is right?", LONG, "no"), (LONG, "yes", "no")]):
            fh.write(json.dumps({"id": f"p{i}", "prompt": prompt, "chosen": chosen, "rejected": rejected,
                                 "kind": "test", "source": "tests", "meta": {}}) + "\n")
    out = tmp_path / "out"
    assert main(["eval", "--model", str(tiny_model), "--benchmark", "generic", "--data", str(pairs), "--out", str(out),
                 "--max_new_tokens", "4", "--no_progress", "--truncate", "left"]) == 0
    lines = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert {r["item"] for r in lines if r["error"]} == {"p1"}
    run = json.loads((out / "run.json").read_text())
    assert run["truncated"] == 1 and run["config"]["truncate"] == "left"


def test_judge_max_context_and_truncate(tiny_model, one_torch_thread, capsys):
    pair = ["--prompt", "Which is right?", "--response_a", LONG, "--response_b", "no", "--max_new_tokens", "4"]
    assert main(["judge", "--model", str(tiny_model), *pair]) == 2  # over the model's 2,048 positions
    assert REASON in _errors(capsys)[-1]
    assert main(["judge", "--model", str(tiny_model), *pair, "--truncate", "middle", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [o["order"] for o in out["orders"]] == ["AB", "BA"]
    # --max_context lowers the limit below the model's own
    assert main(["judge", "--model", str(tiny_model), "--prompt", "What is 2 + 3?", "--response_a", "5",
                 "--response_b", "6", "--max_new_tokens", "4", "--max_context", "64"]) == 2
    assert "> the context of 64 tokens" in _errors(capsys)[-1]
