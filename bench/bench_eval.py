"""j1 eval's runner vs a naive loop, on the same model and items; prints both times and the speed-up.

The naive loop is what reward-bench's generative script does: one generate call (locally) or one
HTTP request per judgment, one after another; a judgment is one sample of one order of one pair.
j1 eval sends every prompt of every item to ``backend.stream`` at once: locally they are batched
with the N samples sharing each prompt's prefill, over HTTP they run concurrently with ``n=N``.

    flock /tmp/j1-heavy.lock .venv/bin/python bench/bench_eval.py            # both parts
    .venv/bin/python bench/bench_eval.py --skip-local                        # HTTP only (no model)

Goals (issue 3): >= 3x locally with N=8, >= 10x over HTTP.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # fake_openai.FakeOpenAIServer

from j1.backends import SamplingParams  # noqa: E402
from j1.cli.common import parse  # noqa: E402
from j1.eval.benchmarks import get_benchmark, load_items  # noqa: E402
from j1.eval.items import item_prompts  # noqa: E402
from j1.eval.runner import run_eval  # noqa: E402
from j1.eval.spec import EvalSpec  # noqa: E402
from j1.formats import get_format  # noqa: E402

FIXTURE = REPO / "tests" / "fixtures" / "eval" / "generic.jsonl"
LLMBAR = REPO.parent / "shared" / "data" / "llmbar_dev.jsonl"


def judgments(bench: str, data: Path, limit: int, fmt: str) -> list:
    items = load_items(get_benchmark(bench), str(data), limit=limit)
    return [m for it in items for _, m in item_prompts(get_format(fmt), it)]


def time_runner(backend, bench: str, data: Path, limit: int, samples: int, max_new_tokens: int,
                extra=()) -> tuple[float, float]:
    """``(judging seconds, whole run_eval seconds)``; the whole run adds loading, run.json, the
    bootstrap and the plots (a fixed ~1-3 s the naive loop does not do)."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg = parse(EvalSpec, ["--benchmark", bench, "--data", str(data), "--format", "pav", "--limit", str(limit),
                                 "--samples", str(samples), "--temperature", "1.0",
                                 "--max-new-tokens", str(max_new_tokens), "--out", tmp, "--progress", "false",
                                 "--n_boot", "100", *extra], prog="bench")
        t0 = time.perf_counter()
        run_eval(cfg, backend=backend)
        total = time.perf_counter() - t0
        return json.loads((Path(tmp) / "run.json").read_text())["generation_seconds"], total


def local_part(args) -> dict:
    from j1.backends.local import LocalBackend

    backend = LocalBackend(None)
    prompts = judgments("generic", FIXTURE, args.local_items, "pav")
    params = SamplingParams(n=1, temperature=1.0, max_new_tokens=args.max_new_tokens, seed=0)
    # warm-up (first-call overheads) outside both timings
    backend.generate(prompts[:1], params)
    t0 = time.perf_counter()
    for m in prompts:
        for s in range(args.samples):
            backend.generate([m], SamplingParams(n=1, temperature=1.0, max_new_tokens=args.max_new_tokens, seed=s))
    naive = time.perf_counter() - t0
    ours, whole = time_runner(backend, "generic", FIXTURE, args.local_items, args.samples, args.max_new_tokens)
    return {"part": "local (embedded SmolLM2-135M, CPU)", "items": args.local_items, "prompts": len(prompts),
            "samples": args.samples, "max_new_tokens": args.max_new_tokens, "judgments": len(prompts) * args.samples,
            "naive_s": naive, "j1_eval_s": ours, "j1_eval_whole_s": whole, "speedup": naive / ours,
            "speedup_whole": naive / whole}


def http_part(args) -> dict:
    import openai
    from fake_openai import FakeOpenAIServer

    from j1.backends.openai_http import OpenAIBackend

    data = LLMBAR if LLMBAR.exists() else FIXTURE
    prompts = judgments("llmbar" if data == LLMBAR else "generic", data, args.http_items, "pav")
    bench = "llmbar" if data == LLMBAR else "generic"
    with FakeOpenAIServer(latency=args.latency) as srv:
        # The stdlib server listens with a backlog of 5: more simultaneous connects get refused and
        # retried, which would time the fake server, not the client. Widen it.
        srv._httpd.socket.listen(1024)
        client = openai.OpenAI(base_url=srv.base_url, api_key="EMPTY", max_retries=0)
        t0 = time.perf_counter()
        for m in prompts:  # one request per judgment, sequentially
            for s in range(args.samples):
                client.chat.completions.create(model=srv.model, messages=m, n=1, temperature=1.0,
                                               max_tokens=args.max_new_tokens, seed=s)
        naive = time.perf_counter() - t0
        t0 = time.perf_counter()
        for m in prompts:  # one request per prompt asking n=N, still sequential (for context)
            client.chat.completions.create(model=srv.model, messages=m, n=args.samples, temperature=1.0,
                                           max_tokens=args.max_new_tokens)
        naive_n = time.perf_counter() - t0
        backend = OpenAIBackend(srv.base_url, concurrency=args.concurrency)
        ours, whole = time_runner(backend, bench, data, args.http_items, args.samples, args.max_new_tokens)
    return {"part": f"HTTP (scripted OpenAI server, {args.latency}s latency per request)", "items": args.http_items,
            "prompts": len(prompts), "samples": args.samples, "judgments": len(prompts) * args.samples,
            "concurrency": args.concurrency, "naive_s": naive, "naive_n_per_request_s": naive_n, "j1_eval_s": ours,
            "j1_eval_whole_s": whole, "speedup": naive / ours, "speedup_whole": naive / whole,
            "speedup_vs_n_per_request": naive_n / ours}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=24)
    ap.add_argument("--local-items", type=int, default=2)
    ap.add_argument("--http-items", type=int, default=20)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args(argv)
    rows = [] if args.skip_local else [local_part(args)]
    rows.append(http_part(args))
    print("times in seconds; 'j1 eval' = its judging phase, 'whole' adds loading, scoring, bootstrap and plots")
    print(f"{'part':<58} {'judgments':>9} {'naive':>8} {'j1 eval':>8} {'speed-up':>9} {'whole':>7} {'speed-up':>9}")
    for r in rows:
        print(f"{r['part']:<58} {r['judgments']:>9} {r['naive_s']:>8.2f} {r['j1_eval_s']:>8.2f} "
              f"{r['speedup']:>8.1f}x {r['j1_eval_whole_s']:>7.2f} {r['speedup_whole']:>8.1f}x")
    for r in rows:
        if "naive_n_per_request_s" in r:
            print(f"(HTTP, naive with n={r['samples']} per request, sequential: {r['naive_n_per_request_s']:.2f} s -> "
                  f"j1 eval {r['speedup_vs_n_per_request']:.1f}x faster)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
