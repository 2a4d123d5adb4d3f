"""``j1 synth chat`` against a scripted OpenAI-compatible server (every drop reason, the reference
judge, resume, kill -9 + rerun) and the embedded model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer

from j1.cli.main import main
from j1.data.synth_chat import REWRITE_EXAMPLES, REWRITE_INSTRUCTION
from j1.schema import read_pairs

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "data"
REWRITE_HEAD = REWRITE_INSTRUCTION.split("{")[0][:40]

# chat_tiny.jsonl prompt -> (rewrite candidate 0, candidate 1)
REWRITES = {
    "Write a poem about cats.": ("<request>Write a poem about dogs.</request>", "Write a poem about owls."),
    "Give three tips for staying healthy.": ("Provide 3 suggestions to stay healthy.",  # paraphrase
                                             "Sure! Here are three tips: sleep, eat, move."),  # an answer
    "Describe a process of making crepes.": ("Explain how to change a car tire.",  # drift
                                             "Whisk flour, eggs and milk into a thin batter and fry it in a hot pan."),
    "Translate the sentence into French.\n\nI love apples.": ("Translate the sentence into French.\n\nI love apples!",) * 2,
    "Summarize the history of Rome in two sentences.": ("Summarize the history of Rome in five sentences.",) * 2,
    "List four primary colors of light.": ("", "New request: List three primary colors of light."),
}
ROME = "Rome was founded in 753 BC, became a republic, then an empire, and fell in 476 AD."
# the answer to the crepes request; its rewrite candidate 1 is a piece of this answer, not a request
CREPES = "Crepes: whisk flour, eggs and milk into a thin batter, then fry each crepe for a minute per side."


def scripted(messages, index, body):
    text = messages[-1]["content"]
    if text.startswith(REWRITE_HEAD):
        return REWRITES[text.split("Original request:\n", 1)[1]][index]
    if "<response_A-" in text:  # the reference judge (pav)
        first = text.split("<response_A-", 1)[1].split(">", 1)[1].split("</response_A-", 1)[0].strip()
        if "colors" in text:
            return "<think>position bias</think> <answer>[[A]]</answer>"  # always the first shown
        good = first.startswith("Answer to: ") and first[len("Answer to: "):] in REWRITES
        return f"<think>checked</think> <answer>[[{'A' if good else 'B'}]]</answer>"
    if "Rome" in text:
        return ROME  # the same answer to x and x': a duplicate
    if text == "Describe a process of making crepes.":
        return CREPES
    return "Answer to: " + text


def _run(server, out, *extra, source=FIX / "chat_tiny.jsonl"):
    return main(["synth", "chat", "--source", str(source), "--base-url", server.base_url, "--out", str(out),
                 "--progress", "false", *extra])


def _dropped(out: Path) -> dict[str, dict]:
    path = out.with_name(out.stem + ".dropped.jsonl")
    return {json.loads(line)["prompt"]: json.loads(line) for line in path.open()}


def test_every_drop_reason_without_judge(fake_openai, tmp_path, capsys):
    fake_openai.reply = scripted
    out = tmp_path / "chat.jsonl"
    assert _run(fake_openai, out) == 0
    pairs = {p.prompt: p for p in read_pairs(out)}
    assert sorted(pairs) == ["List four primary colors of light.", "Write a poem about cats."]
    cats = pairs["Write a poem about cats."]
    assert cats.kind == "chat" and cats.source == "chat_tiny.jsonl"
    assert cats.chosen == "Answer to: Write a poem about cats."
    assert cats.rejected == "Answer to: Write a poem about dogs."
    assert cats.meta["noisy_prompt"] == "Write a poem about dogs." and cats.meta["rewrite_index"] == 0
    # recorded values: "write a poem about cats/dogs" -> lexical 2*4/10 = 0.8
    assert cats.meta["prompt_similarity"]["lexical"] == 0.8
    assert 0.4 <= cats.meta["prompt_similarity"]["embedding"] < 0.97
    assert set(cats.meta["answer_similarity"]) == {"lexical", "embedding"}
    colors = pairs["List four primary colors of light."]
    assert colors.meta["rewrite_index"] == 1  # candidate 0 was empty; the label of candidate 1 is cut
    assert colors.meta["noisy_prompt"] == "List three primary colors of light."
    assert [c["verdict"] for c in colors.meta["rewrite_candidates"]] == ["rewrite_empty", "kept"]

    dropped = _dropped(out)
    assert {k: v["reason"] for k, v in dropped.items()} == {
        "Give three tips for staying healthy.": "rewrite_paraphrase",
        "Describe a process of making crepes.": "rewrite_drift",
        "Translate the sentence into French.\n\nI love apples.": "rewrite_same",
        "Summarize the history of Rome in two sentences.": "rejected_duplicate",
    }
    para = dropped["Give three tips for staying healthy."]["meta"]["rewrite_candidates"][0]
    assert para["lexical"] < 0.5 and para["embedding"] >= 0.85  # reworded, same meaning
    crepes = dropped["Describe a process of making crepes."]["meta"]["rewrite_candidates"]
    assert [c["verdict"] for c in crepes] == ["rewrite_drift", "rewrite_answer_like"]
    # measured (all-MiniLM-L6-v2): the whisk-and-fry text is 0.37 from x but 0.70 from the answer
    assert crepes[1]["answer_embedding"] > crepes[1]["embedding"]
    rome = dropped["Summarize the history of Rome in two sentences."]["meta"]
    assert rome["chosen"] == rome["rejected"] == ROME and rome["answer_similarity"]["lexical"] == 1.0

    stats = json.loads((tmp_path / "chat.stats.json").read_text())
    assert stats["pairs"] == 2 and stats["done"] == 6
    assert stats["dropped"] == {"rejected_duplicate": 1, "rewrite_drift": 1, "rewrite_paraphrase": 1,
                                "rewrite_same": 1}
    # 12 candidates: cats 2 kept; tips paraphrase + answer; crepes drift + answer-like; French 2 same;
    # Rome 2 kept; colors empty + kept
    assert stats["rewrite_checks"] == {"kept": 5, "rewrite_answer_like": 1, "rewrite_drift": 1, "rewrite_empty": 1,
                                       "rewrite_not_request": 1, "rewrite_paraphrase": 1, "rewrite_same": 2}
    # each rewrite request shows the worked examples as earlier turns
    rewrite_req = next(r for r in fake_openai.requests if r["messages"][-1]["content"].startswith(REWRITE_HEAD))
    assert [m["role"] for m in rewrite_req["messages"]] == ["user", "assistant"] * len(REWRITE_EXAMPLES) + ["user"]
    assert rewrite_req["messages"][1]["content"] == f"<request>{REWRITE_EXAMPLES[0][1]}</request>"
    # requests: 6 answers + 6 rewrite requests (n=2 each) + 3 answers to x' (cats, Rome, colors)
    assert len(fake_openai.requests) == 15
    assert "chat pairs: 2 of 6 prompts done" in capsys.readouterr().out
    assert not (tmp_path / "chat.work.jsonl").exists()  # removed once the source is done


def test_criteria_from_rewrite_is_a_recipes_choice(fake_openai, tmp_path):
    fake_openai.reply = scripted
    plain, kept = tmp_path / "plain.jsonl", tmp_path / "kept.jsonl"
    assert _run(fake_openai, plain) == 0 and _run(fake_openai, kept, "--criteria_from_rewrite") == 0
    assert all(p.criteria is None for p in read_pairs(plain)) and "criteria" not in plain.read_text()
    pairs = {p.prompt: p for p in read_pairs(kept)}
    assert pairs["Write a poem about cats."].criteria == 'Keep to the request: it asks for "cats." (not "dogs.").'
    assert pairs["List four primary colors of light."].criteria == \
        'Keep to the request: it asks for "four" (not "three").'


def test_reference_judge_must_prefer_chosen_in_both_orders(fake_openai, tmp_path):
    fake_openai.reply = scripted
    out = tmp_path / "chat.jsonl"
    assert _run(fake_openai, out, "--verify_with", "scripted-judge", "--verify_base_url", fake_openai.base_url) == 0
    pairs = {p.prompt: p for p in read_pairs(out)}
    assert list(pairs) == ["Write a poem about cats."]
    assert pairs["Write a poem about cats."].meta["judge"]["orders"] == {"AB": "A", "BA": "A"}
    colors = _dropped(out)["List four primary colors of light."]
    assert colors["reason"] == "judge_disagrees"
    assert colors["meta"]["judge"]["orders"] == {"AB": "A", "BA": "B"}  # position bias: inconsistent
    stats = json.loads((tmp_path / "chat.stats.json").read_text())
    assert stats["dropped"]["judge_disagrees"] == 1
    judge_requests = [r for r in fake_openai.requests if "<response_A-" in r["messages"][-1]["content"]]
    assert len(judge_requests) == 4 and all(r["temperature"] == 0 for r in judge_requests)  # 2 pairs x 2 orders


def test_rerun_asks_nothing_done(fake_openai, tmp_path):
    fake_openai.reply = scripted
    out = tmp_path / "chat.jsonl"
    assert _run(fake_openai, out, "--limit", "3") == 0
    first = len(fake_openai.requests)
    assert first == 3 + 3 + 1  # answers, rewrites, one answer to x' (cats)
    assert _run(fake_openai, out, "--limit", "3") == 0
    assert len(fake_openai.requests) == first
    assert _run(fake_openai, out) == 0
    assert len(fake_openai.requests) == 15  # the same total as one full run
    assert len(read_pairs(out)) == 2 and len(_dropped(out)) == 4


@pytest.mark.parametrize("args,message", [
    (["--samples", "2", "--temperature", "1"], "chat pairs use one answer per prompt"),
    (["--embedding_min", "0.9", "--embedding_max", "0.8"], "need 0 <= min < max <= 1"),
    (["--verify_format", "nope"], "is not a judge format"),
    (["--verify_base_url", "http://x"], "--verify-base-url needs --verify-with"),
    (["--rewrite_samples", "0"], "must be >= 1"),
    (["--max_minutes", "0"], "must be > 0"),
])
def test_config_errors(args, message, capsys):
    with pytest.raises(SystemExit):
        main(["synth", "chat", "--source", "s.jsonl", "--out", "o.jsonl", *args])
    assert message in capsys.readouterr().err


def test_bad_input_names_file_line_and_field(fake_openai, tmp_path, capsys):
    assert _run(fake_openai, tmp_path / "c.jsonl", source=FIX / "chat_bad.jsonl") == 2
    assert "chat_bad.jsonl:2: field 'instruction' must be str" in capsys.readouterr().err
    assert fake_openai.requests == []


def test_output_of_another_kind_is_refused(fake_openai, tmp_path):
    out = tmp_path / "mixed.jsonl"
    out.write_text(json.dumps({"id": "x", "prompt": "p", "chosen": "a", "rejected": "b", "kind": "math",
                               "source": "s", "meta": {}}) + "\n")
    with pytest.raises(ValueError, match=r"mixed\.jsonl:1: a 'math' record in a 'chat' output"):
        _run(fake_openai, out, "--debug")


# --- kill -9 mid-run, then rerun -----------------------------------------------------------------

def gen_reply(messages, index, body):
    text = messages[-1]["content"]
    if text.startswith(REWRITE_HEAD):
        x = text.split("Original request:\n", 1)[1]
        return x.replace("cats", "dogs" if index == 0 else "owls")
    return "Answer to: " + text


PERMISSIVE = ["--lexical_min", "0", "--embedding_min", "0", "--embedding_max", "1", "--reword_embedding", "1"]


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_kill_dash_nine_then_rerun(tmp_path):
    n = 16
    src = tmp_path / "gen.jsonl"
    src.write_text("".join(json.dumps({"prompt": f"Write poem number {k} about cats."}) + "\n" for k in range(n)))
    out = tmp_path / "chat.jsonl"
    base = [sys.executable, "-m", "j1.cli.main", "synth", "chat", "--source", str(src), "--out", str(out),
            "--chunk_size", "4", "--concurrency", "2", "--progress", "false", *PERMISSIVE]
    env = {**os.environ, "OPENAI_API_KEY": "test"}
    with FakeOpenAIServer(gen_reply, latency=0.1) as server:
        proc = subprocess.Popen([*base, "--base-url", server.base_url], env=env, cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        work = tmp_path / "chat.work.jsonl"
        deadline = time.time() + 240
        # kill once a chunk is written and the next one has cached work
        while not (len(_lines(out)) >= 4 and len(_lines(work)) > 3 * 4 + 1):
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.time() < deadline, "the run made no progress"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
        before = [line for line in _lines(out) if line.endswith("}")]
        assert 4 <= len(before) < n
        asked_first = len(server.requests)
        subprocess.run([*base, "--base-url", server.base_url], env=env, cwd=REPO, check=True,
                       capture_output=True, timeout=300)
        asked_total = len(server.requests)
    pairs = _lines(out)
    ids = [json.loads(line)["id"] for line in pairs]
    assert len(ids) == len(set(ids)) == n and not (tmp_path / "chat.dropped.jsonl").read_text()
    assert all(line in pairs for line in before)
    # An uninterrupted run asks 3 requests per prompt (answer, rewrite with n=2, answer to x').
    # Only requests in flight at the kill (at most --concurrency 2) may be asked twice.
    assert asked_first < asked_total
    assert 3 * n <= asked_total <= 3 * n + 2
    with FakeOpenAIServer(gen_reply) as server:
        ref = tmp_path / "ref.jsonl"
        main(["synth", "chat", "--source", str(src), "--out", str(ref), "--chunk_size", "4", "--progress", "false",
              "--base-url", server.base_url, *PERMISSIVE])
    assert sorted(pairs) == sorted(_lines(ref))


# --- the embedded model -------------------------------------------------------------------------

def test_embedded_model_end_to_end(tmp_path, embedded_backend, monkeypatch):
    # the CLI as a user runs it, with the session's already loaded embedded model (saves a load)
    monkeypatch.setattr("j1.cli.synth_cmd.build_backend", lambda cfg: embedded_backend)
    out = tmp_path / "chat.jsonl"
    assert main(["synth", "chat", "--source", str(FIX / "chat_tiny.jsonl"), "--limit", "2", "--max_new_tokens", "8",
                 "--rewrite_max_new_tokens", "16", "--rewrite_samples", "1", "--out", str(out),
                 "--progress", "false"]) == 0
    stats = json.loads((tmp_path / "chat.stats.json").read_text())
    assert stats["done"] == 2 and stats["pairs"] + sum(stats["dropped"].values()) == 2
    assert sum(stats["rewrite_checks"].values()) == 2
    assert stats["runs"][-1]["model"] == "smollm2-135m" and stats["tokens"]["completion"] > 0
    records = _lines(out) + _lines(out.with_name("chat.dropped.jsonl"))
    for rec in map(json.loads, records):
        cand = rec["meta"]["rewrite_candidates"][0]
        assert {"text", "lexical", "embedding", "verdict"} <= set(cand)


@pytest.mark.parametrize("original, rewrite, expected", [
    ("Suggest games for young children.", "Suggest games for elderly grandparents.",
     'Keep to the request: it asks for "young children." (not "elderly grandparents.").'),
    ("Translate it into Spanish.\n\nHello.", "Translate it into German.\n\nHello.",
     'Keep to the request: it asks for "Spanish." (not "German.").'),
    ("Write a poem.", "Write a short poem.", 'Keep to the request: it does not ask for "short".'),
    ("Write a short poem.", "Write a poem.", 'Keep to the request: it asks for "short".'),
    ("List 3 cities in Spain by size.", "List 5 cities in Italy by size.",
     'Keep to the request: it asks for "3" (not "5"); it asks for "Spain" (not "Italy").'),
    ("Same words.", "Same\nwords.", None),
])
def test_rewrite_criteria(original, rewrite, expected):
    from j1.data.synth_chat import rewrite_criteria

    assert rewrite_criteria(original, rewrite) == expected
