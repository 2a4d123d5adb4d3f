"""A thinking judge trained on the GPU (issue 51), and its evaluation back on the CPU.

    python3 bench/gpu_think.py run --stage S --out OUT --minutes 5   # there, via gpu_check.sh --think
    python bench/gpu_think.py eval --judge DIR --out DIR             # here: by group, beside j1-135m

``run`` trains the embedded SmolLM2-135M to judge with sampled thoughts: the format warm-up
(configs/warmup/pav_135m_thinking_gpu.yaml, a LoRA adapter), then J1 GRPO from it for ``--minutes``
(configs/train/pav_135m_thinking_gpu.yaml; checkpoints every minute and at the stop), in S/think. A run
that has a checkpoint continues from its newest one instead (no warm-up): a second ``--think`` on the
same warm machine, or an earlier GPU's run carried back in the bundle (S/bundle/think, from
``gpu_check.sh --prepare W STATE``). What comes back through OUT:
think.md (the training curve in 10-step windows, results/train/curve_table.py), think.json (steps,
minutes, the warm-up's valid rates, the last window), think.log (both commands' output, its tail) and
think-state/part-K (the run's state in parts of at most 15 MiB: the final adapter, the newest checkpoint
without its tokenizer, run.json, log.jsonl; ``gpu_check.sh --unpack OUT/think-state DEST`` rebuilds it).

``eval`` judges the shipped held-out pairs (60 GSM8K test, the training source's unseen questions; 60
MATH and 60 Alpaca, sources it never saw) with the returned judge and j1-135m, both greedy and asked as
their manifests say, and reports by group: consistent accuracy, accuracy, invalid rate, the thought's
length in words and whether the thoughts vary from pair to pair (distinct thoughts, the commonest one's
share). j1-135m's thought is fixed by its prefill: one thought for every answer.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WARMUP = REPO / "configs" / "warmup" / "pav_135m_thinking_gpu.yaml"
TRAIN = REPO / "configs" / "train" / "pav_135m_thinking_gpu.yaml"
STATE_PART = 15 * 2**20  # under the 16 MiB a file that comes back through OUT may have
# What a checkpoint keeps that a resume and a judge do not need: the base's tokenizer (j1 loads the base's)
TOKENIZER_FILES = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
                   "vocab.json", "merges.txt", "added_tokens.json"}
LOG_TAIL = 256 * 1024
J1_135M = "j1-135m"


# ---- on the GPU machine ----

def newest_checkpoint(train: Path) -> Path | None:
    found = [p for p in train.glob("checkpoint-*") if p.name.split("-")[1].isdigit()]
    return max(found, key=lambda p: int(p.name.split("-")[1])) if found else None


def state_tree(think: Path, dest: Path) -> Path:
    """Copy what a resume and the evaluation need from the run folder ``think`` into ``dest``: the
    warm-up's record, the training's run.json and log.jsonl, final/ and the newest checkpoint, without
    tokenizer files (j1 loads the base's)."""
    shutil.rmtree(dest, ignore_errors=True)
    keep = [think / "warmup" / "warmup.json", think / "warmup" / "run.json", think / "train" / "run.json",
            think / "train" / "log.jsonl", think / "train" / "progress.json"]
    train = think / "train"
    for folder in (train / "final", newest_checkpoint(train)):
        if folder is not None and folder.is_dir():
            keep += [f for f in folder.iterdir() if f.is_file() and f.name not in TOKENIZER_FILES]
    for f in keep:
        if f.is_file():
            (dest / f.relative_to(think)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, dest / f.relative_to(think))
    return dest


def _step(cmd: list[str], seconds: int, log: Path, env: dict) -> int:
    with log.open("a") as fh:
        fh.write(f"$ {' '.join(cmd)}  (timeout {seconds}s)\n")
        fh.flush()
        return subprocess.run(["timeout", "-k", "20", str(seconds), *cmd], stdout=fh, stderr=subprocess.STDOUT,
                              env=env, cwd=REPO, check=False).returncode


def run(stage: Path, out: Path, minutes: float) -> int:
    """Warm up (unless resuming), train for ``minutes``, and put the summary and the state in ``out``."""
    sys.path.insert(0, str(REPO / "bench"))
    from gpu_parts import pack

    out.mkdir(parents=True, exist_ok=True)
    think, log = stage / "think", stage / "think-work.log"
    log.unlink(missing_ok=True)
    carried = stage / "bundle" / "think"
    if carried.is_dir() and not (think / "train").is_dir():
        shutil.copytree(carried, think)  # an earlier GPU's run, carried back: continue it
    ckpt = newest_checkpoint(think / "train")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    j1 = [sys.executable, "-m", "j1.cli.main"]
    t0 = time.monotonic()
    report = {"minutes_asked": minutes, "resumed_from": ckpt.name if ckpt else None, "steps": {}}
    if ckpt is None:
        init = think / "warmup"
        if not (init / "adapter_model.safetensors").is_file():  # a rerun on the same machine keeps its warm-up
            code = _step([*j1, "warmup", "--config", str(WARMUP), "--output_dir", str(init)], 120, log, env)
            report["steps"]["warmup"] = {"returncode": code, "seconds": round(time.monotonic() - t0, 1)}
    else:
        init = ckpt  # a checkpoint is a judge folder: its adapter starts the LoRA, then the trainer resumes it
    if report["steps"].get("warmup", {}).get("returncode", 0) == 0:
        t1 = time.monotonic()
        cmd = [*j1, "train", "--config", str(TRAIN), "--output_dir", str(think / "train"), "--init_adapter", str(init),
               "--max_minutes", str(minutes), *(["--resume_from_checkpoint", "latest"] if ckpt else [])]
        # the time box, plus loading, the step that crosses it and the saves
        code = _step(cmd, int(minutes * 60 + 150), log, env)
        report["steps"]["train"] = {"returncode": code, "seconds": round(time.monotonic() - t1, 1)}
    report.update(summary(think))
    state = state_tree(think, stage / "think-state")
    manifest = pack(state, out / "think-state", STATE_PART)
    report["state"] = {"parts": manifest["parts"], "bytes": manifest["bundle_bytes"], "files": sorted(manifest["files"])}
    report["seconds"] = round(time.monotonic() - t0, 1)
    (out / "think.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "think.md").write_text(markdown(report, think))
    data = log.read_bytes()
    (out / "think.log").write_bytes(data if len(data) <= LOG_TAIL else b"[... cut ...]\n" + data[-LOG_TAIL:])
    sys.stdout.write((out / "think.md").read_text())
    ok = all(s["returncode"] == 0 for s in report["steps"].values()) and "train" in report["steps"]
    return 0 if ok else 1


def summary(think: Path) -> dict:
    """The warm-up's valid rates and the training run's steps and minutes, from their records."""
    out = {}
    warm = think / "warmup" / "warmup.json"
    if warm.is_file():
        w = json.loads(warm.read_text())
        out["warmup"] = {k: {m: (w.get(k) or {}).get(m) for m in ("valid_rate", "accuracy", "shown_A_share")}
                         for k in ("before", "after")}
    run_json = think / "train" / "run.json"
    if run_json.is_file():
        r = json.loads(run_json.read_text())
        out["train"] = {k: r.get(k) for k in ("status", "global_step", "trained_minutes", "resumed_step", "device")}
    return out


def markdown(report: dict, think: Path) -> str:
    lines = [f"# Thinking judge on the GPU ({report['minutes_asked']} min asked"
             + (f", resumed from {report['resumed_from']}" if report["resumed_from"] else "") + ")", ""]
    for name, s in report["steps"].items():
        lines.append(f"- {name}: return code {s['returncode']}, {s['seconds']} s")
    train = report.get("train") or {}
    lines.append(f"- training: {train.get('global_step')} steps, {train.get('trained_minutes')} min, "
                 f"status {train.get('status')}")
    log = think / "train" / "log.jsonl"
    if log.is_file():
        curve = subprocess.run([sys.executable, str(REPO / "results" / "train" / "curve_table.py"), str(log), "10"],
                               capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                   [str(REPO / "src"), os.environ.get("PYTHONPATH", "")])})
        lines += ["", "Sampled rollouts (T = 1), means over 10-step windows:", "", curve.stdout.strip() or curve.stderr[-500:]]
    return "\n".join(lines) + "\n"


