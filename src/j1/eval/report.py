"""DIR/report.md and its PNG plots: a person reads the run without opening JSON."""

from __future__ import annotations

from pathlib import Path

from j1.schema import write_text_atomic


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _ci(ci) -> str:
    return "–" if not ci else f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _row(name: str, b: dict) -> str:
    order = b.get("order_accuracy") or {}
    cells = [name, str(b["n"]), _pct(b["accuracy"]), _ci(b["accuracy_ci"]), _pct(b["consistent_accuracy"]),
             _ci(b["consistent_accuracy_ci"]), _pct(order.get("AB")), _pct(order.get("BA")), _pct(b["flip_rate"]),
             _pct(b["tie_rate"]), _pct(b["invalid_rate"])]
    return "| " + " | ".join(cells) + " |"


HEADER = ("| | n | accuracy | 95% CI | consistent | 95% CI | AB | BA | flip | tie | invalid |\n"
          "|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|")


def render_markdown(metrics: dict, run: dict, plots: list[str]) -> str:
    """The report text (percentages)."""
    cfg = run.get("config", {})
    o = metrics["overall"]
    lines = [
        f"# {metrics['benchmark']} · format {metrics['format']} · {metrics['model']}",
        "",
        f"- items: {metrics['n']} (incomplete: {metrics.get('incomplete', 0)}), samples per prompt: "
        f"{metrics.get('samples')}, failed prompts: {metrics.get('errors', 0)}",
        f"- data: `{cfg.get('data')}`" + (f", split {cfg['split']}" if cfg.get("split") else "")
        + (f", limit {cfg['limit']}" if cfg.get("limit") else ""),
        f"- sampling: temperature {cfg.get('temperature')}, top_p {cfg.get('top_p')}, "
        f"max_new_tokens {cfg.get('max_new_tokens')}, seed {cfg.get('seed')}",
        f"- git {run.get('git', {}).get('revision')}, started {run.get('started')}",
        "",
        "All numbers are percentages. accuracy = the benchmark's own scoring; consistent = right in both "
        "orders; AB/BA = right when the first-stored response is shown first/second; flip = the orders give "
        "different valid verdicts; invalid = unparseable verdicts (counted wrong). CIs: 95% bootstrap.",
        "",
        "## Overall",
        "",
        HEADER,
        _row("overall", o),
    ]
    if "easy" in o:
        lines += ["", f"RM-Bench levels: easy {_pct(o['easy'])}, normal {_pct(o['normal'])}, hard {_pct(o['hard'])}"]
    if "sections" in o:
        secs = ", ".join(f"{k} {_pct(v)}" for k, v in o["sections"].items())
        lines += ["", f"RewardBench sections: {secs} (score = their mean)"]
    lines += ["", "## Per category", "", HEADER]
    lines += [_row(c, b) for c, b in metrics["categories"].items()]
    if any("easy" in b for b in metrics["categories"].values()):
        lines += ["", "| category | easy | normal | hard |", "|---|---:|---:|---:|"]
        lines += [f"| {c} | {_pct(b['easy'])} | {_pct(b['normal'])} | {_pct(b['hard'])} |"
                  for c, b in metrics["categories"].items()]
    lines += ["", "## Test-time scaling (first k samples of the same generations)", "", HEADER]
    lines += [_row(f"k={k}", b) for k, b in metrics["scaling"].items()]
    lines += [""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def plot(out_dir: Path, metrics: dict) -> list[str]:
    """scaling.png (accuracy and consistent accuracy vs k, with CI bands) and categories.png
    (consistent accuracy and flip rate per category). Returns the file names."""
    import matplotlib

    matplotlib.use("Agg")  # no display; set here, not at import time
    import matplotlib.pyplot as plt

    ks = [int(k) for k in metrics["scaling"]]
    blocks = list(metrics["scaling"].values())
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for key, label in (("accuracy", "accuracy"), ("consistent_accuracy", "consistent accuracy")):
        ys = [100 * b[key] for b in blocks]
        lo = [100 * b[f"{key}_ci"][0] for b in blocks]
        hi = [100 * b[f"{key}_ci"][1] for b in blocks]
        ax.plot(ks, ys, marker="o", label=label)
        ax.fill_between(ks, lo, hi, alpha=0.2)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("samples per prompt (k)")
    ax.set_ylabel("%")
    ax.set_title(f"{metrics['benchmark']} ({metrics['format']}): test-time scaling")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "scaling.png", dpi=100)
    plt.close(fig)

    cats = list(metrics["categories"])
    cons = [100 * metrics["categories"][c]["consistent_accuracy"] for c in cats]
    flips = [metrics["categories"][c]["flip_rate"] for c in cats]
    panels = [("consistent accuracy (%)", cons)]
    if all(f is not None for f in flips):
        panels.append(("flip rate (%)", [100 * f for f in flips]))
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 1.5 + 0.3 * len(cats)), squeeze=False)
    for ax, (title, vals) in zip(axes[0], panels, strict=True):
        ax.barh(cats, vals)
        ax.set_title(title)
        ax.set_xlim(0, 100)
        ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(out_dir / "categories.png", dpi=100)
    plt.close(fig)
    return ["scaling.png", "categories.png"]


def write_report(out_dir: str | Path, metrics: dict, run: dict) -> Path:
    out_dir = Path(out_dir)
    plots = plot(out_dir, metrics)
    path = out_dir / "report.md"
    write_text_atomic(path, render_markdown(metrics, run, plots))
    return path
