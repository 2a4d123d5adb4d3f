"""DIR/report.md and its PNG plots: a person reads the run without opening JSON."""

from __future__ import annotations

from pathlib import Path

from j1.eval.cells import interval, pct
from j1.eval.stats import MIN_CI_N
from j1.runs.atomic import write_text_atomic


def _ci(ci) -> str:
    # metrics.json holds null where the items are too few for an interval (j1.eval.stats.MIN_CI_N)
    return interval(ci, f"n < {MIN_CI_N}")


def _row(name: str, b: dict) -> str:
    order = b.get("order_accuracy") or {}
    cells = [name, str(b["n"]), pct(b["accuracy"]), _ci(b["accuracy_ci"]), pct(b["consistent_accuracy"]),
             _ci(b["consistent_accuracy_ci"]), pct(order.get("AB")), pct(order.get("BA")), pct(b["flip_rate"]),
             pct(b["tie_rate"]), pct(b["invalid_rate"])]
    return "| " + " | ".join(cells) + " |"


HEADER = ("| | n | accuracy | 95% CI | consistent | 95% CI | AB | BA | flip | tie | invalid |\n"
          "|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|")

# Above this share of invalid verdicts the report warns: the accuracy then says as much about the output
# format as about judging.
INVALID_WARN = 0.05


def _beside(b: dict) -> str:
    """What every headline accuracy is shown with: consistent accuracy and invalid rate."""
    return f"consistent {pct(b['consistent_accuracy'])}, invalid {pct(b['invalid_rate'])}"


def report_warnings(metrics: dict) -> list[str]:
    """Sentences for the reader when the headline accuracy flatters the judge: too many invalid
    verdicts, or a benchmark rule that scores an invalid verdict better than a wrong one."""
    from j1.eval.benchmarks import BENCHMARKS
    from j1.eval.metrics import get_scorer

    o = metrics["overall"]
    out = []
    if o["invalid_rate"] is not None and o["invalid_rate"] > INVALID_WARN:
        out.append(f"{pct(o['invalid_rate'])}% of the verdicts are invalid (no parseable verdict), above "
                   f"{pct(INVALID_WARN)}%: the accuracy measures the output format as much as the judging; "
                   "judgments.jsonl has each invalid text.")
    bench = BENCHMARKS.get(metrics["benchmark"])
    rule = get_scorer(bench.scheme).rewards_invalid if bench is not None else None
    if rule and o["invalid_rate"]:
        out.append(f"{rule} With {pct(o['invalid_rate'])}% invalid verdicts, its accuracy "
                   f"{pct(o['accuracy'])}% overstates the judge; the consistent accuracy (right in both "
                   f"orders) is {pct(o['consistent_accuracy'])}%.")
    return out


def thought_line(t: dict) -> str:
    """The report's line on the judge's thoughts (metrics.json ``thoughts``, first sample of each prompt).

    >>> thought_line({"thought_median_words": 31.0, "thought_distinct": 0.975, "thought_shared": 0.0, "with_thought": 1.0})
    'thoughts: median 31 words, 97.5% distinct, 0.0% also written for another prompt (100.0% of answers have one)'
    """
    return (f"thoughts: median {t['thought_median_words']:g} words, {pct(t['thought_distinct'])}% distinct, "
            f"{pct(t['thought_shared'])}% also written for another prompt ({pct(t['with_thought'])}% of answers have one)")


