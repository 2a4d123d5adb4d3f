"""The GPU check of issue 42: j1's tests, GRPO step, decoding and serving on one GPU, against their goals,
in one time-boxed run that needs no network and no model weights (random weights of the real shapes).

    python bench/gpu_check.py prepare --wheelhouse W     # on a machine with PyPI (after gpu_check.sh downloads)
    python bench/gpu_check.py run --wheelhouse W --out OUT          # on the GPU machine (via gpu_check.sh)
    python bench/gpu_check.py run --self-test --out OUT             # the same steps at tiny shapes, on a CPU

``run`` builds the models from configs (SmolLM2-135M's shape from W/model-shape, saved where ``J1_CACHE``
makes j1 resolve ``smollm2-135m``; a Llama-3.1-8B-shaped config with SmolLM2's tokenizer, whose random
weights bench_train_step.py builds on the GPU in bf16), then runs each step under its own ``timeout``
within ``--budget`` seconds in all: (a) ``pytest -m gpu``; (b) the GRPO step of plain TRL and of j1 with
shared prompts off and on, at the smoke shape; (c) ``bench_decode.py`` (``j1.decode`` against
``generate`` with dynamic and static caches); (d) ``bench_serve.py`` (``j1 serve`` under 1, 32 and 64
clients); (b') the GRPO step at the 8B shape with LoRA, last, as it takes what time is left. After every
step it rewrites OUT/gpu.json (every number) and OUT/gpu.md (one table: check, measured, goal, met?);
each step's output goes to OUT/<step>.log (five logs, at most 7 files in OUT). bench/GPU_SMOKE.md says
how to make the wheelhouse and run it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
LLMBAR = REPO.parent / "shared" / "data" / "llmbar_dev.jsonl"
LOG_TAIL = 256 * 1024  # bytes of each step's output kept in OUT (the rest stays in the work folder)
WEIGHTS = (".safetensors", ".bin", ".gguf", ".pt", ".pth")  # what never travels: the shape is the rest
# Llama-3.1-8B (meta-llama/Llama-3.1-8B's config.json), with SmolLM2's tokenizer in place of its own.
LLAMA31_8B = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                  num_key_value_heads=8, vocab_size=128256, rope_theta=500000.0, max_position_embeddings=131072,
                  rms_norm_eps=1e-5, tie_word_embeddings=False,
                  rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})


# ---- prepare (the CPU machine) ----

def prepare(wheelhouse: Path) -> dict:
    """Copy the embedded model's config, tokenizer and chat template (no weights) to W/model-shape and
    the LLMBar dev pairs to W/data; return the sizes of the repository and W (they travel together)."""
    from j1.models import embedded_model_dir

    shape = wheelhouse / "model-shape"
    shape.mkdir(parents=True, exist_ok=True)
    copy_shape(embedded_model_dir(), shape, with_config=True)
    if LLMBAR.is_file():
        (wheelhouse / "data").mkdir(exist_ok=True)
        shutil.copy(LLMBAR, wheelhouse / "data" / LLMBAR.name)
    return travel_size(wheelhouse)


def travel_size(wheelhouse: Path) -> dict:
    """MiB of what travels to the GPU machine: the repository's tracked and unignored files, and W."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    inside = wheelhouse.resolve().is_relative_to(REPO)
    repo = sum((REPO / f).stat().st_size for f in listed if f and (REPO / f).is_file()
               and not (inside and (REPO / f).resolve().is_relative_to(wheelhouse.resolve())))
    wheels = sum(f.stat().st_size for f in wheelhouse.rglob("*") if f.is_file())
    mib = lambda n: round(n / 2**20, 1)  # noqa: E731
    return {"repo_mib": mib(repo), "wheelhouse_mib": mib(wheels), "total_mib": mib(repo + wheels), "limit_mib": 64}


# ---- the models ----

def copy_shape(src: Path, dst: Path, with_config: bool) -> None:
    """Copy a model folder's files but its weights (and its config.json unless ``with_config``)."""
    for f in src.iterdir():
        if f.is_file() and not f.name.endswith(WEIGHTS) and (with_config or f.name != "config.json"):
            shutil.copy(f, dst / f.name)


