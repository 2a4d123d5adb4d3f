"""The served paths against a real engine: llama.cpp's server running j1-135m's GGUF export.

The whole trip (export --gguf, serve, ``j1 eval --base-url ... --judge j1-135m``) agrees with the local judge;
every judging command, the API, TRL's reward and synthesis run through the engine as they do locally; and
the engine's own ways (one choice per request, stop strings cut from the text, its context error, logprobs)
are met as they are."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import pytest

from j1.cli.main import main

REPO = Path(__file__).resolve().parents[2]
HELDOUT = REPO / "src/j1/assets/data/heldout_mismatch.jsonl"
TRIP_PAIRS = 40  # as many held-out pairs as make demo judges
SPIDER = ["--prompt", "How many legs does a spider have?", "--response-a", "A spider has eight legs.",
          "--response-b", "Boil the pasta for ten minutes, then drain it."]


def _verdicts(run: Path) -> dict[tuple[str, str], str]:
    """(item, order) -> the verdict of its one sample, from a j1 eval run's judgments.jsonl."""
    out = {}
    for line in (run / "judgments.jsonl").read_text().splitlines():
        row = json.loads(line)
        for slot, verdict in _slot_verdicts(row):
            out[(row["item"], slot)] = verdict
    return out


def _slot_verdicts(row: dict):
    from j1.formats import get_format
    from j1.judging.judge import to_sample

    fmt = get_format("pav")
    for text in row.get("texts") or [None]:
        yield row["slot"], "error" if text is None else to_sample(fmt, text, row["slot"]).verdict


def test_llama_cpp_reads_the_tokens_j1_reads(judge_gguf):
    """The GGUF's tokenizer (vocabulary, merges, pre-tokenizer, special tokens) turns every held-out judge
    prompt into the token ids the local judge reads."""
    from llama_cpp import Llama

    from j1.formats import get_format
    from j1.judging.chat import render, with_prefill
    from j1.judging.judges import manifest_for
    from j1.models import embedded_model_dir, load_tokenizer
    from j1.pairs import render_both

    manifest = manifest_for("j1-135m")
    fmt = get_format(manifest.format, manifest.template)
    hf = load_tokenizer(str(embedded_model_dir()))
    engine = Llama(model_path=str(judge_gguf), vocab_only=True, verbose=False)
    rows = [json.loads(line) for line in HELDOUT.read_text().splitlines()][:TRIP_PAIRS]
    checked = 0
    for row in rows:
        for _, messages in render_both(fmt, row["prompt"], row["chosen"], row["rejected"]):
            text = render(hf, with_prefill(messages, manifest.assistant_prefill))
            ids = hf(text, add_special_tokens=False).input_ids
            assert engine.tokenize(text.encode(), add_bos=False, special=True) == ids
            checked += 1
    assert checked == 2 * TRIP_PAIRS


def test_the_trip_agrees_with_the_local_judge(engine_url, tmp_path, capsys):
    """export --gguf -> llama.cpp -> j1 eval --base-url --judge j1-135m, greedy, on 40 held-out pairs: the
    verdicts of at least 95% of the 80 judged orders are the local judge's (fp32 here, the F16 export there)."""
    common = ["eval", "--benchmark", "generic", "--data", str(HELDOUT), "--limit", str(TRIP_PAIRS), "--no_progress"]
    assert main([*common, "--out", str(tmp_path / "local")]) == 0
    assert main([*common, "--base-url", engine_url, "--judge", "j1-135m", "--concurrency", "2",
                 "--out", str(tmp_path / "served")]) == 0
    local, served = _verdicts(tmp_path / "local"), _verdicts(tmp_path / "served")
    assert set(local) == set(served) and len(local) == 2 * TRIP_PAIRS
    same = sum(local[k] == served[k] for k in local)
    print(f"\ntrip: {same}/{len(local)} orders agree ({same / len(local):.1%})")
    assert same / len(local) >= 0.95
    assert "invalid" not in served.values() and "error" not in served.values()
    run = json.loads((tmp_path / "served" / "run.json").read_text())
    assert run["judge_manifest"]["assistant_prefill"].startswith("<think>I compare")  # the manifest travelled
    assert run["config"]["judge"] == "j1-135m" and run["config"]["model"] == "j1-135m"


