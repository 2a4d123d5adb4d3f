"""``j1 attack``: how easily is a judge fooled? Attack pairs judged in both orders (j1.attack)."""

from __future__ import annotations

from collections.abc import Sequence

from j1.attack.attacks import ATTACKS
from j1.attack.spec import AttackSpec
from j1.cli import common
from j1.cli.common import parse, setup_logging


def attack_list() -> str:
    """The epilog of ``j1 attack --help``: every attack of the registry, one a line."""
    width = max(map(len, ATTACKS))
    return "attacks (--attacks NAME,... runs a subset):\n\n" + "\n".join(
        f"  {name:<{width}}  {line}" for name, line in ATTACKS.items())


def main(argv: Sequence[str]) -> int:
    cfg = parse(AttackSpec, argv, prog="j1 attack", epilog=attack_list())
    common.check_hub_inputs(cfg)  # an uncached hub id, offline: one line now, not after a minute of retries
    setup_logging()
    from j1.attack.runner import run_attack

    # The backend is built only if something is left to judge; the CLI supplies the API key.
    return common.run_command(
        "j1 attack", cfg.out, lambda: run_attack(cfg, open_backend=lambda: common.build_backend(cfg)),
        lambda report: {"model": report["meta"]["model"], "format": report["meta"]["format"],
                        "overall": report["overall"], "control": report["control"]})
