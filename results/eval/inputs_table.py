"""The table of results/eval/README.md ("Criteria and reference answers"): for each run folder, accuracy (the
mean over both orders), consistent accuracy (right in both orders), flip and invalid rates, overall and on the
items that carried a reference (``results.jsonl``'s ``reference``) against those that did not; with MT-Bench, the
items of the reference-guided categories (``meta.mt_category``) whether the run sent the reference or not.

    python results/eval/inputs_table.py runs/eval54/shipped-heldout-noref runs/eval54/shipped-heldout-ref ...
    python results/eval/inputs_table.py --paired WITHOUT WITH   # the items the reference changed, item by item
"""

from __future__ import annotations

import sys
from pathlib import Path

from j1.eval.show import results_of

GUIDED = ("math", "reasoning", "coding")  # MT-Bench's reference-guided categories


def row(records) -> str:
    n = len(records)
    if not n:
        return "| | | | |"
    acc = sum(r.accuracy or 0.0 for r in records) / n
    cons = sum(bool(r.consistent) for r in records) / n
    flips = [r.flipped for r in records if r.flipped is not None]
    invalid = sum(any(not j["valid"] for j in r.judgments) for r in records) / n
    flip = f"{sum(flips) / len(flips):.1%}" if flips else "-"
    return f"| {n} | {acc:.1%} | **{cons:.1%}** | {flip} | {invalid:.1%} |"


def paired(without: str, with_: str) -> None:
    """Of the items that carried a reference in ``with_``, how many were right in both orders only without it
    (lost), only with it (gained), in both runs or in neither: a change is read against its own items."""
    before = {r.id: r for r in results_of(without)}
    after = [r for r in results_of(with_) if r.reference is not None]
    counts = {"gained": 0, "lost": 0, "both": 0, "neither": 0}
    for r in after:
        was, now = bool(before[r.id].consistent), bool(r.consistent)
        counts["both" if was and now else "gained" if now else "lost" if was else "neither"] += 1
    print(f"{Path(with_).name} vs {Path(without).name}, {len(after)} items with a reference: {counts}")


def main(runs: list[str]) -> None:
    if runs and runs[0] == "--paired":
        paired(*runs[1:])
        return
    print("| run | part | n | accuracy | consistent | flip | invalid (an order) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for run in runs:
        records = results_of(run)
        name = Path(run).name
        mt = any((r.meta or {}).get("mt_category") for r in records)
        if mt:
            parts = {"all": records,
                     "math, reasoning, coding": [r for r in records if (r.meta or {}).get("mt_category") in GUIDED],
                     "other categories": [r for r in records if (r.meta or {}).get("mt_category") not in GUIDED]}
        else:
            kinds = sorted({r.category for r in records})
            parts = {"all": records, **{k: [r for r in records if r.category == k] for k in kinds}}
        for part, recs in parts.items():
            print(f"| {name} | {part} {row(recs)}")


if __name__ == "__main__":
    main(sys.argv[1:])
