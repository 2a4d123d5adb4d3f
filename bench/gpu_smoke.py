"""One-GPU smoke run of the J1 loop: format warm-up steps, then J1 GRPO steps, on the embedded model and
the pairs that ship with j1 (no network), timed on the GPU and, for comparison, on the CPU.

Each device runs the real commands in-process: ``j1 warmup`` (label-free format SFT) and ``j1 train``
(J1 GRPO from the warmed-up model; generation with vLLM colocated when vLLM is importable and the
device is a GPU, else transformers' ``generate``). The GRPO steps are timed from TRL's per-step
``step_time`` (the first step, which compiles and warms caches, is left out when there are more):
steps/s, rollouts/s (completions generated and trained per second) and tokens/s (completion tokens
per second). Results go to OUT/smoke.json and OUT/smoke.md; every run folder has its run.json.

With a GPU, ``--serve_seconds S`` (default 30; 0 skips it) then runs ``bench/bench_serve.py`` on the
shipped judge served from the GPU: 32 clients beside one request at a time, S seconds each
(OUT/serve_local.json). On a CPU batching cannot beat the prompt encoding (results/serve), so this is
where the serving goal of 5x the sequential judgments/s is measured.

    python bench/gpu_smoke.py --out runs/gpu-smoke                  # GPU, then the CPU comparison
    python bench/gpu_smoke.py --device cpu --steps 2 --out /tmp/s   # CPU alone, tiny budgets (~2 min)

bench/GPU_SMOKE.md says what to copy to a GPU machine and the one command to run there.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAIRS = REPO / "src" / "j1" / "assets" / "data" / "gsm8k_mismatch.jsonl"  # ships with j1
log = logging.getLogger("gpu_smoke")


def budgets(device: str, a) -> dict:
    """Steps per device: the GPU run takes --steps and --warmup_steps; the CPU comparison after it takes
    --cpu_steps of each (same shapes, so the per-second rates compare); a CPU-only run (--device cpu)
    takes --steps, and as many warm-up steps at most."""
    if device == "cuda":
        return {"warmup_steps": a.warmup_steps, "grpo_steps": a.steps}
    steps = a.steps if a.device == "cpu" else a.cpu_steps
    return {"warmup_steps": min(a.warmup_steps, steps), "grpo_steps": steps}


def warmup_argv(device: str, out: Path, a, steps: int) -> list[str]:
    return [
        "warmup", "--formulation", "pav", "--template", "compact", "--train_file", str(PAIRS),
        "--max_pairs", str(max(8, a.pairs_per_step * 2)), "--heldout_pairs", "2", "--check_samples", "2",
        "--check_max_new_tokens", str(a.max_completion_length), "--output_dir", str(out),
        "--max_steps", str(steps), "--per_device_train_batch_size", "4", "--learning_rate", "1e-4",
        "--lr_scheduler_type", "constant", "--max_length", "768", "--logging_steps", "1", "--save_strategy", "no",
        "--report_to", "none", "--seed", str(a.seed), *device_flags(device),
    ]


def train_argv(device: str, out: Path, model: str, a, steps: int, vllm: bool) -> list[str]:
    rows = a.pairs_per_step * 2 * a.num_generations  # pairs x 2 orders x G rollouts
    argv = [
        "train", "--formulation", "pav", "--template", "compact", "--train_file", str(PAIRS),
        "--max_pairs", str(a.pairs_per_step * (steps + 1)), "--model_name_or_path", model,
        "--output_dir", str(out), "--num_generations", str(a.num_generations),
        "--per_device_train_batch_size", str(rows), "--gradient_accumulation_steps", "1",
        "--max_completion_length", str(a.max_completion_length), "--temperature", "1.0",
        "--learning_rate", "1e-6", "--beta", "0.0", "--max_steps", str(steps), "--logging_steps", "1",
        "--save_strategy", "no", "--report_to", "none", "--seed", str(a.seed), "--dataloader_num_workers", "0",
        "--gradient_checkpointing", "false", *device_flags(device),
    ]
    if vllm:
        argv += ["--use_vllm", "true", "--vllm_mode", "colocate", "--vllm_gpu_memory_utilization", "0.3",
                 "--vllm_max_model_length", "2048"]
    return argv


def device_flags(device: str) -> list[str]:
    if device == "cuda":
        return ["--bf16", "true", "--dtype", "bfloat16"]
    return ["--bf16", "false", "--use_cpu", "true", "--dtype", "float32"]


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def grpo_rates(log_rows: list[dict], rows_per_step: int) -> dict:
    """steps/s, rollouts/s and completion tokens/s from TRL's per-step log (first step left out when
    there are more, as it pays one-time costs).

    >>> grpo_rates([{"step_time": 9.0, "completions/mean_length": 1.0},
    ...             {"step_time": 2.0, "completions/mean_length": 4.0}], rows_per_step=8)
    {'timed_steps': 1, 'step_s': 2.0, 'steps_per_s': 0.5, 'rollouts_per_s': 4.0, 'tokens_per_s': 16.0}
    """
    steps = [r for r in log_rows if "step_time" in r]
    if not steps:
        raise RuntimeError("the GRPO run logged no step_time: no step finished")
    timed = steps[1:] if len(steps) > 1 else steps
    seconds = sum(r["step_time"] for r in timed)
    tokens = sum(r.get("completions/mean_length", 0.0) * rows_per_step for r in timed)
    return {"timed_steps": len(timed), "step_s": round(seconds / len(timed), 4),
            "steps_per_s": round(len(timed) / seconds, 4), "rollouts_per_s": round(len(timed) * rows_per_step / seconds, 3),
            "tokens_per_s": round(tokens / seconds, 2)}


def run_device(device: str, out: Path, a) -> dict:
    from j1.cli.main import main as j1

    sizes = budgets(device, a)
    vllm = device == "cuda" and importlib.util.find_spec("vllm") is not None and not a.no_vllm
    t0 = time.perf_counter()
    if j1(warmup_argv(device, out / "warmup", a, sizes["warmup_steps"])) != 0:
        raise RuntimeError(f"j1 warmup failed on {device}")
    warm_s = time.perf_counter() - t0
    warm = json.loads((out / "warmup" / "warmup.json").read_text())
    # The SFT steps alone (TRL's train_runtime), without loading and the valid-rate checks around them.
    sft_s = [r for r in read_log(out / "warmup" / "log.jsonl") if "train_runtime" in r][-1]["train_runtime"]
    t1 = time.perf_counter()
    if j1(train_argv(device, out / "train", str(out / "warmup"), a, sizes["grpo_steps"], vllm)) != 0:
        raise RuntimeError(f"j1 train failed on {device}")
    train_s = time.perf_counter() - t1
    rows = a.pairs_per_step * 2 * a.num_generations
    rates = grpo_rates(read_log(out / "train" / "log.jsonl"), rows)
    last = [r for r in read_log(out / "train" / "log.jsonl") if "reward" in r][-1]
    return {
        "device": device, "generation": "vllm (colocate)" if vllm else "transformers",
        "warmup_steps": sizes["warmup_steps"], "warmup_s": round(warm_s, 1), "warmup_sft_s": round(sft_s, 1),
        "warmup_steps_per_s": round(sizes["warmup_steps"] / sft_s, 4),
        "valid_rate_before": (warm.get("before") or {}).get("valid_rate"),
        "valid_rate_after": (warm.get("after") or {}).get("valid_rate"),
        "grpo_steps": sizes["grpo_steps"], "grpo_s": round(train_s, 1), "rollouts_per_step": rows, **rates,
        "last_reward": last.get("reward"), "last_invalid_rate": last.get("j1/invalid_rate"),
    }


def serve_load(out: Path, seconds: float) -> dict:
    """bench_serve.py's local target (j1-135m behind ``j1 serve``, which runs on the GPU when there is
    one): its speed-up of 32 clients over one at a time, and the dropped and wrong answers."""
    path = out / "serve_local.json"
    cmd = [sys.executable, str(REPO / "bench" / "bench_serve.py"), "--target", "local", "--clients", "32",
           "--seconds", str(seconds), "--max-batch", "32", "--batch-rows", "64", "--json", str(path)]
    subprocess.run(cmd, check=True)
    res = json.loads(path.read_text())["results"]["local"]
    return {"speedup": res["speedup"], "goal": res["goal"],
            **{f"{phase}_{key}": res[phase][key] for phase in ("sequential", "concurrent")
               for key in ("judgments_per_s", "answered", "dropped", "wrong", "p50_s")}}


def serve_line(serve: dict) -> str:
    return (f"\nj1 serve on the GPU, 32 clients: {serve['concurrent_judgments_per_s']} judgments/s against "
            f"{serve['sequential_judgments_per_s']} one at a time, **{serve['speedup']}x** (goal {serve['goal']}x); "
            f"dropped {serve['sequential_dropped'] + serve['concurrent_dropped']}, "
            f"wrong {serve['sequential_wrong'] + serve['concurrent_wrong']}\n")


def table(results: list[dict]) -> str:
    head = ("| device | generation | warm-up steps/s | GRPO steps/s | rollouts/s "
            "| tokens/s | valid before -> after warm-up |")
    lines = [head, "|" + "---|" * 7]
    for r in results:
        valid = f"{r['valid_rate_before']} -> {r['valid_rate_after']}"
        lines.append(f"| {r['device']} | {r['generation']} | {r['warmup_steps_per_s']} | {r['steps_per_s']} | "
                     f"{r['rollouts_per_s']} | {r['tokens_per_s']} | {valid} |")
    if len(results) == 2 and results[1]["steps_per_s"]:
        lines.append(f"\nGPU / CPU GRPO step rate: {results[0]['steps_per_s'] / results[1]['steps_per_s']:.1f}x")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="run folder (one sub-folder per device)")
    p.add_argument("--device", choices=("both", "cuda", "cpu"), default="both",
                   help="both = the GPU run, then the same steps on the CPU for comparison")
    p.add_argument("--steps", type=int, default=12, help="J1 GRPO steps on the GPU")
    p.add_argument("--warmup_steps", type=int, default=16, help="format warm-up (SFT) steps on the GPU")
    p.add_argument("--cpu_steps", type=int, default=2, help="GRPO (and at most this many warm-up) steps on the CPU")
    p.add_argument("--pairs_per_step", type=int, default=2, help="pairs per GRPO step (x 2 orders x G rollouts)")
    p.add_argument("--num_generations", type=int, default=4, help="rollouts per judge prompt (G)")
    p.add_argument("--max_completion_length", type=int, default=64, help="most tokens per rollout")
    p.add_argument("--no_vllm", action="store_true", help="transformers generation even when vLLM is importable")
    p.add_argument("--serve_seconds", type=float, default=30.0,
                   help="with a GPU: seconds of each bench_serve.py phase on the GPU-served judge (0: skip)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    import torch

    has_gpu = torch.cuda.is_available()
    if a.device == "cuda" and not has_gpu:
        sys.stderr.write("gpu_smoke: error: --device cuda but torch sees no CUDA device\n")
        return 2
    devices = {"both": ["cuda", "cpu"] if has_gpu else ["cpu"], "cuda": ["cuda"], "cpu": ["cpu"]}[a.device]
    if a.device == "both" and not has_gpu:
        log.warning("no CUDA device: running the CPU part only")
    out = Path(a.out)
    results = []
    for device in devices:
        log.info("=== %s", device)
        results.append(run_device(device, out / device, a))
    serve = serve_load(out, a.serve_seconds) if "cuda" in devices and a.serve_seconds > 0 else None
    report = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0)
              if has_gpu else None, "vllm": importlib.util.find_spec("vllm") is not None,
              "settings": vars(a), "results": results, "serve_local": serve}
    out.mkdir(parents=True, exist_ok=True)
    text = table(results) + (serve_line(serve) if serve else "")
    (out / "smoke.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out / "smoke.md").write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
