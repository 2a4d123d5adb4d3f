"""report.md and plots of the runs beside plain ``j1 eval``: RewardBench 2 (its own scores), ``j1
consistency`` (label-free measures), and the ``j1 compare`` table of several run folders. Same style
as j1.eval.report: a header of what was run, percentage tables with 95% intervals, then PNG plots."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from j1.eval.cells import interval, pct
from j1.runs.atomic import write_text_atomic


def _num(x, ci=None, digits: int = 2) -> str:
    if x is None:
        return "–"
    return f"{x:.{digits}f}" + ("" if not ci else f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]")


def _header(metrics: dict, run: dict, title: str) -> list[str]:
    cfg = run.get("config", {})
    return [
        f"# {title} · format {metrics['format']} · {metrics['model']}",
        "",
        f"- items: {metrics['n']} (incomplete: {metrics.get('incomplete', 0)}), samples per prompt: "
        f"{metrics.get('samples')}, failed prompts: {metrics.get('errors', 0)}",
        f"- data: `{cfg.get('data')}`" + (f", limit {cfg['limit']}" if cfg.get("limit") else ""),
        f"- sampling: temperature {cfg.get('temperature')}, top_p {cfg.get('top_p')}, "
        f"max_new_tokens {cfg.get('max_new_tokens')}, seed {cfg.get('seed')}",
        f"- git {run.get('git', {}).get('revision')}, started {run.get('started')}",
        "",
    ]


def _bands(ax, xs, blocks, keys, scale: float = 100.0) -> None:
    for key, label in keys:
        ys = [None if b.get(key) is None else scale * b[key] for b in blocks]
        if any(y is None for y in ys):
            continue
        ax.plot(xs, ys, marker="o", label=label)
        cis = [b.get(f"{key}_ci") for b in blocks]
        if all(cis):
            ax.fill_between(xs, [scale * c[0] for c in cis], [scale * c[1] for c in cis], alpha=0.2)


def _plt():
    import matplotlib

    matplotlib.use("Agg")  # no display; set here, not at import time
    import matplotlib.pyplot as plt

    return plt


def _scaling_plot(out_dir: Path, metrics: dict, keys, title: str) -> str:
    plt = _plt()
    ks = [int(k) for k in metrics["scaling"]]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    _bands(ax, ks, list(metrics["scaling"].values()), keys)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("samples per prompt (k)")
    ax.set_ylabel("%")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "scaling.png", dpi=100)
    plt.close(fig)
    return "scaling.png"


def _bars(out_dir: Path, name: str, labels: list[str], panels: list[tuple[str, list[float]]], xmax=100) -> str:
    plt = _plt()
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 1.5 + 0.3 * len(labels)), squeeze=False)
    for ax, (title, vals) in zip(axes[0], panels, strict=True):
        ax.barh(labels, vals)
        ax.set_title(title)
        ax.set_xlim(0, xmax)
        ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(out_dir / name, dpi=100)
    plt.close(fig)
    return name


# --- j1 consistency -------------------------------------------------------------------------------

CONS_HEADER = ("| | n | IPI | 95% CI | TOV (pairs) | 95% CI | TOV rate | intransitive triples | flip | first shown "
               "| invalid |\n|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|")


def _cons_row(name: str, b: dict) -> str:
    cells = [name, str(b["n"]), pct(b["ipi"]), interval(b["ipi_ci"]), _num(b["tov"]), _num(None) if not b.get("tov_ci")
             else f"[{b['tov_ci'][0]:.2f}, {b['tov_ci'][1]:.2f}]", pct(b["tov_rate"]),
             f"{pct(b['intransitive_rate'])} ({b['intransitive_triples']}/{b['determined_triples']})",
             pct(b.get("flip_rate")), pct(b.get("first_shown_rate")), pct(b["invalid_rate"])]
    return "| " + " | ".join(cells) + " |"


def render_consistency(metrics: dict, run: dict, plots: list[str], examples: list[str] = ()) -> str:
    k = metrics["responses"]
    lines = _header(metrics, run, f"consistency ({k} responses per prompt)") + [
        "Label-free consistency (Sage, Feng et al. 2025): every pair of responses judged in both orders. "
        "IPI = share of pairs whose two orders are not mirror images; TOV = the fewest ordered verdicts that "
        "disagree with some ranking with ties (exact), per prompt; TOV rate = TOV / K(K-1); intransitive "
        "triples = share of triples (with all three pairs consistent) that no ranking satisfies; flip = "
        "both orders valid but not mirror images; first shown = share of strict verdicts picking the response "
        "shown first (0.5 = no position bias); invalid = unparseable verdicts, which count as unstable and as "
        "violations. Percentages, except TOV; 95% bootstrap intervals over prompts. Lower is better for all but "
        "first shown, whose ideal is 50.",
        "",
        "## Overall",
        "",
        CONS_HEADER,
        _cons_row("overall", metrics["overall"]),
        "",
        "## Test-time scaling (first k samples of the same generations)",
        "",
        CONS_HEADER,
    ]
    lines += [_cons_row(f"k={s}", b) for s, b in metrics["scaling"].items()]
    lines += ["", "## Per prompt", "", "| prompt | IPI | TOV | intransitive | invalid |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {p['id']} | {pct(p['ipi'])} | {p['tov']} | {p['intransitive']}/{p['determined_triples']} | "
              f"{pct(p['invalid_rate'])} |" for p in metrics["per_prompt"]]
    lines += [""] + [f"![{p}]({p})" for p in plots] + list(examples)
    return "\n".join(lines) + "\n"


def write_consistency_report(out_dir: str | Path, metrics: dict, run: dict) -> Path:
    """DIR/report.md, scaling.png (IPI and TOV rate vs samples) and prompts.png (per prompt)."""
    out_dir = Path(out_dir)
    plots = [_scaling_plot(out_dir, metrics, (("ipi", "IPI"), ("tov_rate", "TOV rate"), ("invalid_rate", "invalid")),
                           f"consistency ({metrics['format']}): test-time scaling")]
    per = metrics["per_prompt"]
    plots.append(_bars(out_dir, "prompts.png", [str(p["id"]) for p in per],
                       [("IPI (%)", [100 * p["ipi"] for p in per]), ("TOV rate (%)", [100 * p["tov_rate"] for p in per])]))
    path = out_dir / "report.md"
    write_text_atomic(path, render_consistency(metrics, run, plots, _examples(out_dir)))
    return path


def _examples(out_dir: Path) -> list[str]:
    from j1.eval.show import examples_of

    return examples_of(out_dir)


# --- j1 compare -----------------------------------------------------------------------------------


def compare_row(path: Path, metrics: dict) -> dict:
    """One judge x benchmark row of ``j1 compare``: the run's headline numbers, None where a run has
    no such number (a consistency run has no accuracy; an eval run no IPI)."""
    o = metrics["overall"]
    return {
        "run": str(path),
        "judge": metrics.get("model"),
        "benchmark": metrics.get("benchmark"),
        "format": metrics.get("format"),
        "n": metrics.get("n"),
        "accuracy": o.get("accuracy"),
        "consistent_accuracy": o.get("consistent_accuracy"),
        "consistent_accuracy_ci": o.get("consistent_accuracy_ci"),
        "flip_rate": o.get("flip_rate"),
        "invalid_rate": o.get("invalid_rate"),
        "ipi": o.get("ipi"),
        "tov_rate": o.get("tov_rate"),
    }


def read_run(path: str | Path) -> dict:
    """DIR/metrics.json of an eval, RewardBench 2 or consistency run folder.

    Raises:
        FileNotFoundError: DIR has no metrics.json (the run is unfinished, or not a run folder).
        ValueError: metrics.json is not a metrics document.
    """
    file = Path(path) / "metrics.json"
    if not file.is_file():
        raise FileNotFoundError(f"{file} not found: is {path} a finished j1 eval or j1 consistency run folder? "
                                "(j1 score DIR rescores an eval run)")
    try:
        metrics = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{file}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(metrics, dict) or not isinstance(metrics.get("overall"), dict):
        raise ValueError(f"{file}: field 'overall' missing; not a j1 metrics.json")
    return metrics


def _label_judges(rows: list[dict]) -> list[dict]:
    """Rows whose judge already has a run of the same benchmark are told apart by their folder name
    (the same model asked two ways is two judges)."""
    seen = Counter((r["judge"], r["benchmark"]) for r in rows)
    clash = {j for (j, _), n in seen.items() if n > 1}
    return [r | {"judge": f"{r['judge']} ({Path(r['run']).name})"} if r["judge"] in clash else r for r in rows]


COLUMNS = (("accuracy", "accuracy"), ("consistent_accuracy", "consistent"), ("flip_rate", "flip"),
           ("invalid_rate", "invalid"), ("ipi", "IPI"), ("tov_rate", "TOV rate"))


def compare_table(rows: list[dict]) -> str:
    """Markdown: one row per judge, one column group per benchmark, in the order they first appear;
    a benchmark's columns that no run has (accuracy for consistency runs, IPI for eval runs) are left out."""
    rows = _label_judges(rows)
    benches = list(dict.fromkeys(r["benchmark"] for r in rows))
    judges = list(dict.fromkeys(r["judge"] for r in rows))
    cell = {(r["judge"], r["benchmark"]): r for r in rows}
    cols = {b: [(k, name) for k, name in COLUMNS if any(r.get(k) is not None for r in rows if r["benchmark"] == b)]
            for b in benches}
    head = ["judge"] + [f"{b} {name}" for b in benches for name in ["n", *(n for _, n in cols[b])]]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for j in judges:
        cells = [str(j)]
        for b in benches:
            r = cell.get((j, b), {})
            cells.append(str(r.get("n", "–")))
            for key, _ in cols[b]:
                ci = r.get("consistent_accuracy_ci") if key == "consistent_accuracy" else None
                cells.append(pct(r.get(key)) + (f" {interval(ci)}" if ci else ""))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# --- RewardBench 2 ---------------------------------------------------------------------------------

