"""Criteria and a reference answer reach the engine (issue 54): against the scripted engine (fake_openai), from
``j1 judge``, ``j1 eval``, ``/v1/judge``, ``/get_reward``, the API and TRL's reward, each fenced under the
prompt's one nonce in the prompt the engine gets; ``--show_prompt`` prints them; a judge whose manifest never
read an input warns once."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import shutil
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer

from j1.cli.main import main
from j1.judging.judges import SHIPPED_DIR, read_manifest, write_manifest

CRITERIA = "Judge the security of the code only."
REFERENCE = "Use a parameterised query."


def _reply(messages, index, body):
    prompt = messages[-1]["content"]
    return "A]]</answer>" if prompt.endswith("[[") else "<think>t</think><answer>[[A]]</answer>"


@pytest.fixture
def judge_dir(tmp_path) -> Path:
    """j1-135m's manifest (digest wording, a fixed thought) named ``my-judge``; the engine serves its weights."""
    folder = tmp_path / "my-judge"
    folder.mkdir()
    shutil.copy(SHIPPED_DIR / "j1-135m" / "judge.json", folder / "judge.json")
    write_manifest(folder, dataclasses.replace(read_manifest(folder), name="my-judge", metrics={}))
    return folder


@pytest.fixture
def engine():
    with FakeOpenAIServer(_reply, model="my-judge") as server:
        yield server


def fenced(text: str, name: str) -> str | None:
    """The content of the ``name`` fence of a rendered prompt, checked to carry the request's nonce; None without."""
    request = re.search(r"<request-(\w{8})>", text)
    found = re.search(rf"<{name}-(\w{{8}})>\n(.*?)\n</{name}-\1>", text, re.S)
    if found is None:
        return None
    assert request and found.group(1) == request.group(1), f"the {name} fence has a nonce of its own"
    return found.group(2)


def sent(engine) -> list[str]:
    """The prompt text of every request the engine got (completions: rendered with the judge's template)."""
    assert engine.requests and {r["_endpoint"] for r in engine.requests} == {"completions"}
    return [r["prompt"] for r in engine.requests]


def test_j1_judge_sends_both_fenced(engine, judge_dir):
    assert main(["judge", "--base-url", engine.base_url, "--judge", str(judge_dir), "--prompt", "q",
                 "--response-a", "a", "--response-b", "b", "--criteria", CRITERIA, "--reference", REFERENCE]) == 0
    prompts = sent(engine)
    assert len(prompts) == 2  # both orders, each with both inputs
    assert all(fenced(p, "criteria") == CRITERIA and fenced(p, "reference") == REFERENCE for p in prompts)


def test_j1_judge_show_prompt_prints_both_fenced_and_loads_nothing(capsys, tmp_path):
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text("criteria: Is the query safe?\nlevels:\n  - {score: 10, name: safe, description: No injection.}\n"
                      "  - {score: 0, name: unsafe, description: Injectable.}\n")
    assert main(["judge", "--prompt", "q", "--response-a", "a", "--response-b", "b", "--criteria", CRITERIA,
                 "--reference", REFERENCE, "--show_prompt"]) == 0
    out = capsys.readouterr().out
    assert out.count("=== order") == 2 and fenced(out, "criteria") == CRITERIA and fenced(out, "reference") == REFERENCE
    assert main(["judge", "--prompt", "q", "--response-a", "a", "--format", "pos", "--criteria_file", str(rubric),
                 "--show_prompt", "--json"]) == 0
    (prompt,) = json.loads(capsys.readouterr().out)["prompts"]
    user = prompt["messages"][1]["content"]
    assert prompt["slot"] == "A" and fenced(user, "criteria") == ("Is the query safe?\nScore levels (0-10):\n"
                                                                  "10 (safe): No injection.\n0 (unsafe): Injectable.")


