"""``j1 compare DIR1 DIR2 …``: finished runs side by side (judges by benchmark: accuracy, consistent
accuracy, flip and invalid rates; IPI and TOV rate for consistency runs)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from j1.cli.common import error_message, parse
from j1.eval.spec import CompareSpec


def main(argv: Sequence[str]) -> int:
    argv = list(argv)
    runs = []
    while argv and not argv[0].startswith("-"):  # j1 compare DIR1 DIR2 … [--out FILE]
        runs.append(argv.pop(0))
    if runs:
        argv = ["--runs", *runs, *argv]
    cfg = parse(CompareSpec, argv, prog="j1 compare")
    from j1.eval.report_extra import compare_row, compare_table, read_run
    from j1.runs.atomic import write_text_atomic

    try:
        rows = [compare_row(Path(d), read_run(d)) for d in cfg.runs]
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"j1 compare: error: {error_message(exc)}\n")
        return 2
    if cfg.json:
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(compare_table(rows))
    if cfg.out:
        write_text_atomic(cfg.out, compare_table(rows))
    return 0