def test_judge_through_the_engine_with_its_margin(engine_url, capsys):
    assert main(["judge", "--base-url", engine_url, "--judge", "j1-135m", *SPIDER, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "A" and out["margin"] > 1.0  # log-odds from the engine's logprobs
    assert all(o["samples"][0]["finish_reason"] == "stop" for o in out["orders"])


def test_samples_fan_out_on_an_engine_that_returns_one_choice(engine_url, capsys):
    """llama.cpp's Python server ignores n: j1 asks once per sample and still gets 3 per order."""
    assert main(["judge", "--base-url", engine_url, "--judge", "j1-135m", *SPIDER, "--samples", "3",
                 "--temperature", "1.0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [len(o["samples"]) for o in out["orders"]] == [3, 3]


def test_a_prompt_over_the_engines_context_is_invalid_not_a_failed_run(engine_url, tmp_path):
    """The server refuses a prompt over its 2048-token context (its 400, in its words): that pair is invalid
    with the engine's reason, the other is judged, the run ends well."""
    rows = [json.loads(line) for line in HELDOUT.read_text().splitlines()][:2]
    rows[1]["chosen"] = "many words " * 1500
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    assert main(["eval", "--benchmark", "generic", "--data", str(data), "--base-url", engine_url, "--judge",
                 "j1-135m", "--out", str(out), "--no_progress"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    overall = metrics["overall"]
    assert overall["n"] == 2 and 0 < overall["invalid_rate"] < 1  # the long pair invalid, the short one judged
    errors = [json.loads(line).get("error") for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert any(e and "context" in e for e in errors)


def test_label_through_the_engine(engine_url, tmp_path):
    rows = [{"prompt": "How many legs does a spider have?",
             "responses": ["A spider has eight legs.", "Boil the pasta for ten minutes."]}]
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "label"
    assert main(["label", "--data", str(src), "--base-url", engine_url, "--judge", "j1-135m", "--out", str(out),
                 "--no_progress"]) == 0
    labelled = [json.loads(line) for line in (out / "preferences.jsonl").read_text().splitlines()]
    assert [r["chosen"] for r in labelled] == ["A spider has eight legs."]


def test_the_api_and_trl_reward_through_the_engine(engine_url):
    import j1
    from j1.integrations.trl import JudgeReward

    with j1.load_judge("j1-135m", base_url=engine_url) as judge:
        assert judge.describe()["assistant_prefill"].startswith("<think>I compare")
        assert judge.compare(*SPIDER[1::2]).verdict == "A"
    reward = JudgeReward("j1-135m", base_url=engine_url)
    rewards = reward(prompts=["How many legs does a spider have?"] * 2,
                     completions=["A spider has eight legs.", "Boil the pasta for ten minutes."],
                     reference=["Spiders have eight legs."] * 2)
    reward.close()
    assert len(rewards) == 2 and all(0.0 <= r <= 1.0 for r in rewards)


def test_serve_in_front_of_the_engine(engine_url, tmp_path):
    """j1 serve --base-url --judge: the reward server keeps the judge's manifest and asks the engine."""
    import socket
    import subprocess
    import sys

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "j1.cli.main", "serve", "--base-url", engine_url, "--judge",
                             "j1-135m", "--port", str(port)], stderr=(tmp_path / "serve.log").open("w"))
    try:
        body = json.dumps({"prompt": SPIDER[1], "response_a": SPIDER[3], "response_b": SPIDER[5]}).encode()
        for _ in range(240):
            try:
                req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/judge", data=body,
                                             headers={"Content-Type": "application/json"})
                answer = json.loads(urllib.request.urlopen(req, timeout=60).read())
                break
            except OSError:
                assert proc.poll() is None, (tmp_path / "serve.log").read_text()[-2000:]
                time.sleep(0.5)
        models = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=10).read())
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert answer["verdict"] == "A"
    assert json.dumps(models).count("I compare both responses") >= 1  # the manifest it serves with


@pytest.mark.parametrize("kind", ["math", "chat"])
def test_synthesis_through_the_engine(engine_url, tmp_path, kind):
    """The engine as a generator: the pipelines run end to end (a 135M judge writes poor answers, so the
    checks may keep no pair; the run's stats account for every prompt)."""
    out = tmp_path / f"{kind}.jsonl"
    src = REPO.parent / "shared/data" / ("gsm8k_train.jsonl" if kind == "math" else "alpaca_en_demo_llamafactory.json")
    args = ["synth", kind, "--source", str(src), "--out", str(out), "--limit", "2", "--base-url", engine_url,
            "--model", "j1-135m", "--max_new_tokens", "48", "--no_progress"]
    if kind == "math":
        args += ["--samples", "2"]
    else:
        args += ["--rewrite_max_new_tokens", "48", "--rewrite_samples", "1"]
    assert main(args) == 0
    stats = json.loads(Path(f"{out}".replace(".jsonl", ".stats.json")).read_text())
    assert stats["prompts_seen"] == 2 and stats["done"] >= 1
