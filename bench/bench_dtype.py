"""Does a judge give the same verdicts in bf16 as in fp32 on this CPU, and how much faster is it? One run.

    OMP_NUM_THREADS=2 .venv/bin/python bench/bench_dtype.py [--judge j1-135m] [--pairs 120] [--json out.json]

Judges the shipped held-out pairs (``j1/assets/data/heldout_mismatch.jsonl``: MATH and Alpaca mismatch
pairs) in both orders as ``j1 eval`` asks the judge (its manifest's format, template, prefill, length;
greedy), with the judge loaded three ways: fp32 (j1's CPU default before), bf16 as ``--dtype bfloat16``
loads it (the base in bf16, the LoRA merged in bf16), and bf16 cast from the fp32-merged model. The pairs
go in chunks of one batch (``--chunk`` pairs, both orders), every chunk judged by each variant in
turn, the order rotated per chunk, so that each variant meets the same machine. Reports per variant:
accuracy and consistent accuracy with 95% bootstrap intervals (``j1.eval.metrics``), the verdicts that
agree with fp32's (per order, and per pair both orders), the paired difference in consistent accuracy
with its interval, judgments/s and the load average.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import time
from pathlib import Path

import numpy as np

HELDOUT = Path(__file__).resolve().parents[1] / "src" / "j1" / "assets" / "data" / "heldout_mismatch.jsonl"


def variants(judge: str, threads: int) -> dict:
    """name -> a LocalBackend of ``judge``."""
    import torch

    from j1.backends.local import LocalBackend

    torch.set_num_threads(threads)
    fp32 = LocalBackend(judge, dtype="float32")
    cast = LocalBackend.from_model(copy.deepcopy(fp32.model).to(torch.bfloat16), fp32.tokenizer, name=judge)
    return {"float32": fp32, "bfloat16": LocalBackend(judge, dtype="bfloat16"), "bfloat16 (cast after merge)": cast}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--judge", default="j1-135m")
    ap.add_argument("--pairs", type=int, default=120)
    ap.add_argument("--chunk", type=int, default=16, help="pairs per call (both orders: 32 prompts, one CPU batch)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)

    from j1.backends import SamplingParams
    from j1.eval.metrics import ItemOutcome, PairOutcome, metric_block
    from j1.eval.stats import bootstrap_mean_ci
    from j1.formats import get_format
    from j1.judging.judge import judge_pairs
    from j1.judging.judges import judge_folder, read_manifest
    from j1.schema import read_pairs

    manifest = read_manifest(judge_folder(a.judge))
    fmt = get_format(manifest.format, manifest.template)
    params = SamplingParams(n=1, temperature=0.0, max_new_tokens=manifest.max_new_tokens)
    pairs = read_pairs(HELDOUT)[: a.pairs]
    backends = variants(a.judge, a.threads)
    for b in backends.values():  # kernel set-up and weight packing are not what is measured
        judge_pairs(b, fmt, [(pairs[0].prompt, pairs[0].chosen, pairs[0].rejected)], params, manifest.assistant_prefill)
    names = list(backends)
    verdicts: dict[str, list[tuple[str, str]]] = {n: [] for n in names}
    seconds = dict.fromkeys(names, 0.0)
    loads = [os.getloadavg()[0]]
    for c, start in enumerate(range(0, len(pairs), a.chunk)):
        chunk = [(p.prompt, p.chosen, p.rejected) for p in pairs[start:start + a.chunk]]
        for name in names[c % len(names):] + names[: c % len(names)]:
            t0 = time.perf_counter()
            judged = judge_pairs(backends[name], fmt, chunk, params, manifest.assistant_prefill)
            seconds[name] += time.perf_counter() - t0
            # the chosen response is the original A: each order's verdict is in original naming
            verdicts[name] += [tuple(o.verdict for o in j.orders) for j in judged]
        loads.append(os.getloadavg()[0])
        print(f"pairs {start + len(chunk)}/{len(pairs)}: " + ", ".join(f"{n} {seconds[n]:.0f} s" for n in names), flush=True)

    rng = np.random.default_rng(0)
    ref = verdicts["float32"]

    def consistent(v):
        return np.array([float(ab == ba == "A") for ab, ba in v])

    rows = {}
    for name in names:
        v = verdicts[name]
        items = [ItemOutcome(pairs[k].id, "all", (PairOutcome("A", ab=ab, ba=ba),)) for k, (ab, ba) in enumerate(v)]
        block = metric_block(items, "mean", seed=0)
        diff = consistent(v) - consistent(ref)
        rows[name] = {
            "consistent_accuracy": block["consistent_accuracy"], "consistent_accuracy_ci": block["consistent_accuracy_ci"],
            "accuracy": block["accuracy"], "accuracy_ci": block["accuracy_ci"], "invalid_rate": block["invalid_rate"],
            "orders_agreeing_with_fp32": sum(x == y for p, q in zip(v, ref, strict=True) for x, y in zip(p, q, strict=True)),
            "pairs_agreeing_with_fp32": sum(p == q for p, q in zip(v, ref, strict=True)),
            "consistent_minus_fp32": float(diff.mean()),
            "consistent_minus_fp32_ci": list(bootstrap_mean_ci(diff, rng) or []),
            "seconds": seconds[name], "judgments_per_s": 2 * len(pairs) / seconds[name],
        }
    for name in names:
        rows[name]["speed_vs_fp32"] = seconds["float32"] / seconds[name]
    print(f"\n{a.judge} on {len(pairs)} held-out pairs x 2 orders, {a.threads} threads, load average "
          f"{min(loads):.2f}-{max(loads):.2f}")
    print(f"{'variant':<28} {'consistent acc':>22} {'accuracy':>22} {'orders = fp32':>13} {'pairs = fp32':>12} "
          f"{'cons. - fp32':>22} {'judgm/s':>8} {'x fp32':>6}")
    def interval(ci, sign=""):
        return f"[{ci[0]:{sign}.3f}, {ci[1]:{sign}.3f}]" if ci else "[n too small]"

    for name, r in rows.items():
        print(f"{name:<28} {r['consistent_accuracy']:>6.3f} {interval(r['consistent_accuracy_ci']):>15} "
              f"{r['accuracy']:>6.3f} {interval(r['accuracy_ci']):>15} {r['orders_agreeing_with_fp32']:>9}/{2 * len(pairs)} "
              f"{r['pairs_agreeing_with_fp32']:>8}/{len(pairs)} {r['consistent_minus_fp32']:>+6.3f} "
              f"{interval(r['consistent_minus_fp32_ci'], '+'):>15} {r['judgments_per_s']:>8.2f} {r['speed_vs_fp32']:>6.2f}")
    if a.json:
        from j1.device import cpu_native_bf16

        Path(a.json).write_text(json.dumps({"args": vars(a), "cpu_native_bf16": cpu_native_bf16(),
                                            "load_average": {"min": min(loads), "max": max(loads), "each_chunk": loads},
                                            "variants": rows, "verdicts": verdicts}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
