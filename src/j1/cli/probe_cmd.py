"""``j1 probe``: how much a pav judge's verdict depends on content, read from its logits (j1.probe)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from j1.cli.common import parse, setup_logging
from j1.cli.configs import ProbeConfig


def main(argv: Sequence[str]) -> int:
    cfg = parse(ProbeConfig, argv, prog="j1 probe")
    setup_logging()
    from j1.probe import run_probe

    try:
        summary = run_probe(cfg)
    except (OSError, ValueError) as exc:
        # Bad data (RowError is a ValueError, naming file:line and field), a missing model folder, an
        # adapter with no base: the message says what and where; a traceback would only bury it.
        message = " ".join(str(exc).split())  # one line: transformers' OSErrors span several
        sys.stderr.write(f"j1 probe: error: {message}\n")
        return 2
    json.dump(summary, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