# ---- back here, on the CPU ----

def thought_stats(texts: list[str]) -> dict:
    """How long the thoughts of ``texts`` (whole answers) are and whether they vary: answers, thoughts
    read (a closed ``<think>``), mean words, distinct thoughts (whitespace-normalised), the commonest
    thought and its share of the thoughts.

    >>> s = thought_stats(["<think>a b</think>[[A]]", "<think>a  b</think>[[B]]", "<think>c</think>", "x"])
    >>> s["answers"], s["thoughts"], s["mean_words"], s["distinct"], s["top"], s["top_share"]
    (4, 3, 1.6666666666666667, 2, 'a b', 0.6666666666666666)
    """
    from j1.formats.grammar import split_thought

    thoughts = [" ".join(t.split()) for t in (split_thought(x)[0] for x in texts) if t is not None]
    if not texts:
        raise ValueError("thought_stats: no answers")
    counts = Counter(thoughts)
    top, n = counts.most_common(1)[0] if counts else (None, 0)
    return {"answers": len(texts), "thoughts": len(thoughts),
            "mean_words": sum(len(t.split()) for t in thoughts) / len(thoughts) if thoughts else None,
            "distinct": len(counts), "top": top, "top_share": n / len(thoughts) if thoughts else None}


def eval_rows(limit: int | None) -> list[dict]:
    """The shipped held-out pairs by group (``category``): GSM8K test (the training source's unseen
    questions), MATH and Alpaca (sources not trained on); at most ``limit`` pairs of each."""
    import dataclasses

    from j1.demo.shipped import HELDOUT_PAIRS, SAME_SOURCE_PAIRS
    from j1.schema import read_pairs

    groups = {"GSM8K test": read_pairs(SAME_SOURCE_PAIRS), "MATH": [], "Alpaca": []}
    for p in read_pairs(HELDOUT_PAIRS):
        groups["MATH" if p.kind == "math-mismatch" else "Alpaca"].append(p)
    return [{**dataclasses.asdict(p), "category": g} for g, pairs in groups.items() for p in pairs[:limit]]


