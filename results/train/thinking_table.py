"""The tables of results/train/thinking.md from the evaluation folders of results/train/thinking_eval.sh: per judge,
consistent accuracy (right in both orders) with its 95% bootstrap interval on the unseen sources (MATH with its
reference, LLMBar), per group, MATH without the reference, the invalid rate, the thought's median length and share
distinct, judgments per second, and a paired test against the fixed-thought judge on the unseen pairs (exact
McNemar over the pairs one gets right in both orders and the other does not). Then the test-time scaling rows.

    python results/train/thinking_table.py runs/think/eval a b c d --baseline b
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from j1.eval.show import results_of
from j1.eval.stats import bootstrap_mean_ci, paired_sign_test

GROUPS = ("MATH", "LLMBar", "Alpaca")
UNSEEN = ("MATH", "LLMBar")


def cell(values: list[bool]) -> str:
    if not values:
        return "–"
    ci = bootstrap_mean_ci([float(v) for v in values], np.random.default_rng(0), 1000)
    mean = sum(values) / len(values)
    return f"{mean:.1%}" + (f" [{ci[0]:.1%}, {ci[1]:.1%}]" if ci else "")


def consistent(records, groups) -> dict[str, bool]:
    return {r.id: bool(r.consistent) for r in records if r.category in groups}


def judge_row(root: Path, name: str, base: dict[str, bool] | None, baseline: str | None = None
              ) -> tuple[str, dict[str, bool]]:
    ref = results_of(root / f"{name}-ref")
    noref = results_of(root / f"{name}-noref")
    metrics = json.loads((root / f"{name}-ref" / "metrics.json").read_text())
    run = json.loads((root / f"{name}-ref" / "run.json").read_text())
    unseen = consistent(ref, UNSEEN)
    invalid = sum(not j["valid"] for r in ref for j in r.judgments) / sum(len(r.judgments) for r in ref)
    t = metrics.get("thoughts") or {}
    words = f"{t['thought_median_words']:g}" if t else "0"
    distinct = f"{t['thought_distinct']:.1%}" if t else "–"
    speed = sum(len(r.judgments) for r in ref) / run["seconds"]
    test = "–"
    if base is not None and name != baseline:
        gained = sum(unseen[i] and not base[i] for i in unseen)
        lost = sum(base[i] and not unseen[i] for i in unseen)
        test = f"+{gained} / −{lost}, p = {paired_sign_test(gained, lost):.3g}"
    cells = [cell(list(unseen.values())), *(cell(list(consistent(ref, [g]).values())) for g in GROUPS),
             cell(list(consistent(noref, ["MATH"]).values())), f"{invalid:.1%}", words, distinct, f"{speed:.2f}", test]
    return f"| {name} | " + " | ".join(cells) + " |", unseen


def scaling_rows(root: Path, name: str) -> list[str]:
    folder = root / f"{name}-s8"
    if not folder.exists():
        return []
    m = json.loads((folder / "metrics.json").read_text())
    out = []
    for k, block in m["scaling"].items():
        ci = block["consistent_accuracy_ci"]
        span = f" [{ci[0]:.1%}, {ci[1]:.1%}]" if ci else ""
        out.append(f"| {name} | {k} | {block['consistent_accuracy']:.1%}{span} | {block['accuracy']:.1%} | "
                   f"{block['flip_rate']:.1%} | {block['invalid_rate']:.1%} |")
    return out


def main(root: str, *names: str) -> None:
    args = list(names)
    baseline = None
    if "--baseline" in args:
        i = args.index("--baseline")
        baseline = args[i + 1]
        del args[i:i + 2]
    root_path = Path(root)
    base = judge_row(root_path, baseline, None)[1] if baseline else None
    print("| judge | unseen (MATH with ref + LLMBar) | MATH, ref | LLMBar | Alpaca | MATH, no ref | invalid | "
          "thought words | distinct | judgments/s | paired vs " + (baseline or "–") + " |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in args:
        print(judge_row(root_path, name, base, baseline)[0])
    rows = [r for name in args for r in scaling_rows(root_path, name)]
    if rows:
        print("\n| judge | samples k (majority) | consistent (MATH, ref) | accuracy | flip | invalid |")
        print("|---|---:|---:|---:|---:|---:|")
        print("\n".join(rows))


if __name__ == "__main__":
    main(*sys.argv[1:])
