"""``j1 attack``: how easily is a judge fooled? Attack pairs judged in both orders (j1.attack)."""

from __future__ import annotations

from collections.abc import Sequence

from j1.attack.spec import AttackSpec
from j1.cli import common
from j1.cli.common import parse, setup_logging


def main(argv: Sequence[str]) -> int:
    cfg = parse(AttackSpec, argv, prog="j1 attack")
    common.check_hub_inputs(cfg)  # an uncached hub id, offline: one line now, not after a minute of retries
    setup_logging()
    from j1.attack.runner import run_attack

    # The backend is built only if something is left to judge; the CLI supplies the API key.
    return common.run_command(
        "j1 attack", cfg.out, lambda: run_attack(cfg, open_backend=lambda: common.build_backend(cfg)),
        lambda report: {"model": report["meta"]["model"], "format": report["meta"]["format"],
                        "overall": report["overall"], "control": report["control"]})