def evaluate(judges: dict[str, str], out: Path, limit: int | None) -> dict:
    """Judge the held-out rows with each judge (name -> model), greedy, as its manifest asks; metrics and
    thought statistics by group, written to out/thinking.json and out/thinking.md."""
    from j1.eval.runner import run_eval
    from j1.eval.spec import EvalSpec
    from j1.runs.atomic import write_json_atomic, write_jsonl_atomic, write_text_atomic
    from j1.schema import iter_jsonl

    out.mkdir(parents=True, exist_ok=True)
    data = out / "heldout.jsonl"
    write_jsonl_atomic(data, eval_rows(limit))
    result = {"limit_per_group": limit, "judges": {}}
    for name, model in judges.items():
        spec = EvalSpec(model=model, benchmark="generic", data=str(data), out=str(out / f"eval-{name}"),
                        temperature=0.0, samples=1, seed=0, progress=False, resume=True)
        metrics = run_eval(spec)
        texts: dict[str, list[str]] = {}
        for _, r in iter_jsonl(out / f"eval-{name}" / "judgments.jsonl"):
            texts.setdefault(r["category"], []).append(r["texts"][0])
        groups = {}
        for group, m in metrics["categories"].items():
            groups[group] = {k: m[k] for k in ("n", "consistent_accuracy", "consistent_accuracy_ci", "accuracy",
                                               "invalid_rate", "flip_rate")} | {"thought": thought_stats(texts[group])}
        result["judges"][name] = {"model": model, "prefill": spec.assistant_prefill,
                                  "max_new_tokens": spec.max_new_tokens, "groups": groups}
    write_json_atomic(out / "thinking.json", result)
    write_text_atomic(out / "thinking.md", eval_markdown(result))
    return result


def eval_markdown(result: dict) -> str:
    pct = lambda x: "n/a" if x is None else f"{100 * x:.1f}%"  # noqa: E731
    lines = ["| group | judge | pairs | consistent accuracy [95% CI] | accuracy | invalid | thought words | "
             "distinct thoughts | commonest thought (share) |", "|---|---|---:|---|---:|---:|---:|---:|---|"]
    names = list(result["judges"])
    groups = list(next(iter(result["judges"].values()))["groups"]) if names else []
    for group in groups:
        for name in names:
            g = result["judges"][name]["groups"][group]
            t = g["thought"]
            ci = g["consistent_accuracy_ci"]
            top = (t["top"] or "")[:60] + ("..." if t["top"] and len(t["top"]) > 60 else "")
            words = "n/a" if t["mean_words"] is None else f"{t['mean_words']:.1f}"
            interval = f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else ""  # none for a single pair
            lines.append(f"| {group} | {name} | {g['n']} | {pct(g['consistent_accuracy'])}{interval} | "
                         f"{pct(g['accuracy'])} | {pct(g['invalid_rate'])} | {words} | "
                         f"{t['distinct']} of {t['thoughts']} | {top!r} ({pct(t['top_share'])}) |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="on the GPU machine: warm up, train for --minutes, state and summary to OUT")
    r.add_argument("--stage", required=True, help="the staging folder (its bundle, cache and think/ folders)")
    r.add_argument("--out", required=True)
    r.add_argument("--minutes", type=float, default=5.0)
    e = sub.add_parser("eval", help="here: the returned judge and j1-135m on the shipped held-out pairs, by group")
    e.add_argument("--judge", required=True, help="the returned judge folder (STATE/train/final or a checkpoint)")
    e.add_argument("--name", default="thinking", help="its name in the table")
    e.add_argument("--out", required=True)
    e.add_argument("--limit", type=int, default=None, help="at most N pairs of each group (a quick look)")
    a = p.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if a.command == "run":
        return run(Path(a.stage), Path(a.out), a.minutes)
    if not Path(a.judge, "judge.json").is_file():
        sys.stderr.write(f"gpu_think: {a.judge}: no judge.json (give the final/ folder or a checkpoint of the run)\n")
        return 2
    result = evaluate({a.name: a.judge, J1_135M: J1_135M}, Path(a.out), a.limit)
    sys.stdout.write(eval_markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
