"""``j1 label``: judge unlabelled responses in both orders and write a TRL preference dataset."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from j1.cli import common
from j1.cli.common import parse, setup_logging
from j1.label import LabelSpec


def main(argv: Sequence[str]) -> int:
    cfg = parse(LabelSpec, argv, prog="j1 label")
    common.check_hub_inputs(cfg)  # an uncached hub id, offline: one line now, not after a minute of retries
    setup_logging()
    from j1.eval.runner import TooManyErrors
    from j1.label import run_label
    from j1.schema import RowError

    try:
        with common.removed_on_error(cfg.out):  # a failed start leaves no empty run folder
            counts = run_label(cfg, open_backend=lambda: common.build_backend(cfg))
    except TooManyErrors as exc:
        sys.stderr.write(f"j1 label: {exc}\n")
        return 1
    except (RowError, OSError, ValueError, RuntimeError) as exc:
        sys.stderr.write(f"j1 label: error: {common.error_message(exc)}\n")
        return 2
    json.dump({"preferences": f"{cfg.out}/preferences.jsonl", **counts}, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
