"""Markdown tables for results/train/README.md from a run's artefacts (no model needed).

    .venv/bin/python results/train/summarise.py results/train/pav-dev
"""

import json
import sys
from pathlib import Path


def pct(x):
    return "—" if x is None else f"{100 * x:.1f}%"


def ci(m, key):
    lo, hi = m.get(f"{key}_ci", [None, None])
    return "" if lo is None else f" [{100 * lo:.0f}, {100 * hi:.0f}]"


def eval_table(folder: Path, pairs: list[tuple[str, str]]) -> str:
    lines = ["| metric | " + " | ".join(label for label, _ in pairs) + " |", "|---|" + "---|" * len(pairs)]
    ms = [json.loads((folder / name / "metrics.json").read_text()) for _, name in pairs]
    n = " | ".join(str(m["overall"]["n"]) for m in ms)
    lines.append(f"| pairs (both orders, greedy) | {n} |")
    for key, label in (("accuracy", "accuracy (both orders' verdicts)"), ("consistent_accuracy", "consistent accuracy")):
        lines.append(f"| {label} | " + " | ".join(pct(m["overall"][key]) + ci(m["overall"], key) for m in ms) + " |")
    for order in ("AB", "BA"):
        lines.append(f"| accuracy, order {order} | " + " | ".join(pct(m["overall"]["order_accuracy"][order]) for m in ms) + " |")
    for key in ("flip_rate", "invalid_rate", "tie_rate"):
        lines.append(f"| {key.replace('_', ' ')} | " + " | ".join(pct(m["overall"][key]) for m in ms) + " |")
    return "\n".join(lines)


def curve_table(log: Path, every: int = 5) -> str:
    rows = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    rows = [r for r in rows if "loss" in r]
    keys = ["reward", "rewards/correctness/mean", "rewards/consistency/mean", "j1/acc/AB", "j1/acc/BA",
            "j1/flip_rate", "j1/invalid_rate", "j1/shown_A_share", "j1/thought_words", "step_time"]
    out = ["| steps | " + " | ".join(k.split("/")[-2] if k.endswith("/mean") else k.split("/")[-1] for k in keys) + " |",
           "|---|" + "---|" * len(keys)]
    for start in range(0, len(rows), every):
        chunk = rows[start : start + every]
        cells = []
        for k in keys:
            vals = [r[k] for r in chunk if r.get(k) is not None]
            cells.append(f"{sum(vals) / len(vals):.2f}" if vals else "—")
        out.append(f"| {chunk[0]['step']}–{chunk[-1]['step']} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(folder: str) -> None:
    f = Path(folder)
    w = json.loads((f / "warmup.json").read_text())
    print("### Format warm-up (valid-output rate on held-out prompts, sampled at T=1)\n")
    print("| | valid | share of verdicts = first shown |\n|---|---|---|")
    for when in ("before", "after"):
        print(f"| {when} | {pct(w[when]['valid_rate'])} of {w[when]['completions']} | {pct(w[when]['shown_A_share'])} |")
    print("\n### GRPO, mean per block of steps\n")
    print(curve_table(f / "log.jsonl"))
    for prefix, title in (("", "dev held-out pairs"), ("synth-", "synth mix held-out pairs")):
        if (f / f"{prefix}eval-before" / "metrics.json").exists() and (f / f"{prefix}eval-after" / "metrics.json").exists():
            print(f"\n### j1 eval on {title}\n")
            print(eval_table(f, [("before RL (warmed up)", f"{prefix}eval-before"), ("after RL", f"{prefix}eval-after")]))


if __name__ == "__main__":
    main(sys.argv[1])
