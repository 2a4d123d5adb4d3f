"""Where a local j1-135m judgment's time goes on this CPU, and what batching can save of it.

    OMP_NUM_THREADS=1 .venv/bin/python results/serve/profile_local.py --json results/serve/profile_local.json
    OMP_NUM_THREADS=2 .venv/bin/python results/serve/profile_local.py --threads 2 --json results/serve/profile_local_2t.json

On real judge prompts (GSM8K pairs of the shipped ``gsm8k_mismatch.jsonl``, rendered as j1-135m asks:
its template and verdict prefill): the prompt length, the new tokens the
judge generates, the prefill seconds per prompt when 1, 4 or 16 prompts are encoded together, and
the seconds of one decode step for 1 to 64 rows (``--threads`` torch threads). A judgment is two prompts (both orders), so
one at a time it costs 2 x (prefill(1) + steps x step(1)) and in a batch of B judgments
2 x prefill(2B) + steps x step(2B) / B.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "src" / "j1" / "assets" / "data" / "gsm8k_mismatch.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    import torch
    from transformers import DynamicCache

    from j1.api import load_judge
    from j1.judging.chat import with_prefill
    from j1.pairs import render_both

    torch.set_num_threads(args.threads)
    judge = load_judge("j1-135m")
    backend, model, tok = judge.backend, judge.backend.model, judge.backend.tokenizer
    rows = [json.loads(line) for line in DATA.read_text().splitlines()[:32]]
    prompts = [with_prefill(m, judge.prefill)
               for r in rows for _, m in render_both(judge.format, r["prompt"], r["chosen"], r["rejected"])]
    texts = [backend.render(m) for m in prompts]
    lengths = [len(tok(t, add_special_tokens=False).input_ids) for t in texts]
    # The new tokens the judge generates for its verdict, one prompt at a time.
    new_tokens = [backend.generate([m], judge.params)[0][0].completion_tokens for m in prompts[:8]]

    def prefill(batch: list[str]) -> float:
        enc = tok(batch, return_tensors="pt", padding=True, add_special_tokens=False)
        best = float("inf")
        for _ in range(args.repeats):
            with torch.inference_mode():
                t0 = time.perf_counter()
                model(input_ids=enc.input_ids, attention_mask=enc.attention_mask, logits_to_keep=1)
                best = min(best, time.perf_counter() - t0)
        return best / len(batch)

    def step(rows_: int) -> float:
        ids = tok([texts[0]] * rows_, return_tensors="pt", add_special_tokens=False).input_ids
        with torch.inference_mode():
            cache = DynamicCache(config=model.config)
            model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
            nxt = ids[:, -1:]
            t0 = time.perf_counter()
            for _ in range(4):
                model(input_ids=nxt, past_key_values=cache, use_cache=True, logits_to_keep=1)
            return (time.perf_counter() - t0) / 4

    prefill(texts[:1])  # warm-up
    out = {
        "prompt_tokens_mean": sum(lengths) / len(lengths), "prompt_tokens_range": [min(lengths), max(lengths)],
        "new_tokens_per_prompt": new_tokens,
        "prefill_s_per_prompt": {b: round(prefill(texts[:b]), 3) for b in (1, 4, 16)},
        "decode_step_s": {r: round(step(r), 3) for r in (1, 8, 32, 64)},
    }
    steps = sum(new_tokens) / len(new_tokens)
    seq = 2 * (out["prefill_s_per_prompt"][1] + steps * out["decode_step_s"][1])
    batched = 2 * out["prefill_s_per_prompt"][16] + steps * out["decode_step_s"][32] / 16
    out["model_s_per_judgment"] = {"one_at_a_time": round(seq, 2), "batch_of_16_judgments": round(batched, 2),
                                   "ceiling_speedup": round(seq / batched, 2)}
    out["threads"] = args.threads
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
