"""``j1 reward``: score judge rollouts offline with the same reward code as ``j1 train``.

Input rows: ``{"pair_id", "order": "AB"|"BA" (pos: "A"|"B"), "label": "A"|"B", "completion"}``;
every rollout of a pair in the file is rewarded together (consistency needs both orders). Output:
each input row plus ``"rewards": {"correctness", "consistency", "total"}`` (consistency is null
where the pair's other order is absent from the file, and always for pos).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from j1.cli.common import parse, setup_logging
from j1.rewards import Rollout, check_rollout, score_rollouts
from j1.rewards.core import default_consistency_weight, reward_format
from j1.rewards.spec import RewardSpec
from j1.runs.atomic import write_jsonl_atomic
from j1.schema import RowError, iter_jsonl, require

log = logging.getLogger(__name__)


def read_rollouts(path: str, fmt: str) -> tuple[list[dict], list[Rollout]]:
    """The rows of a rollouts file and their Rollouts; a bad row raises RowError naming file:line, an
    empty file RowError naming the file."""
    rows, rollouts = [], []
    for lineno, obj in iter_jsonl(path):
        where = f"{path}:{lineno}"
        pid = require(obj, "pair_id", (str, int), where)
        rollout = Rollout(
            pair_id=str(pid),
            order=require(obj, "order", str, where),
            label=require(obj, "label", str, where),
            completion=require(obj, "completion", str, where),
            format=fmt,
        )
        try:
            check_rollout(rollout)
        except ValueError as exc:
            raise RowError(f"{where}: {exc}") from None
        rows.append(obj)
        rollouts.append(rollout)
    if not rollouts:
        raise RowError(f"{path}: no rollouts (the file has no rows)")
    return rows, rollouts


def main(argv: Sequence[str]) -> int:
    cfg = parse(RewardSpec, argv, prog="j1 reward")
    setup_logging()
    rows, rollouts = read_rollouts(cfg.input, cfg.format)
    w_cons = default_consistency_weight(cfg.format) if cfg.consistency_weight is None else cfg.consistency_weight
    parts = score_rollouts(
        rollouts, consistency=cfg.consistency, w_correct=cfg.correctness_weight, w_consistency=w_cons
    )
    out = [
        {**row, "rewards": {"correctness": p.correctness, "consistency": p.consistency, "total": p.total}}
        for row, p in zip(rows, parts, strict=True)
    ]
    write_jsonl_atomic(cfg.output, out)
    missing = Counter(p.consistency is None for p in parts)[True] if reward_format(cfg.format).pairwise else 0
    mean = sum(p.total for p in parts) / len(parts) if parts else float("nan")
    log.info("%d rollouts rewarded (mean total %.3f) -> %s", len(parts), mean, cfg.output)
    if missing:
        log.warning("%d rollouts have no partner order in the file: their consistency is null", missing)
    return 0
