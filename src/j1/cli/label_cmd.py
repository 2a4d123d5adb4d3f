"""``j1 label``: judge unlabelled responses in both orders and write a TRL preference dataset."""

from __future__ import annotations

from collections.abc import Sequence

from j1.cli import common
from j1.cli.common import parse, setup_logging
from j1.label import LabelSpec


def main(argv: Sequence[str]) -> int:
    cfg = parse(LabelSpec, argv, prog="j1 label")
    common.check_hub_inputs(cfg)  # an uncached hub id, offline: one line now, not after a minute of retries
    setup_logging()
    from j1.label import run_label

    return common.run_command("j1 label", cfg.out, lambda: run_label(cfg, open_backend=lambda: common.build_backend(cfg)),
                              lambda counts: {"preferences": f"{cfg.out}/preferences.jsonl", **counts})
