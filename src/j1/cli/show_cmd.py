"""``j1 show RUN``: print a run's examples for a person to read (``j1.eval.show``)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence

from j1.cli.common import parse
from j1.eval.spec import ShowSpec


def main(argv: Sequence[str]) -> int:
    argv = list(argv)
    if argv and not argv[0].startswith("-"):  # j1 show RUN
        argv = ["--run_dir", argv[0], *argv[1:]]
    cfg = parse(ShowSpec, argv, prog="j1 show")
    from j1.eval.show import render, results_of, select

    records = results_of(cfg.run_dir)  # a missing or malformed file: main prints one line, exits 2
    chosen = select(records, wrong=cfg.wrong, flips=cfg.flips, invalid=cfg.invalid, category=cfg.category)
    width = cfg.width or min(max(shutil.get_terminal_size((100, 24)).columns, 60), 200)
    shown = chosen[:cfg.limit] if cfg.limit else chosen
    for r in shown:
        sys.stdout.write(render(r, width=width, chars=cfg.chars) + "\n")
    sys.stdout.write(f"{len(shown)} of {len(chosen)} matching items shown ({len(records)} in the run)"
                     + (" (--limit)" if len(shown) < len(chosen) else "") + "\n")
    return 0
