"""A prompt may be a conversation (issue 45, item 4): the judge formats show its turns inside the request
fence, and `j1 judge --messages`, `Judge.compare`, `/v1/judge` and pair files all take one."""

from __future__ import annotations

import json

import pytest
from fake_openai import FakeOpenAIServer
from serve.serving import prefers_paris

from j1.api import load_judge
from j1.cli.main import main
from j1.formats import get_format
from j1.formats.base import request_text
from j1.judging.spec import conversation_prompt
from j1.serve.bodies import PairJudgeRequest

TURNS = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "I'm in France."},
         {"role": "assistant", "content": "Nice! How can I help?"}, {"role": "user", "content": "Capital?"}]
TRANSCRIPT = "system: Answer briefly.\n\nuser: I'm in France.\n\nassistant: Nice! How can I help?\n\nuser: Capital?"


@pytest.mark.parametrize("prompt, text", [
    ("plain", "plain"),
    ([{"role": "user", "content": "one turn"}], "one turn"),  # a single user message reads as plain text
    ([{"role": "assistant", "content": "hi"}], "assistant: hi"),
    (TURNS, TRANSCRIPT),
    ([{"role": "user", "content": "日本語 ✓"}, {"role": "user", "content": ""}], "user: 日本語 ✓\n\nuser: "),
])
def test_request_text(prompt, text):
    assert request_text(prompt) == text


@pytest.mark.parametrize("prompt, message", [
    ([], "empty list"),
    ([{"role": "user"}], "message 1 must be an object with string 'role' and 'content'"),
    ([{"role": "user", "content": "a"}, "b"], "message 2 must be"),
    ([{"role": 1, "content": "a"}], "message 1 must be"),
    ([{"role": "user", "content": "a"}, {"role": "wizard", "content": "b"}], "message 2 has role 'wizard'; a chat"),
    ([{"role": "User", "content": "a"}], "message 1 has role 'User'"),
    (3, "must be a string or a list of chat messages, got int"),
])
def test_request_text_rejects(prompt, message):
    with pytest.raises(ValueError, match=message):
        request_text(prompt)


@pytest.mark.parametrize("name", ["pav", "pas", "pavs", "pos"])
def test_every_format_fences_the_transcript_as_the_request(name):
    fmt = get_format(name)
    args = ("Paris.", "Lyon.") if fmt.pairwise else ("Paris.",)
    as_list, as_text = fmt.render(TURNS, *args), fmt.render(TRANSCRIPT, *args)
    assert as_list == as_text
    user = as_list[-1]["content"]
    start = user.index("<request-")
    assert TRANSCRIPT in user[start:user.index("</request-")]


def test_fourway_renders_a_conversation_too():
    fmt = get_format("fourway")
    assert fmt.render(TURNS, "a", "b", "c", "d") == fmt.render(TRANSCRIPT, "a", "b", "c", "d")


def test_judge_compare_takes_a_conversation():
    with FakeOpenAIServer(prefers_paris) as upstream, load_judge(base_url=upstream.base_url) as judge:
        from_list = judge.compare(TURNS, "Lyon.", "Paris.")
        from_text = judge.compare(TRANSCRIPT, "Lyon.", "Paris.")
        sent = [json.dumps(r["messages"]) for r in upstream.requests]
        with pytest.raises(TypeError, match="item 0: prompt message 1 must be"):
            judge.compare([{"content": "x"}], "a", "b")
        with pytest.raises(TypeError, match="item 0: prompt must be a string or a list of chat messages, got int"):
            judge.compare(3, "a", "b")
    assert from_list.verdict == from_text.verdict == "B"
    assert sorted(sent[:2]) == sorted(sent[2:4])  # both orders, word for word the same prompts (any arrival order)


def test_v1_judge_takes_a_conversation():
    # the 400 messages of a bad conversation: tests/serve/test_bodies.py
    req = PairJudgeRequest.model_validate({"prompt": TURNS, "response_a": "a", "response_b": "b"})
    assert req.prompt == TRANSCRIPT
    with pytest.raises(ValueError, match="is an empty list"):
        PairJudgeRequest.model_validate({"prompt": [], "response_a": "a", "response_b": "b"})


def test_judge_messages_file(tmp_path, capsys):
    path = tmp_path / "conv.json"
    path.write_text(json.dumps(TURNS), encoding="utf-8")
    assert conversation_prompt(str(path)) == TRANSCRIPT
    with FakeOpenAIServer(prefers_paris) as upstream:
        assert main(["judge", "--base-url", upstream.base_url, "--messages", str(path), "--response-a", "Lyon.",
                     "--response-b", "Paris.", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["verdict"] == "B"
        assert TRANSCRIPT in upstream.requests[0]["messages"][-1]["content"]


@pytest.mark.parametrize("content, extra, message", [
    ("[", [], "conv.json:1: not valid JSON"),
    ('{"role": "user", "content": "x"}', [], "expected a JSON list of {role, content} messages, got dict"),
    ('[{"role": "user"}]', [], "message 1 must be"),
    (json.dumps(TURNS), ["--prompt", "Q"], "--prompt and --messages both give the request"),
])
def test_judge_messages_errors_are_one_line(tmp_path, capsys, content, extra, message):
    path = tmp_path / "conv.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SystemExit) as exit_:  # bad flags end at parse time, as argparse's do
        main(["judge", "--base-url", "http://127.0.0.1:9", "--messages", str(path), *extra,
              "--response-a", "a", "--response-b", "b"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("j1 judge: error: ") and message in err[0], err
