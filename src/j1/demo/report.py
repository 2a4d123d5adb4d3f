"""The report of ``j1 demo``: the before/after table (pure), the example lines, the training curves.

The table compares two ``metrics["overall"]`` blocks of ``j1 eval`` (:mod:`j1.eval.metrics`): rates
are shown in percent, a change in percentage points (after - before).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from j1.runs.atomic import temp_file_beside

# (row name, metrics key, key of its 95% interval or None): the table's rows, in order.
TABLE = (
    ("consistent accuracy", "consistent_accuracy", "consistent_accuracy_ci"),
    ("accuracy", "accuracy", "accuracy_ci"),
    ("flip rate", "flip_rate", None),
    ("invalid rate", "invalid_rate", None),
)
# The training curves: file name -> the log.jsonl keys it plots (per step).
CURVES = {
    "reward.png": ("reward", "rewards/consistency/mean"),
    "accuracy.png": ("j1/acc/AB", "j1/acc/BA"),
}


def table_rows(before: dict, after: dict) -> list[dict]:
    """The before/after rows from two ``metrics["overall"]`` blocks; a missing value (e.g. the flip
    rate of a pointwise judge) is None and so is its change.

    >>> r = table_rows({"accuracy": 0.5, "accuracy_ci": [0.4, 0.6]}, {"accuracy": 0.625})[1]
    >>> r["before"], r["before_ci"], r["after"], r["after_ci"], r["change_points"]
    (0.5, [0.4, 0.6], 0.625, None, 12.5)
    """
    rows = []
    for name, key, ci in TABLE:
        b, a = before.get(key), after.get(key)
        rows.append({
            "metric": name, "key": key, "before": b, "before_ci": before.get(ci) if ci else None,
            "after": a, "after_ci": after.get(ci) if ci else None,
            "change_points": None if a is None or b is None else (a - b) * 100,
        })
    return rows


def _value(x: float | None, ci: Sequence[float] | None) -> str:
    if x is None:
        return "n/a"
    return f"{100 * x:.1f}" + (f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "")


def markdown_table(rows: list[dict]) -> str:
    """The rows as a Markdown table, in percent with 95% intervals, and the change in points.

    >>> print(markdown_table(table_rows({"flip_rate": 0.25}, {"flip_rate": 0.1})[2:3]))
    | metric (%) | before | after | change (points) |
    |---|---|---|---|
    | flip rate | 25.0 | 10.0 | -15.0 |
    """
    lines = ["| metric (%) | before | after | change (points) |", "|---|---|---|---|"]
    for r in rows:
        change = "n/a" if r["change_points"] is None else f"{r['change_points']:+.1f}"
        lines.append(f"| {r['metric']} | {_value(r['before'], r['before_ci'])} | "
                     f"{_value(r['after'], r['after_ci'])} | {change} |")
    return "\n".join(lines)


def group_table(groups: dict) -> str:
    """The held-out groups (report.json "groups": name -> pairs and before/after rows) as one Markdown
    table: consistent accuracy before and after with its change, and the after judge's accuracy and
    invalid rate.

    >>> rows = table_rows({"consistent_accuracy": 0.0, "accuracy": 0.5, "invalid_rate": 0.0},
    ...                   {"consistent_accuracy": 0.25, "accuracy": 0.625, "accuracy_ci": [0.55, 0.7], "invalid_rate": 0.0})
    >>> print(group_table({"same source": {"pairs": 4, "table": rows}}))
    | held-out pairs | n | consistent accuracy (%), before | after | change (points) | accuracy after (%) | invalid after (%) |
    |---|---|---|---|---|---|---|
    | same source | 4 | 0.0 | 25.0 | +25.0 | 62.5 [55.0, 70.0] | 0.0 |
    """
    lines = ["| held-out pairs | n | consistent accuracy (%), before | after | change (points) | accuracy after (%) "
             "| invalid after (%) |", "|---|---|---|---|---|---|---|"]
    for name, group in groups.items():
        row = {r["key"]: r for r in group["table"]}
        cons, acc, inv = row["consistent_accuracy"], row["accuracy"], row["invalid_rate"]
        change = "n/a" if cons["change_points"] is None else f"{cons['change_points']:+.1f}"
        lines.append(f"| {name} | {group['pairs']} | {_value(cons['before'], cons['before_ci'])} | "
                     f"{_value(cons['after'], cons['after_ci'])} | {change} | {_value(acc['after'], acc['after_ci'])} | "
                     f"{_value(inv['after'], None)} |")
    return "\n".join(lines)


def example_line(result: dict, better: str) -> str:
    """One line for an example judged in both orders: each order's verdict (in the pair's own labels)
    and whether it is right.

    >>> example_line({"verdict": "A", "orders": {"AB": {"verdict": "A"}, "BA": {"verdict": "B"}}}, "A")
    'order AB -> A (right), order BA -> B (wrong); verdict A'
    """
    def shown(v: str) -> str:
        return v if v == "invalid" else f"{v} ({'right' if v == better else 'wrong'})"

    orders = ", ".join(f"order {o} -> {shown(r['verdict'])}" for o, r in result["orders"].items())
    return f"{orders}; verdict {result['verdict']}"


def curve_points(rows: list[dict], key: str) -> tuple[list[int], list[float]]:
    """(steps, values) of ``key`` over the training log rows that have it (non-null).

    >>> curve_points([{"step": 1, "reward": 0.5}, {"step": 2, "reward": None}, {"step": 3, "reward": 1.0}], "reward")
    ([1, 3], [0.5, 1.0])
    """
    kept = [(r["step"], r[key]) for r in rows if r.get(key) is not None and "step" in r]
    return [s for s, _ in kept], [v for _, v in kept]


def plot_curves(rows: list[dict], out_dir: Path) -> list[Path]:
    """Write the ``CURVES`` PNGs of a training log to ``out_dir`` (atomically); returns their paths."""
    # matplotlib's object API with the Agg canvas: no pyplot, no global backend switch.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    paths = []
    for name, keys in CURVES.items():
        fig = Figure(figsize=(6, 3.5))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        for key in keys:
            steps, values = curve_points(rows, key)
            ax.plot(steps, values, marker="o", markersize=3, label=key)
        ax.set_xlabel("step")
        ax.set_title(" and ".join(keys) + " per training step")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fd, tmp = temp_file_beside(out_dir / name, suffix=".png")  # the run's file mode, not mkstemp's 0600
        os.close(fd)
        fig.savefig(tmp, dpi=100)
        os.replace(tmp, out_dir / name)
        paths.append(out_dir / name)
    return paths


def reading_line(after: dict, explain: bool = True) -> str | None:
    """Whether the judge after reads the pairs, from its accuracy's 95% interval (a ``metrics["overall"]``
    block); None without one. Why: a judge that names either position about equally often, whatever the
    pair, is right in both orders on about a quarter of the pairs, so consistent accuracy above the base's
    can come from an even position preference alone; accuracy above 50% cannot. ``explain=False`` leaves
    that reason out of the line.

    >>> reading_line({"accuracy": 0.625, "accuracy_ci": [0.55, 0.7]})
    'The judge after reads the pairs: its accuracy, 62.5% [55.0, 70.0], is above chance (50%).'
    >>> reading_line({"accuracy": 0.5, "accuracy_ci": [0.4, 0.6]}, explain=False)
    'These pairs do not show that the judge after reads them: its accuracy, 50.0% [40.0, 60.0], is not above chance (50%).'
    >>> reading_line({"accuracy": 0.5})
    """
    acc, ci = after.get("accuracy"), after.get("accuracy_ci")
    if acc is None or not ci:
        return None
    shown = f"{100 * acc:.1f}% [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"
    if ci[0] > 0.5:
        return f"The judge after reads the pairs: its accuracy, {shown}, is above chance (50%)."
    line = f"These pairs do not show that the judge after reads them: its accuracy, {shown}, is not above chance (50%)."
    if not explain:
        return line
    return (f"{line} "
            "A judge that names either position about equally often without reading the pair is right in both "
            "orders on about a quarter of the pairs, so its consistent accuracy says only how even its position "
            "preference is.")


def render_report(report: dict) -> str:
    """report.md from the report.json content (see ``j1.demo.runner.stage_report``)."""
    ask, ex = report["asked"], report["examples"]
    held = report["heldout"]
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(held["kinds"].items()))
    lines = [
        "# j1 demo",
        "",
        f"Before: `{report['models']['before']}`. After: `{report['models']['after']}`"
        + (f" (trained here for {report['train']['steps']} steps)." if report.get("train") else " (a ready judge)."),
        f"Both judged {held['pairs']} held-out pairs ({kinds}) in both orders, asked the same way "
        f"(format {ask['format']}, template {ask['template']}, prefill {ask['assistant_prefill']!r}, "
        f"at most {ask['max_new_tokens']} new tokens, greedy), so the change is what training did.",
        "",
        "## Held-out judging, before and after",
        "",
        markdown_table(report["table"]),
        "",
        "Consistent accuracy: right in both orders. Accuracy: the mean over the two orders. Flip rate: pairs "
        "whose two orders disagree. Invalid: verdicts that could not be read (counted wrong). Brackets: 95% "
        "bootstrap intervals over pairs.",
        "",
    ]
    if report.get("reading"):
        lines += [report["reading"], ""]
    groups = report.get("groups") or {}
    if groups:
        lines += [
            "### By source",
            "",
            "Same source: unseen questions (GSM8K test) of the source j1 demo trains on (GSM8K train). Other "
            "sources: MATH and Alpaca, which j1 demo never trains on (the shipped j1-135m trained on other Alpaca "
            "items, so for it only MATH is unseen). The first shows whether the judge learned the task, the "
            "second whether that carries over to other kinds of questions.",
            "",
            group_table(groups),
            "",
        ]
        lines += [f"- {name}: {g['reading']}" for name, g in groups.items() if g.get("reading")] + [""]
    lines += [
        "## The example pair",
        "",
        f"Request: {ex['pair']['prompt']}  ",
        f"A: {ex['pair']['A']}  ",
        f"B: {ex['pair']['B']}  ",
        f"Better: {ex['pair']['better']}",
        "",
    ]
    for when in ("before", "after"):
        if when in ex:
            lines.append(f"- {when} (`{ex[when]['model']}`): {example_line(ex[when], ex['pair']['better'])}")
    lines += ["", "## Stage times", "", "| stage | seconds |", "|---|---|"]
    lines += [f"| {name} | {sec:.1f} |" for name, sec in report["stage_seconds"].items()]
    lines.append(f"| total | {sum(report['stage_seconds'].values()):.1f} |")
    train = report.get("train")
    if train:
        lines += [
            "", "## Training", "",
            f"{train['steps']} GRPO steps in a budget of {train['budget_minutes']:.1f} min"
            f"{' (bf16 mixed precision)' if train.get('bf16') else ''}; mean reward "
            f"{_num(train['reward_first'])} at the first step, {_num(train['reward_last'])} at the last.",
            *([lost_line(train["interruptions"]), ""] if train.get("interruptions") else []),
            "",
        ]
        lines += [f"![{name}]({name})" for name in train["curves"]]
    return "\n".join(lines) + "\n"


def lost_line(interruptions: list[dict]) -> str:
    """What the interruptions of training lost (``j1.train.resume.interruptions``), in a sentence.

    >>> lost_line([{"lost_steps": 12, "lost_minutes": 2.7}, {"lost_steps": 1, "lost_minutes": 0.2}])
    'Interrupted 2 times: 13 steps (2.9 min) trained after the last checkpoint were lost and redone, not charged to the budget.'
    """
    n = len(interruptions)
    steps = sum(i["lost_steps"] for i in interruptions)
    minutes = sum(i["lost_minutes"] for i in interruptions)
    return (f"Interrupted {n} time{'s' if n != 1 else ''}: {steps} step{'s' if steps != 1 else ''} ({minutes:.1f} min) "
            "trained after the last checkpoint were lost and redone, not charged to the budget.")


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"