RB2_HEADER = ("| | n | score | 95% CI | rotation mean | 95% CI | consistent | 95% CI | flip | invalid |\n"
              "|---|---:|---:|---|---:|---|---:|---|---:|---:|")


def _rb2_row(name: str, b: dict) -> str:
    cells = [name, str(b["n"]), pct(b["accuracy"]), interval(b["accuracy_ci"]), pct(b["rotation_accuracy"]),
             interval(b["rotation_accuracy_ci"]), pct(b["consistent_accuracy"]), interval(b["consistent_accuracy_ci"]),
             pct(b.get("flip_rate")), pct(b["invalid_rate"])]
    return "| " + " | ".join(cells) + " |"


def render_rb2(metrics: dict, run: dict, plots: list[str], examples: list[str] = ()) -> str:
    rb2 = metrics["rb2"]
    o = metrics["overall"]
    lines = _header(metrics, run, f"rewardbench2 · mode {rb2['mode']} · rotations {rb2['rotations']}") + [
        "All numbers are percentages. score = the official RewardBench 2 score (four-way: the chosen answer at a "
        "position drawn from the seed and item id, as rotation 1; ratings: 1/k for a top rating shared by k; Ties: "
        "its own formula, whose weights sum to 1.01 in the official code, kept here); overall = the unweighted "
        "mean of the subsets. rotation mean = the mean over the chosen answer's positions; consistent = the "
        "chosen answer picked in every rotation (ratings: alone on top; Ties: its score, there are no "
        "positions); flip = the valid picks name different answers across rotations. invalid = unparseable "
        "judgments: **the official rule gives an invalid four-way verdict (or an item with no valid rating) "
        "0.25, not 0**, so a judge that never answers scores 25 on those subsets. CIs: 95% bootstrap.",
        "",
        "## Overall",
        "",
        RB2_HEADER,
        _rb2_row("overall", o),
        "",
        "## Per subset",
        "",
        RB2_HEADER,
    ]
    lines += [_rb2_row(c, b) for c, b in metrics["categories"].items()]
    slots = {c: b for c, b in metrics["categories"].items() if b.get("slot_accuracy")}
    if slots:
        lines += ["", "### Four-way positions (score with the chosen answer at each position; share of picks)", "",
                  "| subset | at A | at B | at C | at D | picks A | picks B | picks C | picks D |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for c, b in slots.items():
            s, p = b["slot_accuracy"], b["pick_rate"]
            lines.append(f"| {c} | " + " | ".join(pct(s[q]) for q in "ABCD") + " | "
                         + " | ".join(pct(p[q]) for q in "ABCD") + " |")
    ties = metrics["categories"].get("Ties", {}).get("ties")
    if ties:
        lines += ["", "### Ties", "",
                  f"tied accuracy {pct(ties['tied_accuracy'])}, ref accuracy {pct(ties['ref_accuracy'])}, tied "
                  f"margin > spread {pct(ties['correctness_preferred'])}, min margin > spread "
                  f"{pct(ties['correctness_preferred_hard'])}, tanh term {ties['margin_score']:.3f}; "
                  f"{ties['ref']} ref and {ties['tied']} tied prompts, {ties['paired']} with both twins."]
    lines += ["", "## Test-time scaling (first k samples of the same generations)", "", RB2_HEADER]
    lines += [_rb2_row(f"k={k}", b) for k, b in metrics["scaling"].items()]
    lines += [""] + [f"![{p}]({p})" for p in plots] + list(examples)
    return "\n".join(lines) + "\n"


def write_rb2_report(out_dir: str | Path, metrics: dict, run: dict) -> Path:
    """DIR/report.md, scaling.png (score and consistent vs samples) and categories.png (per subset)."""
    out_dir = Path(out_dir)
    plots = [_scaling_plot(out_dir, metrics, (("accuracy", "score"), ("consistent_accuracy", "consistent")),
                           f"rewardbench2 ({metrics['format']}): test-time scaling")]
    cats = list(metrics["categories"])
    plots.append(_bars(out_dir, "categories.png", cats,
                       [("score (%)", [100 * metrics["categories"][c]["accuracy"] for c in cats]),
                        ("consistent (%)", [100 * metrics["categories"][c]["consistent_accuracy"] for c in cats])],
                       xmax=101))
    path = out_dir / "report.md"
    write_text_atomic(path, render_rb2(metrics, run, plots, _examples(out_dir)))
    return path