def render_markdown(metrics: dict, run: dict, plots: list[str], examples: list[str] = ()) -> str:
    """The report text (percentages); ``examples``: the lines of its Examples section (``j1.eval.show``)."""
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
        f"**accuracy {pct(o['accuracy'])}** (the benchmark's rule) · {_beside(o)}",
        "",
        *([thought_line(metrics["thoughts"]), ""] if metrics.get("thoughts") else []),
        *[f"> **Warning:** {w}\n" for w in report_warnings(metrics)],
        "All numbers are percentages. accuracy = the benchmark's own scoring; consistent = right in both "
        "orders; AB/BA = right when the first-stored response is shown first/second; flip = of the pairs valid in both "
        "orders, those whose verdicts differ (a tie against a pick too); invalid = unparseable verdicts (counted wrong, except by a benchmark rule that "
        f"a warning above names). CIs: 95% bootstrap; none below {MIN_CI_N} items.",
        "",
        "## Overall",
        "",
        HEADER,
        _row("overall", o),
    ]
    if "easy" in o:
        lines += ["", f"RM-Bench levels: easy {pct(o['easy'])}, normal {pct(o['normal'])}, hard {pct(o['hard'])} "
                  f"(overall {_beside(o)})"]
    if "sections" in o:
        secs = ", ".join(f"{k} {pct(v)}" for k, v in o["sections"].items())
        lines += ["", f"RewardBench sections: {secs} (score = their mean; overall {_beside(o)})"]
    lines += ["", "## Per category", "", HEADER]
    lines += [_row(c, b) for c, b in metrics["categories"].items()]
    if any("easy" in b for b in metrics["categories"].values()):
        lines += ["", "| category | easy | normal | hard |", "|---|---:|---:|---:|"]
        lines += [f"| {c} | {pct(b['easy'])} | {pct(b['normal'])} | {pct(b['hard'])} |"
                  for c, b in metrics["categories"].items()]
    lines += ["", "## Test-time scaling (first k samples of the same generations)", ""]
    if len(metrics["scaling"]) < 2:
        lines.append("One sample per prompt: there is nothing to scale, so no curve is drawn. Judge with "
                     "--samples N --temperature 1.0 to see how accuracy changes with k.")
    else:
        lines += [HEADER, *[_row(f"k={k}", b) for k, b in metrics["scaling"].items()]]
    lines += [""] + [f"![{p}]({p})" for p in plots] + list(examples)
    return "\n".join(lines) + "\n"


def plot(out_dir: Path, metrics: dict) -> list[str]:
    """scaling.png (accuracy and consistent accuracy vs k, with CI bands; only with two or more k: one
    sample is a single point, which the report states in words) and categories.png (consistent
    accuracy, flip rate and invalid rate per category). Returns the file names."""
    import matplotlib

    matplotlib.use("Agg")  # no display; set here, not at import time
    import matplotlib.pyplot as plt

    written = [_plot_categories(out_dir, metrics, plt)]
    if len(metrics["scaling"]) >= 2:
        written.insert(0, _plot_scaling(out_dir, metrics, plt))
    else:
        (out_dir / "scaling.png").unlink(missing_ok=True)  # a rescored run's old curve would mislead
    return written


def _plot_scaling(out_dir: Path, metrics: dict, plt) -> str:
    ks = [int(k) for k in metrics["scaling"]]
    blocks = list(metrics["scaling"].values())
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for key, label in (("accuracy", "accuracy"), ("consistent_accuracy", "consistent accuracy")):
        ys = [100 * b[key] for b in blocks]
        ax.plot(ks, ys, marker="o", label=label)
        cis = [b[f"{key}_ci"] for b in blocks]
        if all(cis):  # no band where the items are too few for an interval
            ax.fill_between(ks, [100 * c[0] for c in cis], [100 * c[1] for c in cis], alpha=0.2)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("samples per prompt (k)")
    ax.set_ylabel("%")
    ax.set_title(f"{metrics['benchmark']} ({metrics['format']}): test-time scaling")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "scaling.png", dpi=100)
    plt.close(fig)
    return "scaling.png"


def category_panels(metrics: dict) -> list[tuple[str, list[float]]]:
    """The panels of categories.png, ``(title, value per category in %)``: consistent accuracy, flip
    rate (pairwise formats) and invalid rate, so an all-invalid run shows full invalid bars, not
    empty accuracy bars."""
    blocks = list(metrics["categories"].values())
    panels = [("consistent accuracy (%)", [100 * b["consistent_accuracy"] for b in blocks])]
    if all(b["flip_rate"] is not None for b in blocks):
        panels.append(("flip rate (%)", [100 * b["flip_rate"] for b in blocks]))
    panels.append(("invalid rate (%)", [100 * b["invalid_rate"] for b in blocks]))
    return panels


def _plot_categories(out_dir: Path, metrics: dict, plt) -> str:
    cats = list(metrics["categories"])
    panels = category_panels(metrics)
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 1.5 + 0.3 * len(cats)), squeeze=False)
    for ax, (title, vals) in zip(axes[0], panels, strict=True):
        bars = ax.barh(cats, vals, color="tab:red" if title.startswith("invalid") else None)
        ax.bar_label(bars, fmt="%.0f", padding=2)  # a 0 shows as "0", not as a missing bar
        ax.set_title(title)
        ax.set_xlim(0, 110)
        ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(out_dir / "categories.png", dpi=100)
    plt.close(fig)
    return "categories.png"


def write_report(out_dir: str | Path, metrics: dict, run: dict) -> Path:
    from j1.eval.show import examples_of

    out_dir = Path(out_dir)
    plots = plot(out_dir, metrics)
    path = out_dir / "report.md"
    write_text_atomic(path, render_markdown(metrics, run, plots, examples_of(out_dir)))
    return path
