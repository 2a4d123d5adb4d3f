"""``j1 attack``: how easily is a judge fooled? Attack pairs judged in both orders (j1.attack)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from j1.attack.spec import AttackSpec
from j1.cli import common
from j1.cli.common import parse, setup_logging


def main(argv: Sequence[str]) -> int:
    cfg = parse(AttackSpec, argv, prog="j1 attack")
    common.check_hub_inputs(cfg)  # an uncached hub id, offline: one line now, not after a minute of retries
    setup_logging()
    from j1.attack.runner import run_attack
    from j1.eval.runner import TooManyErrors

    try:
        # The backend is built only if something is left to judge; the CLI supplies the API key.
        with common.removed_on_error(cfg.out):  # a failed start leaves no empty run folder
            report = run_attack(cfg, open_backend=lambda: common.build_backend(cfg))
    except TooManyErrors as exc:
        sys.stderr.write(f"j1 attack: {exc}\n")
        return 1
    except (OSError, ValueError, RuntimeError) as exc:
        # Bad data (RowError is a ValueError), a missing file, a run folder in use, an unreachable
        # server: the message says what and where; a traceback would only bury it.
        sys.stderr.write(f"j1 attack: error: {common.error_message(exc)}\n")
        return 2
    json.dump({"model": report["meta"]["model"], "format": report["meta"]["format"],
               "overall": report["overall"], "control": report["control"]}, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
