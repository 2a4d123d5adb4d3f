"""What a thought costs: judging speed of two judges on the same held-out pairs, in one run.

    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_thinking.py --judges j1-135m runs/think/c-sft [--pairs 16]
        [--rounds 3] [--json out.json]

Each judge judges the same ``--pairs`` pairs of ``--data`` (default: the shipped held-out pairs, both orders,
one sample, greedy) as ``j1 judge`` asks it (its manifest's format, wording, prefill and token budget), with the
reference where a pair carries one and the judge reads it. The judges alternate, ``--rounds`` times, in one
process on one thread, so each sees the same machine; a round's first call per judge warms it and is not timed.
Prints the median judgments/s of each, the words of each answer, and each one's time against the first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import j1
from j1.schema import read_pairs

DATA = Path(__file__).resolve().parents[1] / "src" / "j1" / "assets" / "data" / "heldout_mismatch.jsonl"


def timed(judge, items) -> tuple[float, float]:
    """(seconds, words of the answer per judgment, prefill included) to judge ``items`` in both orders."""
    start = time.perf_counter()
    results = judge.compare_many(items)
    seconds = time.perf_counter() - start
    return seconds, statistics.mean(len(s.text.split()) for r in results for o in r.orders for s in o.samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judges", nargs="+", required=True, help="judges (shipped names or folders); the first is the baseline")
    ap.add_argument("--data", default=str(DATA), help="a pair file")
    ap.add_argument("--pairs", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    pairs = read_pairs(args.data)[: args.pairs]
    items = [{"prompt": p.prompt, "response_a": p.chosen, "response_b": p.rejected, "reference": p.reference}
             for p in pairs]
    judges = {name: j1.load_judge(name) for name in args.judges}
    for judge in judges.values():  # warm: weights paged in, kernels chosen
        judge.compare_many(items[:1])
    times: dict[str, list[float]] = {name: [] for name in judges}
    per: dict[str, float] = {}
    for r in range(args.rounds):
        order = list(judges) if r % 2 == 0 else list(reversed(judges))
        for name in order:
            seconds, per[name] = timed(judges[name], items)
            times[name].append(seconds)
    base = statistics.median(times[args.judges[0]])
    out = {"pairs": len(items), "judgments": 2 * len(items), "rounds": args.rounds, "judges": {}}
    print(f"{len(items)} pairs x 2 orders, {args.rounds} rounds alternated, one process")
    print("| judge | judgments/s | words per judgment | time vs " + args.judges[0] + " |")
    print("|---|---:|---:|---:|")
    for name in judges:
        med = statistics.median(times[name])
        out["judges"][name] = {"seconds": times[name], "judgments_per_s": 2 * len(items) / med,
                               "words_per_judgment": per[name], "time_ratio": med / base}
        print(f"| {name} | {2 * len(items) / med:.2f} | {per[name]:.1f} | {med / base:.2f}x |")
    for judge in judges.values():
        judge.close()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
