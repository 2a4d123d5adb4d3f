"""A served judge keeps its manifest (``--judge`` with ``--base-url``): what the engine is asked (its served
name, the prompt in the judge's wording with its prefill, the token budget, the stop at the answer) comes
from judge.json, and changing judge.json changes the requests. Against the scripted engine (fake_openai),
from every judging command, the API and TRL's reward."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer

from j1.cli.main import main
from j1.judging.judges import SHIPPED_DIR, read_manifest, write_manifest

REPO = Path(__file__).resolve().parents[1]
HELDOUT = REPO / "src/j1/assets/data/heldout_mismatch.jsonl"
DIGEST_QUOTE = "<starts-"  # the digest wording's fenced quote of each part's first words


def _reply(messages, index, body):
    # Continues the prefill when the prompt ends with it, else writes a whole answer.
    prompt = messages[-1]["content"]
    return "A]]</answer>" if prompt.endswith("[[") else "<think>t</think><answer>[[A]]</answer>"


@pytest.fixture
def judge_dir(tmp_path) -> Path:
    """A judge folder as j1 export writes it, named ``my-judge``: j1-135m's manifest (digest wording, fixed
    thought, 8 tokens) on the embedded base; the engine serves the weights, so none are needed here."""
    folder = tmp_path / "my-judge"
    folder.mkdir()
    shutil.copy(SHIPPED_DIR / "j1-135m" / "judge.json", folder / "judge.json")
    import dataclasses

    write_manifest(folder, dataclasses.replace(read_manifest(folder), name="my-judge", metrics={}))
    return folder


@pytest.fixture
def engine():
    with FakeOpenAIServer(_reply, model="my-judge") as server:
        yield server


def _pairs(tmp_path, n=2) -> Path:
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(HELDOUT.read_text().splitlines(keepends=True)[:n]))
    return path


def test_eval_asks_the_engine_as_the_manifest_says_and_follows_its_changes(engine, judge_dir, tmp_path):
    import dataclasses

    manifest = read_manifest(judge_dir)
    data = _pairs(tmp_path)
    assert main(["eval", "--benchmark", "generic", "--data", str(data), "--base-url", engine.base_url,
                 "--judge", str(judge_dir), "--out", str(tmp_path / "a"), "--no_progress"]) == 0
    first = list(engine.requests)
    assert len(first) == 4 and {r["model"] for r in first} == {"my-judge"}  # 2 pairs x 2 orders
    assert {r["_endpoint"] for r in first} == {"completions"}  # rendered here with the judge's template
    assert all(r["prompt"].endswith(manifest.assistant_prefill) and DIGEST_QUOTE in r["prompt"] for r in first)
    assert {r["max_tokens"] for r in first} == {8} and {tuple(r["stop"]) for r in first} == {("</answer>",)}
    run = json.loads((tmp_path / "a" / "run.json").read_text())
    assert run["judge_manifest"]["assistant_prefill"] == manifest.assistant_prefill
    assert json.loads((tmp_path / "a" / "metrics.json").read_text())["overall"]["invalid_rate"] == 0.0  # all read

    # The manifest changed: plain wording, no prefill, a longer budget. The requests change with it.
    write_manifest(judge_dir, dataclasses.replace(manifest, template="full", assistant_prefill=None,
                                                  max_new_tokens=64))
    engine.requests.clear()
    assert main(["eval", "--benchmark", "generic", "--data", str(data), "--base-url", engine.base_url,
                 "--judge", str(judge_dir), "--out", str(tmp_path / "b"), "--no_progress"]) == 0
    second = list(engine.requests)
    assert {r["max_tokens"] for r in second} == {64}
    assert all(r["prompt"].endswith("<|im_start|>assistant\n") and DIGEST_QUOTE not in r["prompt"] for r in second)


def test_a_flag_still_wins_over_the_manifest(engine, judge_dir, tmp_path):
    assert main(["eval", "--benchmark", "generic", "--data", str(_pairs(tmp_path, 1)), "--base-url", engine.base_url,
                 "--judge", str(judge_dir), "--max_new_tokens", "5", "--out", str(tmp_path / "r"), "--no_progress"]) == 0
    assert {r["max_tokens"] for r in engine.requests} == {5}


def test_the_chat_endpoint_sends_messages_with_the_prefill_to_continue(engine, judge_dir, tmp_path):
    assert main(["eval", "--benchmark", "generic", "--data", str(_pairs(tmp_path, 1)), "--base-url", engine.base_url,
                 "--judge", str(judge_dir), "--endpoint", "chat", "--out", str(tmp_path / "r"), "--no_progress"]) == 0
    (sent, _) = engine.requests
    assert sent["_endpoint"] == "chat" and sent["continue_final_message"] is True
    assert sent["messages"][-1] == {"role": "assistant", "content": read_manifest(judge_dir).assistant_prefill}


def test_an_engine_serving_another_name_is_one_line(judge_dir, tmp_path, capsys):
    with FakeOpenAIServer(_reply, model="base-model") as server:
        rc = main(["judge", "--base-url", server.base_url, "--judge", str(judge_dir), "--prompt", "q",
                   "--response-a", "a", "--response-b", "b"])
    err = capsys.readouterr().err
    assert rc == 2 and "serves base-model, not 'my-judge'" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["judge", "label", "attack", "consistency"])
def test_every_judging_command_keeps_the_manifest(command, engine, judge_dir, tmp_path):
    prefill = read_manifest(judge_dir).assistant_prefill
    served = ["--base-url", engine.base_url, "--judge", str(judge_dir)]
    if command == "judge":
        args = ["judge", *served, "--prompt", "q", "--response-a", "a", "--response-b", "b"]
    elif command == "label":
        rows = tmp_path / "rows.jsonl"
        rows.write_text(json.dumps({"prompt": "q", "responses": ["a", "b"]}) + "\n")
        args = ["label", *served, "--data", str(rows), "--out", str(tmp_path / "out"), "--no_progress"]
    elif command == "attack":
        args = ["attack", *served, "--data", str(_pairs(tmp_path, 1)), "--out", str(tmp_path / "out"),
                "--limit", "1", "--no_progress"]
    else:
        args = ["consistency", *served, "--limit", "1", "--responses", "3", "--out", str(tmp_path / "out"),
                "--no_progress"]
    assert main(args) == 0
    assert engine.requests and all(r["model"] == "my-judge" and r["prompt"].endswith(prefill)
                                   and r["max_tokens"] == 8 for r in engine.requests)


def test_the_api_and_trl_reward_keep_the_manifest(engine, judge_dir):
    import j1
    from j1.integrations.trl import JudgeReward

    with j1.load_judge(str(judge_dir), base_url=engine.base_url) as judge:
        assert (judge.name, judge.params.max_new_tokens, judge.format.template_name) == ("my-judge", 8, "digest")
        # The engine names the response shown first in both orders: each order's verdict was read.
        assert judge.compare("q", "a", "b").verdict == "inconsistent"
    reward = JudgeReward(str(judge_dir), base_url=engine.base_url)
    assert reward(prompts=["q"], completions=["a"], reference=["b"]) == [0.5]  # preferred in one order of two
    reward.close()
    prefill = read_manifest(judge_dir).assistant_prefill
    assert all(r["prompt"].endswith(prefill) and r["model"] == "my-judge" for r in engine.requests)


def test_serve_keeps_the_manifest_of_a_served_judge(engine, judge_dir):
    from fastapi.testclient import TestClient

    import j1
    from j1.serve.app import ServerSettings, create_app

    judge = j1.load_judge(str(judge_dir), base_url=engine.base_url)
    with TestClient(create_app(judge, ServerSettings())) as client:
        answer = client.post("/v1/judge", json={"prompt": "q", "response_a": "a", "response_b": "b"}).json()
        models = client.get("/v1/models").json()
    assert answer["verdict"] == "inconsistent" and "my-judge" in json.dumps(models)
    assert all(r["prompt"].endswith(read_manifest(judge_dir).assistant_prefill) for r in engine.requests)


def test_judge_without_base_url_is_the_local_model(judge_dir):
    from j1.judging.spec import JudgeSpec

    cfg = JudgeSpec(judge="j1-135m", prompt="q", response_a="a", response_b="b")
    assert cfg.model == "j1-135m" and cfg.template == "digest"
    with pytest.raises(ValueError, match="--model and --judge both name the judge"):
        JudgeSpec(judge="j1-135m", model="smollm2-135m", prompt="q", response_a="a", response_b="b")
    with pytest.raises(ValueError, match="not a shipped judge"):
        JudgeSpec(judge=str(judge_dir / "missing"), prompt="q", response_a="a", response_b="b")


def test_an_item_the_engine_refuses_as_too_long_is_that_items_error(judge_dir):
    """/get_reward batches items of many clients: the engine's context error for one (its 400) is that item's
    error, with --error_reward, and the others are judged; /v1/judge answers it 413."""
    from fastapi.testclient import TestClient

    import j1
    from j1.serve.app import ServerSettings, create_app

    with FakeOpenAIServer(_reply, model="my-judge", context=6000) as server:
        judge = j1.load_judge(str(judge_dir), base_url=server.base_url)
        long = "word " * 2000
        with TestClient(create_app(judge, ServerSettings(error_reward=-1.0))) as client:
            body = {"query": ["q a", "q " + long], "prompts": ["q", "q"], "labels": ["ref", "ref"]}
            answer = client.post("/get_reward", json=body).json()
            single = client.post("/v1/judge", json={"prompt": "q", "response_a": long, "response_b": "b"})
    assert answer["rewards"][1] == -1.0 and 0.0 <= answer["rewards"][0] <= 1.0
    assert [(e["index"], e["code"]) for e in answer["errors"]] == [(1, "context_length_exceeded")]
    assert single.status_code == 413 and single.json()["error"]["code"] == "context_length_exceeded"
