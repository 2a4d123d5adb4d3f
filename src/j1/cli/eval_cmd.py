"""``j1 eval``: judge a benchmark and score it; ``j1 score DIR``: rescore a run without a model."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from j1.cli import common
from j1.cli.common import parse, setup_logging
from j1.eval.spec import EvalSpec, ScoreSpec


def main(argv: Sequence[str]) -> int:
    cfg = parse(EvalSpec, argv, prog="j1 eval")
    common.check_hub_inputs(cfg)  # an uncached hub id, offline: one line now, not after a minute of retries
    setup_logging()
    from j1.eval.runner import plan_eval, run_eval

    if cfg.dry_run:  # no model, no folder: the data read and the run's size printed
        json.dump(plan_eval(cfg), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0

    def summary(metrics: dict) -> dict:
        _record_in_manifest(cfg, metrics)
        return {k: metrics[k] for k in ("benchmark", "format", "model", "n")} | {"overall": metrics["overall"]}

    # The backend is built only if something is left to judge; the CLI supplies the API key.
    return common.run_command("j1 eval", cfg.out, lambda: run_eval(cfg, open_backend=lambda: common.build_backend(cfg)),
                              summary)


def _record_in_manifest(cfg: EvalSpec, metrics: dict) -> None:
    """A judge folder of the user's (not a shipped one) keeps what it reached in its judge.json."""
    from j1.judging.judges import SHIPPED, judge_folder, record_metrics

    folder = None if cfg.base_url or cfg.model in SHIPPED else judge_folder(cfg.model)
    if folder is None:
        return
    key = f"{cfg.benchmark}:{Path(cfg.data).name}" + (f":{cfg.split}" if cfg.split else "")
    entry = {"n": metrics["n"], "out": cfg.out, **metrics["overall"]}
    if cfg.limit is not None:
        entry["limit"] = cfg.limit
    if record_metrics(folder, key, entry):
        sys.stderr.write(f"j1 eval: recorded in {folder / 'judge.json'} under {key!r}\n")


def score_main(argv: Sequence[str]) -> int:
    argv = list(argv)
    if argv and not argv[0].startswith("-"):  # j1 score DIR
        argv = ["--run_dir", argv[0], *argv[1:]]
    cfg = parse(ScoreSpec, argv, prog="j1 score")
    setup_logging()
    from j1.eval.rescore import rescore

    # A folder it cannot rescore (not a run, a j1 label run, a damaged run.json) is a ValueError or a
    # missing file: main prints it in one line and exits 2.
    metrics = rescore(Path(cfg.run_dir), n_boot=cfg.n_boot)
    json.dump({k: metrics[k] for k in ("benchmark", "format", "model", "n")} | {"overall": metrics["overall"]},
              sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