def build_models(work: Path, wheelhouse: Path | None, self_test: bool) -> dict:
    """The 135M-shaped judge model (random weights, saved) in WORK/cache/smollm2-135m and the 8B-shaped
    config folder (no weights) in WORK/shape-8b; on a self-test both are tiny Llamas with SmolLM2's
    tokenizer. Returns their folders."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, LlamaConfig

    small, big = work / "cache" / "smollm2-135m", work / "shape-8b"
    if self_test:
        from j1.models import embedded_model_dir

        shape = embedded_model_dir()  # the tokenizer and chat template only
        tiny = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                    num_key_value_heads=2, max_position_embeddings=2048, tie_word_embeddings=True)
        small_cfg = LlamaConfig(**tiny)
        big_cfg = LlamaConfig(**{**tiny, "num_key_value_heads": 1, "rope_theta": 500000.0,  # Llama 3.1's rope
                                 "rope_scaling": LLAMA31_8B["rope_scaling"], "max_position_embeddings": 16384})
    else:
        shape = wheelhouse / "model-shape"
        small_cfg = AutoConfig.from_pretrained(shape)
        big_cfg = LlamaConfig(**LLAMA31_8B)
    tok = AutoTokenizer.from_pretrained(shape)
    for folder, cfg in ((small, small_cfg), (big, big_cfg)):
        folder.mkdir(parents=True, exist_ok=True)
        copy_shape(shape, folder, with_config=False)  # SmolLM2's tokenizer and chat template
        if self_test:
            cfg.vocab_size = len(tok)
        if self_test or folder == big:  # the 8B shape keeps Llama's 128256 rows; SmolLM2's ids are below
            cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id = tok.bos_token_id, tok.eos_token_id, tok.pad_token_id
        cfg.save_pretrained(folder)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(small_cfg, dtype=torch.float32)
    model.save_pretrained(small)
    return {"small": str(small), "small_params": sum(p.numel() for p in model.parameters()), "big": str(big),
            "big_config": {k: getattr(big_cfg, k) for k in ("hidden_size", "num_hidden_layers", "vocab_size")}}


# ---- one step ----

def run_step(cmd: list[str], seconds: float, log: Path, env: dict) -> dict:
    """Run ``cmd`` under coreutils ``timeout`` (its whole process group: a served judge goes too), its
    output appended to ``log``; returns status (ok, failed, timeout), return code and seconds."""
    t0 = time.monotonic()
    limit = max(1, int(seconds))
    with log.open("a") as fh:
        fh.write(f"$ {' '.join(cmd)}  (timeout {limit}s)\n")
        fh.flush()
        proc = subprocess.Popen(["timeout", "-k", "10", str(limit), *cmd], stdout=fh, stderr=subprocess.STDOUT,
                                env=env, cwd=REPO, start_new_session=True)
        try:
            code = proc.wait(timeout=limit + 30)
        except subprocess.TimeoutExpired:  # timeout itself hung: end the group we started
            os.killpg(proc.pid, 9)
            code = proc.wait()
    status = "ok" if code == 0 else "timeout" if code in (124, 137) else "failed"
    return {"status": status, "returncode": code, "seconds": round(time.monotonic() - t0, 1)}


_RESULT = re.compile(r"^(\S+::\S+)\s+(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b", re.M)


def pytest_counts(text: str) -> dict:
    """Per-outcome counts from ``pytest -v`` output, read line by line so a run cut short still counts
    what finished; ``decode_*`` count the decode-vs-generate tests (tests/gpu/test_gpu_decode.py).

    >>> pytest_counts("tests/gpu/test_gpu_decode.py::test_a[x] PASSED [ 50%]\\ntests/t.py::test_b SKIPPED (no)\\n")
    {'passed': 1, 'failed': 0, 'errors': 0, 'skipped': 1, 'decode_passed': 1, 'decode_failed': 0}
    """
    found = dict(_RESULT.findall(text))
    count = lambda ids, *outs: sum(1 for i in ids if found[i] in outs)  # noqa: E731
    decode = [i for i in found if "decode" in i.split("::")[0]]
    return {"passed": count(found, "PASSED", "XFAIL"), "failed": count(found, "FAILED", "XPASS"),
            "errors": count(found, "ERROR"), "skipped": count(found, "SKIPPED"),
            "decode_passed": count(decode, "PASSED"), "decode_failed": count(decode, "FAILED", "ERROR")}


def append_tail(src: Path, dst: Path) -> None:
    """Append ``src`` to ``dst``, only its last LOG_TAIL bytes when longer."""
    data = src.read_bytes()
    with dst.open("ab") as fh:
        fh.write(data if len(data) <= LOG_TAIL else b"[... cut ...]\n" + data[-LOG_TAIL:])


# ---- the plan ----

def plan(a, work: Path, models: dict, data: str | None) -> list[dict]:
    """The steps in order, each with its command, its time limit (s) and its log. The 8B step is last:
    it is the longest, and takes what time is left up to its limit."""
    py = sys.executable
    dtype = "float32" if a.self_test else "bfloat16"
    dev = ["--device", "cpu" if a.self_test else "cuda", "--dtype", dtype]
    if a.self_test:
        # one pair a step, 2 rollouts, 4 tokens: on a CPU TRL's chunked log-prob pass costs seconds a row
        smoke = ["--model", models["small"], "--batch", "4", "--num_generations", "2", "--max_completion_length", "4",
                 "--steps", "1"]
        big = ["--model", models["big"], "--use_peft", "--lora_r", "4", "--prompt_tokens", "250", "--batch", "4",
               "--micro_batch", "2", "--num_generations", "2", "--max_completion_length", "4", "--steps", "1"]
        decode = ["--items", "1", "--samples", "2", "--new-tokens", "4", "--threads", "1"]
        serve = ["--model", "smollm2-135m", "--max-new-tokens", "4", "--seconds", "1.5", "--check-max", "8",
                 "--threads", "1"]
        limits = {"pytest": 40, "train_smoke": 50, "decode": 40, "serve": 40, "train_8b": 50}
        # the GPU suite takes minutes on a CPU: the tiny model's decode tests show the step runs and is counted
        tests = ["tests/gpu/test_gpu_decode.py", "-k", "tiny"]
    else:
        # the smoke shape: ~600-token judge prompts (as --llmbar 2), 8 rollouts, 32 rows, 8 tokens
        smoke = ["--prompt_tokens", "600", "--batch", "32", "--num_generations", "8", "--max_completion_length", "8",
                 "--steps", "3"]
        big = ["--model", models["big"], "--use_peft", "--prompt_tokens", "1000", "--batch", "16", "--micro_batch", "8",
               "--num_generations", "8", "--max_completion_length", "8", "--steps", "2"]
        decode = ["--items", "2", "--samples", "8", "--new-tokens", "48", "--threads", "4"]
        serve = ["--model", "j1-135m", "--seconds", "10", "--check-max", "64", "--max-batch", "64",
                 "--batch-rows", "128", "--threads", "4"]
        limits = {"pytest": 100, "train_smoke": 80, "decode": 60, "serve": 100, "train_8b": 200}
        tests = ["tests"]
    return [
        {"name": "pytest", "log": "pytest.log", "limit": limits["pytest"],
         "cmd": [py, "-m", "pytest", "-m", "gpu", "-v", "-p", "no:cacheprovider", *tests]},
        {"name": "train_smoke", "log": "train.log", "limit": limits["train_smoke"], "json": work / "train_smoke.json",
         "cmd": [py, str(BENCH / "bench_train_step.py"), *dev, *smoke, "--json", str(work / "train_smoke.json")]},
        {"name": "decode", "log": "decode.log", "limit": limits["decode"], "json": work / "decode.json",
         "cmd": [py, str(BENCH / "bench_decode.py"), *dev, "--engines", "j1,generate,generate-static", "--rounds", "1", "--in-process", *decode,
                 *(["--data", data] if data else []), "--json", str(work / "decode.json")]},
        {"name": "serve", "log": "serve.log", "limit": limits["serve"], "json": work / "serve.json",
         "cmd": [py, str(BENCH / "bench_serve.py"), "--target", "local", "--clients", "1,32,64", "--cycle",
                 "--dtype", dtype, *serve, "--json", str(work / "serve.json")]},
        {"name": "train_8b", "log": "train.log", "limit": limits["train_8b"], "json": work / "train_8b.json",
         "cmd": [py, str(BENCH / "bench_train_step.py"), *dev, *big, "--json", str(work / "train_8b.json")]},
    ]


def section(step: dict, result: dict, output: str) -> dict:
    """A step's section of gpu.json: its status, time, and its numbers (the bench's JSON, or pytest's counts)."""
    out = dict(result)
    if step["name"] == "pytest":
        out.update(pytest_counts(output))
    elif step.get("json") and Path(step["json"]).is_file():
        out["result"] = json.loads(Path(step["json"]).read_text())
    if out["status"] != "ok":
        out["tail"] = output[-1500:]
    return out


