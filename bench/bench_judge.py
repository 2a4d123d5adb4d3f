"""Local judging speed on the embedded model: one judgment at a time vs batched with N shared-prefill samples.

    .venv/bin/python bench/bench_judge.py [--items 4] [--samples 8] [--max-new-tokens 48]

Judges real pairs (../shared/data/llmbar_dev.jsonl) with the pav format in both orders and prints,
side by side in one run: judgments/s and generated tokens/s for
  1. batch 1: each judgment (one prompt, one sample) generated alone, as a naive loop does;
  2. N samples per prompt without prefill sharing (``num_return_sequences``: the prompt is encoded N times);
  3. N samples per prompt sharing one prefill, prompts batched (what j1 uses);
and the speed-up of 3 over 1. Every variant decodes the same number of new tokens per judgment
(EOS is suppressed), so the ratios compare like with like. ``--device``/``--dtype`` choose where the
model runs (a CUDA timing ends with a synchronisation); ``--json`` writes the numbers with both.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from j1.backends import SamplingParams
from j1.backends.local import LocalBackend
from j1.formats import get_format
from j1.pairs import render_both

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "llmbar_dev.jsonl"


def load_prompts(items: int, data: str | Path | None = None) -> list:
    """The pav prompts of the first ``items`` LLMBar dev pairs in both orders (``data``: another copy of
    the file; default ``../shared/data/llmbar_dev.jsonl``)."""
    fmt = get_format("pav")
    prompts = []
    with Path(data or DATA).open() as fh:
        for line in list(fh)[:items]:
            row = json.loads(line)
            prompts += [m for _, m in render_both(fmt, row["input"], row["output_1"], row["output_2"])]
    return prompts


def timed(backend: LocalBackend, prompts: list, params: SamplingParams, one_at_a_time: bool) -> tuple[float, int, int]:
    backend.usage.completion_tokens = 0
    t0 = time.perf_counter()
    if one_at_a_time:
        for k in range(params.n):
            for p in prompts:
                backend.generate([p], SamplingParams(1, params.temperature, params.top_p, params.max_new_tokens,
                                                     params.seed + k))
    else:
        backend.generate(prompts, params)
    if str(backend.device).startswith("cuda"):
        import torch

        torch.cuda.synchronize()
    return time.perf_counter() - t0, len(prompts) * params.n, backend.usage.completion_tokens


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=4, help="pairs (each judged in both orders)")
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--batch-rows", type=int, default=64)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the model runs")
    ap.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32", help="its weights")
    ap.add_argument("--data", default=None, help="LLMBar dev JSONL (default ../shared/data/llmbar_dev.jsonl)")
    ap.add_argument("--json", default=None, help="also write the numbers here")
    args = ap.parse_args(argv)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            ap.error("--device cuda: torch sees no CUDA device")

    base = LocalBackend(None, batch_rows=args.batch_rows, dtype=args.dtype, device=args.device)
    # Suppress EOS so every judgment decodes exactly max_new_tokens: equal work in every variant.
    base.model.generation_config.suppress_tokens = None
    base.model.generation_config.min_new_tokens = args.max_new_tokens
    prompts = load_prompts(args.items, args.data)
    params = SamplingParams(n=args.samples, temperature=1.0, max_new_tokens=args.max_new_tokens, seed=0)
    base.generate(prompts[:1], SamplingParams(max_new_tokens=4, temperature=0))  # warm-up

    variants = {
        "batch 1 (naive loop)": (base, True),
        f"N={args.samples}, prefill repeated": (
            LocalBackend.from_model(base.model, base.tokenizer, batch_rows=args.batch_rows, share_prefill=False),
            False),
        f"N={args.samples}, shared prefill, batched": (base, False),
    }
    results = {}
    print(f"{len(prompts)} judge prompts ({args.items} pairs x 2 orders), {args.samples} samples each, "
          f"{args.max_new_tokens} new tokens per judgment, batch rows {args.batch_rows}, {args.device} {args.dtype}")
    print(f"{'variant':<40} {'seconds':>8} {'judgments/s':>12} {'tokens/s':>9}")
    for name, (backend, naive) in variants.items():
        secs, judgments, tokens = timed(backend, prompts, params, naive)
        results[name] = judgments / secs
        print(f"{name:<40} {secs:8.1f} {judgments / secs:12.2f} {tokens / secs:9.1f}")
    names = list(results)
    print(f"speed-up, shared prefill batched vs batch 1: {results[names[2]] / results[names[0]]:.1f}x")
    print(f"speed-up, shared prefill vs repeated prefill: {results[names[2]] / results[names[1]]:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "args": vars(args), "device": args.device, "dtype": args.dtype, "judgments_per_s": results,
            "speedup_shared_batched_over_batch1": results[names[2]] / results[names[0]],
            "speedup_shared_over_repeated": results[names[2]] / results[names[1]]}, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
