"""DIR/report.md of ``j1 attack`` and its plot, attacks.png: how often each attack fooled the judge."""

from __future__ import annotations

from pathlib import Path

from j1.eval.cells import interval, pct
from j1.eval.stats import MIN_CI_N
from j1.runs.atomic import write_text_atomic

PLOT = "attacks.png"
TOO_FEW = f"n < {MIN_CI_N}"  # in place of an interval resting on fewer questions (its JSON value is null)


def _ci(ci) -> str:
    return interval(ci, TOO_FEW)


def _row(name: str, b: dict, pointwise: bool) -> str:
    pos = b.get("false_preference_by_position") or {}
    cells = [name, str(b["n"]), str(b.get("questions", "–")), pct(b["false_preference_rate"]),
             _ci(b["false_preference_rate_ci"]),
             pct(b["consistent_false_preference_rate"]), _ci(b["consistent_false_preference_rate_ci"]),
             pct(b["invalid_rate"])]
    if pointwise:
        cells += ["–" if b.get(k) is None else f"{b[k]:.2f}" for k in ("attack_score", "reference_score")]
    else:
        cells += [pct(pos.get("first")), pct(pos.get("second"))]
    return "| " + " | ".join(cells) + " |"


def _resting(questions: int | None) -> str:
    return "" if questions is None else f": they rest on {questions} question{'s' if questions != 1 else ''}"


def render_markdown(report: dict, run: dict, plot: str | None) -> str:
    """The report text (percentages)."""
    meta, cfg = report["meta"], run.get("config", {})
    pointwise = report["overall"] is not None and report["overall"]["false_preference_by_position"] is None
    extra = "attack score | reference score" if pointwise else "shown first | shown second"
    header = (f"| attack | pairs | questions | false preference | 95% CI | consistent | 95% CI | invalid | {extra} |\n"
              "|---|---:|---:|---:|---|---:|---|---:|---:|---:|")
    overall = report["overall"]
    questions = overall.get("questions") if overall else None
    lines = [
        f"# j1 attack · format {meta['format']} · {meta['model']}",
        "",
        f"- data: `{meta['data']}`, {meta['rows']} rows (limit {cfg.get('limit')}); attack pairs judged: "
        f"{report['overall']['n'] if report['overall'] else 0}; failed prompts: {meta['errors']}; "
        f"incomplete pairs: {meta['incomplete']}",
        f"- template {meta['template']}, prefill {meta['assistant_prefill']!r}, samples {meta['samples']}, "
        f"temperature {cfg.get('temperature')}, max_new_tokens {cfg.get('max_new_tokens')}, seed {cfg.get('seed')}",
        f"- git {run.get('git', {}).get('revision')}, started {run.get('started')}",
        "",
        "Each pair is a correct reference answer against an attack response, judged in both orders. "
        "false preference = share of per-order verdicts that prefer the attack; consistent = share of pairs "
        "where it is preferred in both orders; invalid = share of per-order verdicts with no valid verdict. "
        + ("attack/reference score = mean score of each response on its own (pointwise). " if pointwise else
           "shown first/second = false preference when the attack is shown first (order BA) or second (AB). ")
        + "control = the plain wrong answer, no attack: read each attack against it. "
        "All numbers are percentages. CIs: 95% bootstrap over source questions (all the pairs built from one "
        f"question are resampled together, as they are not independent){_resting(questions)}; below "
        f"{MIN_CI_N} questions none is given ({TOO_FEW}).",
        "",
        header,
    ]
    lines += [_row(name, b, pointwise) for name, b in report["attacks"].items()]
    if report["overall"]:
        lines.append(_row("**overall**", report["overall"], pointwise))
    if report["control"]:
        lines.append(_row("control (plain wrong answer)", report["control"], pointwise))
    if plot:
        lines += ["", f"![{plot}]({plot})"]
    return "\n".join(lines) + "\n"


def plot(out_dir: Path, report: dict) -> str | None:
    """attacks.png: false preference (with its 95% CI) and consistent false preference per attack,
    the invalid rate beside them, and the control's false preference as a dashed line."""
    if not report["attacks"]:
        return None
    import matplotlib

    matplotlib.use("Agg")  # no display; set here, not at import time
    import matplotlib.pyplot as plt

    names = list(report["attacks"])
    blocks = [report["attacks"][n] for n in names]
    ys = range(len(names))
    fig, ax = plt.subplots(figsize=(7, 2.2 + 0.32 * len(names)))
    h = 0.27
    for k, (key, label) in enumerate((("false_preference_rate", "false preference"),
                                      ("consistent_false_preference_rate", "consistent (both orders)"),
                                      ("invalid_rate", "invalid"))):
        vals = [100 * b[key] for b in blocks]
        err = None
        cis = [b.get(f"{key}_ci") for b in blocks]
        if all(cis):  # no bars where an interval is missing (too few questions)
            err = [[v - 100 * ci[0] for v, ci in zip(vals, cis, strict=True)],
                   [100 * ci[1] - v for v, ci in zip(vals, cis, strict=True)]]
        ax.barh([y + (k - 1) * h for y in ys], vals, height=h, xerr=err, capsize=2, label=label)
    if report["control"]:
        ax.axvline(100 * report["control"]["false_preference_rate"], color="k", ls="--", lw=1,
                   label="control: plain wrong answer")
    ax.set_yticks(list(ys), names)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% (95% bootstrap CI)")
    ax.set_title(f"j1 attack: {report['meta']['model']} ({report['meta']['format']})")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.6 / len(names) - 0.08), ncol=2, fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / PLOT, dpi=100)
    plt.close(fig)
    return PLOT


def write_report(out_dir: str | Path, report: dict, run: dict) -> Path:
    """DIR/report.md and attacks.png; the report ends with one example per attack that fooled the judge
    (from results.jsonl, ``j1.eval.show``)."""
    from j1.eval.show import examples_of

    out_dir = Path(out_dir)
    path = out_dir / "report.md"
    text = render_markdown(report, run, plot(out_dir, report))
    examples = examples_of(out_dir, per_category=1)
    write_text_atomic(path, text + ("\n".join(examples) + "\n" if examples else ""))
    return path