# ---- the table ----

def _x(v) -> str:
    return "n/a" if v is None else f"{v:.3f}x"


def checks(sections: dict) -> list[dict]:
    """The rows of gpu.md: check, measured, goal, met (yes, no, or "-" where the row is for information)."""
    rows = []

    def add(check, measured, goal, met):
        rows.append({"check": check, "measured": measured, "goal": goal,
                     "met": "-" if met is None else "yes" if met else "no"})

    def missing(name):
        s = sections.get(name)
        return None if s and (s.get("result") or name == "pytest") else f"not measured ({(s or {}).get('status', 'not run')})"

    p = sections.get("pytest")
    if p:
        add("pytest -m gpu", f"{p['passed']} passed, {p['failed']} failed, {p['errors']} errors, {p['skipped']} skipped "
            f"({p['status']}, {p['seconds']} s)", "all pass", p["status"] == "ok" and not p["failed"] and not p["errors"])
        ran = p["decode_passed"] + p["decode_failed"]
        add("decode token-identical to generate, fp32 (pytest)", f"{p['decode_passed']} of {ran} decode tests passed",
            "identical", ran > 0 and not p["decode_failed"])
    for name, shape in (("train_smoke", "smoke shape"), ("train_8b", "8B shape, LoRA")):
        gap = missing(name)
        if gap:
            add(f"GRPO step, {shape}: j1 / plain TRL", gap, "<= 1.0x" if name == "train_smoke" else "< 1.0x (shared)", False)
            continue
        r = sections[name]["result"]
        where = (f"{r['rows_per_step']} rows, {r['prompt_tokens_mean']:.0f}-token prompts, G={r['num_generations']}, "
                 f"{r['dtype']}" + (f", peak {max(v or 0 for v in r['peak_gpu_gib'].values())} GiB" if r["peak_gpu_gib"]
                                    and any(r["peak_gpu_gib"].values()) else ""))
        plain = r["plain_trl_wall_step_s"]
        for key, label, share in (("ratio_j1_over_plain_wall", "sharing off", "j1_wall_step_s"),
                                  ("ratio_shared_over_plain_wall", "sharing on", "j1_shared_prompt_wall_step_s")):
            ratio = r[key]
            measured = f"{_x(ratio)} ({r[share]} s vs {plain} s; {where})"
            if name == "train_smoke":
                add(f"GRPO step, {shape}, j1 {label} / plain TRL", measured, "<= 1.0x", ratio <= 1.0)
            elif label == "sharing on":
                add(f"GRPO step, {shape}, j1 {label} / plain TRL", measured, "< 1.0x", ratio < 1.0)
            else:
                add(f"GRPO step, {shape}, j1 {label} / plain TRL", measured, "(information)", None)
    gap = missing("decode")
    if gap:
        add("decode judgments/s: j1.decode vs generate", gap, "(information)", None)
    else:
        e = sections["decode"]["result"]["engines"]
        j = e["j1"]["judgments_per_s"]
        add("decode judgments/s: j1.decode vs generate (dynamic, static cache)",
            f"j1 {j:.1f}, generate {e['generate']['judgments_per_s']:.1f}, static "
            f"{e['generate-static']['judgments_per_s']:.1f} ({j / e['generate']['judgments_per_s']:.2f}x generate)",
            "(information)", None)
    gap = missing("serve")
    if gap:
        add("j1 serve at 64 clients", gap, ">= 1,000 judgments/s", False)
        add("j1 serve 64 clients / 1 client", gap, ">= 10x", False)
    else:
        s = sections["serve"]["result"]["results"]["local"]
        c = s["concurrent_by_clients"]
        top = c.get("64") or s["concurrent"]
        add("j1 serve judgments/s at 64 clients", f"{top['judgments_per_s']} (p50 {top['p50_s']} s)",
            ">= 1,000 judgments/s", (top["judgments_per_s"] or 0) >= 1000)
        rates = ", ".join([f"1: {s['sequential']['judgments_per_s']}"] + [f"{k}: {v['judgments_per_s']}" for k, v in c.items()])
        speed = s["speedup_by_clients"].get("64", s["speedup"])
        add("j1 serve 64 clients / 1 client", f"{_x(speed)} (judgments/s by clients {rates})", ">= 10x",
            (speed or 0) >= 10)
        phases = [s["sequential"], *c.values()]
        add("j1 serve answers dropped / wrong", f"{sum(p['dropped'] for p in phases)} dropped, "
            f"{sum(p['wrong'] for p in phases)} wrong of {sum(p['checked'] for p in phases)} checked "
            f"(check {s['reference_check']['seconds']} s)", "0 / 0",
            not any(p["dropped"] or p["wrong"] for p in phases))
    return rows


