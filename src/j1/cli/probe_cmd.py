"""``j1 probe``: how much a pav or pos judge's preference depends on content, read from its logits (j1.probe.runner)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from j1.cli.common import check_hub_inputs, parse, setup_logging
from j1.probe.spec import ProbeSpec


def main(argv: Sequence[str]) -> int:
    cfg = parse(ProbeSpec, argv, prog="j1 probe")
    check_hub_inputs(cfg)  # an uncached hub id, offline: one line now, not after a minute of retries
    setup_logging()
    from j1.probe.runner import run_probe

    # Bad data, a missing model folder, an adapter with no base: j1 (cli.common.run_reporting_errors)
    # prints the message in one line.
    summary = run_probe(cfg)
    json.dump(summary, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
