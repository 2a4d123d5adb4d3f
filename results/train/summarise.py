"""Markdown tables for results/train/LOG.md from a run's artefacts (no model needed).

    .venv/bin/python results/train/summarise.py results/train/pav-dev [STEPS_PER_BLOCK]
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
    lines.append(f"| pairs (both orders) | {n} |")
    for key, label in (("accuracy", "accuracy (both orders' verdicts)"), ("consistent_accuracy", "consistent accuracy")):
        lines.append(f"| {label} | " + " | ".join(pct(m["overall"][key]) + ci(m["overall"], key) for m in ms) + " |")
    for order in ("AB", "BA"):
        lines.append(f"| accuracy, order {order} | " + " | ".join(pct(m["overall"]["order_accuracy"][order]) for m in ms) + " |")
    for key in ("flip_rate", "invalid_rate", "tie_rate"):
        lines.append(f"| {key.replace('_', ' ')} | " + " | ".join(pct(m["overall"][key]) for m in ms) + " |")
    for cat in sorted(ms[0].get("categories", {})) if len(ms[0].get("categories", {})) > 1 else ():
        for key, label in (("accuracy", "accuracy"), ("consistent_accuracy", "consistent accuracy"),
                           ("flip_rate", "flip rate")):
            cells = [pct(m["categories"][cat][key]) + ci(m["categories"][cat], key) for m in ms]
            lines.append(f"| {cat} ({ms[0]['categories'][cat]['n']} pairs): {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


CURVE_KEYS = ("reward", "rewards/correctness/mean", "rewards/consistency/mean", "j1/acc/AB", "j1/acc/BA",
              "j1/flip_rate", "j1/invalid_rate", "j1/shown_A_share", "j1/thought_words", "step_time")
# Whether the sampled completions keep the warmed-up format: the share cut at max_completion_length,
# the mean length of those that ended, and the KL to the reference (0 when beta = 0).
FORMAT_KEYS = ("completions/clipped_ratio", "completions/mean_terminated_length", "kl")


def curve_table(log: Path, every: int = 5, keys=CURVE_KEYS) -> str:
    rows = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    rows = [r for r in rows if "loss" in r]
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


def halves(log: Path, per_step: int) -> str:
    """Sampled correctness in the first vs second half of the steps, with a two-proportion z score.
    In the first epoch every pair is new when it is judged, so this is an on-policy held-out measure."""
    import math

    rows = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    vals = [r["rewards/correctness/mean"] for r in rows if "loss" in r]
    half = len(vals) // 2
    parts = [vals[:half], vals[half:]]
    means = [sum(p) / len(p) for p in parts]
    ns = [len(p) * per_step for p in parts]
    pooled = (means[0] * ns[0] + means[1] * ns[1]) / (ns[0] + ns[1])
    se = math.sqrt(pooled * (1 - pooled) * (1 / ns[0] + 1 / ns[1]))
    z = (means[1] - means[0]) / se if se else float("nan")
    return (f"| steps 1–{half} | {100 * means[0]:.1f}% of {ns[0]} verdicts |\n"
            f"| steps {half + 1}–{len(vals)} | {100 * means[1]:.1f}% of {ns[1]} verdicts |\n"
            f"| difference | {100 * (means[1] - means[0]):+.1f} points, z = {z:.2f} |")


def main(folder: str, every: int = 5) -> None:
    f = Path(folder)
    w = json.loads((f / "warmup.json").read_text())
    print("### Format warm-up (valid-output rate on held-out prompts, sampled at T=1)\n")
    print("| | valid | share of verdicts = first shown |\n|---|---|---|")
    for when in ("before", "after"):
        print(f"| {when} | {pct(w[when]['valid_rate'])} of {w[when]['completions']} | {pct(w[when]['shown_A_share'])} |")
    print("\n### GRPO, mean per block of steps\n")
    print(curve_table(f / "log.jsonl", every))
    print("\n### Format of the sampled completions, mean per block of steps\n")
    print(curve_table(f / "log.jsonl", every, FORMAT_KEYS))
    run = json.loads((f / "run.json").read_text())
    print("\n### Sampled correctness, first vs second half of the steps\n")
    print("| steps | correctness |\n|---|---|")
    print(halves(f / "log.jsonl", run["config"]["grpo"]["per_device_train_batch_size"]))
    for name, title in (("eval", "held-out pairs"), ("synth-eval", "synth mix held-out pairs"),
                        ("learn-eval", "held-out pairs (chat + GSM8K mismatch)"),
                        ("eval-sampled", "held-out pairs, 5 samples at T=1 (plurality per order)")):
        if (f / f"{name}-before" / "metrics.json").exists() and (f / f"{name}-after" / "metrics.json").exists():
            print(f"\n### j1 eval on {title}\n")
            print(eval_table(f, [("before RL (warmed up)", f"{name}-before"), ("after RL", f"{name}-after")]))
    probes = sorted(f.glob("probe*.json"))
    if probes:
        print("\n### Verdict probe (`j1 probe`: log-odds of the verdict letter after a fixed thought)\n")
        print(probe_table(probes))


def probe_entries(obj: dict) -> list[tuple[str, dict, dict]]:
    """(model, overall, per kind) from a `j1 probe --out` file, or from the older
    {model: {"all": ..., kind: ...}} files of the retired verdict_probe.py script."""
    if "by_kind" in obj:
        return [(obj["model"], obj["all"], obj["by_kind"])]
    return [(model, res["all"], {k: v for k, v in res.items() if k != "all"}) for model, res in obj.items()]


def probe_table(paths: list[Path]) -> str:
    out = ["| model | content margin (se) | content acc | position bias | content acc by kind |", "|---|---|---|---|---|"]
    for path in paths:
        for model, a, by_kind in probe_entries(json.loads(path.read_text())):
            kinds = ", ".join(f"{k} {pct(v['content_acc'])} ({v['pairs']})" for k, v in by_kind.items())
            out.append(f"| `{model}` | {a['content_margin']:+.3f} ({a['content_margin_se']:.3f}) | {pct(a['content_acc'])} "
                       f"| {a['position_bias']:+.3f} | {kinds} |")
    return "\n".join(out)


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:3]))