def markdown(report: dict) -> str:
    lines = [f"# j1 GPU check ({report['mode']}, {report['device']}{', ' + report['gpu'] if report.get('gpu') else ''}, "
             f"torch {report['torch']}, {report['elapsed_s']} s)", "",
             "| check | measured | goal | met? |", "|---|---|---|---|"]
    lines += [f"| {r['check']} | {r['measured']} | {r['goal']} | {r['met']} |" for r in report["checks"]]
    return "\n".join(lines) + "\n"


def write(out: Path, report: dict) -> None:
    """gpu.json and gpu.md, each written to a temp file and renamed (a cut run leaves whole files)."""
    report["checks"] = checks(report["sections"])
    for name, text in (("gpu.json", json.dumps(report, indent=1) + "\n"), ("gpu.md", markdown(report))):
        tmp = out / f".{name}.tmp"
        tmp.write_text(text)
        tmp.replace(out / name)


def run(a) -> int:
    import torch
    import transformers
    import trl

    started = time.monotonic()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("gpu.json", "gpu.md", "pytest.log", "train.log", "decode.log", "serve.log"):
        (out / name).unlink(missing_ok=True)  # the logs are appended to: start them empty (gpu_check.sh
        # starts setup.log, with pip's output on the GPU machine)
    work = Path(tempfile.mkdtemp(prefix="j1-gpu-check-"))
    device = "cpu" if a.self_test else "cuda"
    report = {"mode": "self-test" if a.self_test else "gpu", "device": device, "torch": torch.__version__,
              "transformers": transformers.__version__, "trl": trl.__version__, "budget_s": a.budget,
              "gpu": None, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "elapsed_s": 0,
              "work": str(work), "sections": {}}
    setup_log = out / "setup.log"
    if device == "cuda":
        if not torch.cuda.is_available():
            report["sections"]["setup"] = {"status": "failed", "device": device, "error": "torch sees no CUDA device"}
            write(out, report)
            return 2
        report["gpu"] = torch.cuda.get_device_name(0)
    wheelhouse = Path(a.wheelhouse) if a.wheelhouse else None
    t0 = time.monotonic()
    models = build_models(work, wheelhouse, a.self_test)
    report["sections"]["setup"] = {"status": "ok", "device": device, "seconds": round(time.monotonic() - t0, 1),
                                   "small_params": models["small_params"], "big_config": models["big_config"]}
    with setup_log.open("a") as fh:
        fh.write(json.dumps(models, indent=1) + "\n")
    data = str(wheelhouse / "data" / LLMBAR.name) if wheelhouse and (wheelhouse / "data" / LLMBAR.name).is_file() \
        else (str(LLMBAR) if LLMBAR.is_file() else None)
    env = {**os.environ, "J1_CACHE": str(work / "cache"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "NO_COLOR": "1"}
    if a.self_test:
        env.update(J1_TEST_DEVICE="cpu", OMP_NUM_THREADS="1")
    write(out, report)
    for step in plan(a, work, models, data):
        left = a.budget - (time.monotonic() - started)
        if left < 5:
            report["sections"][step["name"]] = {"status": "skipped", "device": device, "error": "no time left"}
            continue
        raw = work / f"{step['name']}.out"
        result = run_step(step["cmd"], min(step["limit"], left - 2), raw, env)
        text = raw.read_text(errors="replace")
        report["sections"][step["name"]] = {"device": device, **section(step, result, text)}
        append_tail(raw, out / step["log"])  # both GRPO steps go to train.log
        report["elapsed_s"] = round(time.monotonic() - started, 1)
        write(out, report)
    report["elapsed_s"] = round(time.monotonic() - started, 1)
    write(out, report)
    sys.stdout.write(markdown(report))
    shutil.rmtree(work, ignore_errors=True)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="copy the model's shape and the LLMBar pairs into the wheelhouse")
    prep.add_argument("--wheelhouse", required=True)
    r = sub.add_parser("run", help="the check: build the models, run the steps, write OUT/gpu.md and gpu.json")
    r.add_argument("--out", required=True)
    r.add_argument("--wheelhouse", default=None, help="the prepared folder (the GPU run)")
    r.add_argument("--self-test", action="store_true", help="tiny shapes on the CPU (checks this script)")
    r.add_argument("--budget", type=float, default=None,
                   help="seconds for all steps (default 480 on the GPU, 170 for the self-test)")
    a = p.parse_args(argv)
    if a.command == "prepare":
        sizes = prepare(Path(a.wheelhouse))
        print(json.dumps(sizes))
        if sizes["total_mib"] > sizes["limit_mib"]:
            sys.stderr.write(f"gpu_check: repository + wheelhouse = {sizes['total_mib']} MiB, over the "
                             f"{sizes['limit_mib']} MiB that travel to the GPU machine\n")
            return 1
        return 0
    if not a.self_test and not a.wheelhouse:
        p.error("run needs --wheelhouse (the GPU run) or --self-test")
    a.budget = a.budget or (170.0 if a.self_test else 480.0)
    return run(a)


if __name__ == "__main__":
    sys.exit(main())