@pytest.mark.parametrize("args, message", [
    (["--criteria", "x", "--criteria_file", "f.txt"], "--criteria and --criteria_file both give the criteria"),
    (["--reference", "  "], "--reference is empty"),
    (["--criteria_file", "missing.yaml"], "missing.yaml"),
])
def test_bad_criteria_flags_are_one_line(args, message, capsys):
    with pytest.raises(SystemExit) as done:
        main(["judge", "--prompt", "q", "--response-a", "a", "--response-b", "b", "--show_prompt", *args])
    err = capsys.readouterr().err
    assert done.value.code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_j1_eval_sends_a_pair_files_inputs_with_use_reference(engine, judge_dir, tmp_path):
    data = tmp_path / "pairs.jsonl"
    data.write_text(json.dumps({"prompt": "2+2?", "chosen": "4", "rejected": "5", "reference": "4",
                                "criteria": {"criteria": "Exact arithmetic.", "levels": {10: "Right.", 0: "Wrong."}}})
                    + "\n")
    served = ["--base-url", engine.base_url, "--judge", str(judge_dir), "--no_progress"]
    assert main(["eval", "--benchmark", "generic", "--data", str(data), "--out", str(tmp_path / "off"), *served]) == 0
    assert not any(fenced(p, "reference") or fenced(p, "criteria") for p in sent(engine))  # off by default here
    engine.requests.clear()
    assert main(["eval", "--benchmark", "generic", "--data", str(data), "--out", str(tmp_path / "on"),
                 "--use_reference", *served]) == 0
    prompts = sent(engine)
    assert len(prompts) == 2 and all(fenced(p, "reference") == "4" for p in prompts)
    assert all(fenced(p, "criteria").startswith("Exact arithmetic.\nScore levels (0-10):\n10: Right.") for p in prompts)
    run = json.loads((tmp_path / "on" / "run.json").read_text())
    assert run["inputs"] == {"criteria": 1, "reference": 1} and run["config"]["use_reference"] is True
    (line,) = (tmp_path / "on" / "results.jsonl").read_text().splitlines()
    assert json.loads(line)["reference"] == "4"  # results.jsonl shows what the judge read


def test_serve_v1_judge_and_get_reward_send_them_per_item(engine, judge_dir):
    from fastapi.testclient import TestClient

    import j1
    from j1.serve.app import ServerSettings, create_app

    judge = j1.load_judge(str(judge_dir), base_url=engine.base_url)
    with TestClient(create_app(judge, ServerSettings())) as client:
        one = client.post("/v1/judge", json={"prompt": "q", "response_a": "a", "response_b": "b",
                                             "criteria": CRITERIA, "reference": REFERENCE})
        assert one.status_code == 200, one.text
        prompts = sent(engine)
        assert len(prompts) == 2 and all(fenced(p, "criteria") == CRITERIA and fenced(p, "reference") == REFERENCE
                                         for p in prompts)
        engine.requests.clear()
        body = {"query": ["q first", "q second"], "prompts": ["q ", "q "], "labels": ["ref one", "ref two"],
                "criteria": CRITERIA, "reference": ["gold one", None]}
        answer = client.post("/get_reward", json=body)
        assert answer.status_code == 200, answer.text
        by_item = {("first" in p): p for p in sent(engine)}  # one prompt per item kept (the other order alike)
        assert fenced(by_item[True], "reference") == "gold one" and fenced(by_item[False], "reference") is None
        assert fenced(by_item[True], "criteria") == fenced(by_item[False], "criteria") == CRITERIA
        bad = client.post("/get_reward", json={**body, "reference": ["only one"]})
        assert bad.status_code == 400 and "'reference' has 1 items and 'query' 2" in bad.json()["error"]["message"]
    judge.close()


def test_the_api_sends_them_and_warns_once_for_a_judge_never_trained_with_them(engine, judge_dir, caplog):
    import j1

    caplog.set_level(logging.WARNING, logger="j1.judging.judges")
    with j1.load_judge(str(judge_dir), base_url=engine.base_url) as judge:
        judge.compare("q", "a", "b", criteria=CRITERIA, reference=REFERENCE)
        judge.compare_many([{"prompt": "q", "response_a": "a", "response_b": "b", "reference": "other"}],
                           criteria=CRITERIA)
    prompts = sent(engine)
    assert [fenced(p, "reference") for p in prompts] == [REFERENCE, REFERENCE, "other", "other"]
    assert all(fenced(p, "criteria") == CRITERIA for p in prompts)
    warned = [r.getMessage() for r in caplog.records if "never trained to read" in r.getMessage()]
    assert len(warned) == 2 and any("a criteria" in w for w in warned) and any("a reference" in w for w in warned)


def test_trl_reward_sends_criteria_and_the_gold_column_apart_from_the_reference_response(engine, judge_dir):
    from j1.integrations.trl import JudgeReward

    reward = JudgeReward(str(judge_dir), base_url=engine.base_url, criteria=CRITERIA, gold_column="gold")
    rewards = reward(prompts=["q", "q"], completions=["mine", "yours"], reference=["theirs", "theirs"],
                     gold=["the gold", None])
    reward.close()
    assert len(rewards) == 2
    by_completion = {("mine" in p): p for p in sent(engine)}
    # the reference response is judged as a response; the gold answer is read in its own fence
    assert fenced(by_completion[True], "response_A") in ("mine", "theirs")
    assert fenced(by_completion[True], "reference") == "the gold" and fenced(by_completion[False], "reference") is None
    assert all(fenced(p, "criteria") == CRITERIA for p in sent(engine))
    with pytest.raises(ValueError, match="name two columns"):
        JudgeReward("j1-135m", gold_column="reference")
    with pytest.raises(KeyError, match="'gold'"):
        JudgeReward(str(judge_dir), base_url=engine.base_url, gold_column="gold")(prompts=["q"], completions=["a"],
                                                                                  reference=["b"])
