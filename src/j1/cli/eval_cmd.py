"""``j1 eval``: judge a benchmark and score it; ``j1 score DIR``: rescore a run without a model."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from j1.cli import common
from j1.cli.common import parse, setup_logging
from j1.cli.configs import EvalConfig, ScoreConfig


def main(argv: Sequence[str]) -> int:
    cfg = parse(EvalConfig, argv, prog="j1 eval")
    setup_logging()
    from j1.eval.runner import TooManyErrors, run_eval
    from j1.schema import RowError

    try:
        # The backend is built only if something is left to judge; the CLI supplies the API key.
        metrics = run_eval(cfg, open_backend=lambda: common.build_backend(cfg))
    except TooManyErrors as exc:
        sys.stderr.write(f"j1 eval: {exc}\n")
        return 1
    except (RowError, OSError, ValueError, RuntimeError) as exc:
        # Bad data, a missing file, a run folder in use, an unreachable server: the message says
        # what and where; a traceback would only bury it.
        sys.stderr.write(f"j1 eval: error: {exc}\n")
        return 2
    json.dump({k: metrics[k] for k in ("benchmark", "format", "model", "n")} | {"overall": metrics["overall"]},
              sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def score_main(argv: Sequence[str]) -> int:
    argv = list(argv)
    if argv and not argv[0].startswith("-"):  # j1 score DIR
        argv = ["--run_dir", argv[0], *argv[1:]]
    cfg = parse(ScoreConfig, argv, prog="j1 score")
    setup_logging()
    from j1.eval.runner import score_run

    run_dir = Path(cfg.run_dir)
    for need in ("run.json", "judgments.jsonl"):
        if not (run_dir / need).exists():
            sys.stderr.write(f"j1 score: {run_dir / need} not found; is {run_dir} a j1 eval run folder?\n")
            return 2
    metrics = score_run(run_dir, n_boot=cfg.n_boot)
    json.dump({k: metrics[k] for k in ("benchmark", "format", "model", "n")} | {"overall": metrics["overall"]},
              sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
