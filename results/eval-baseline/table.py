"""Print the baseline table (markdown) from each run's report.md: its title (benchmark, format), its
overall row and the RM-Bench levels, as `j1 eval` (j1.eval.report) wrote them; nothing is recomputed.

    .venv/bin/python results/eval-baseline/table.py                      # the runs kept here
    .venv/bin/python results/eval-baseline/table.py runs/eval-baseline   # a re-run (run_baseline.sh)
"""

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def row(report: Path) -> str:
    text = report.read_text(encoding="utf-8")
    benchmark, fmt = re.match(r"# (\S+) · format (\S+) ·", text).groups()
    # | overall | n | accuracy | CI | consistent | CI | AB | BA | flip | tie | invalid |
    cells = [c.strip() for c in re.search(r"^\| overall \|(.*)\|$", text, re.MULTILINE)[1].split("|")]
    n, acc, ci, consistent, _, ab, ba, flip, tie, invalid = cells
    levels = re.search(r"RM-Bench levels: easy (\S+), normal (\S+), hard (\S+)", text)
    extra = f"easy {levels[1]} / normal {levels[2]} / hard {levels[3]}" if levels else ""
    order = "–" if ab == "–" else f"{ab} / {ba}"
    return (f"| {report.parent.name} | {benchmark} | {fmt} | {n} | {acc} {ci} | {consistent} | {order} | {flip} | "
            f"{tie} | {invalid} | {extra} |")


def main(folder: Path) -> None:
    print("| run | benchmark | format | n | accuracy [95% CI] | consistent | AB / BA | flip | tie | invalid | extra |")
    print("|---|---|---|---:|---|---:|---|---:|---:|---:|---|")
    for report in sorted(folder.glob("*/report.md")):
        print(row(report))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
