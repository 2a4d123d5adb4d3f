"""``j1 demo``: the whole J1 loop on shipped data (``j1.demo.runner``); ``--minutes 0`` is the quick demo."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from j1.cli.common import check_hub_inputs, error_message, parse, removed_on_error, setup_logging
from j1.demo.spec import DemoSpec


def train_argv(cfg: DemoSpec, out: Path) -> list[str]:
    """``j1 train`` flags of the demo's training run: the recipe, the base model, the demo's data and
    folder, bf16 mixed precision (``--bf16``), then ``--train_args`` (later flags win). The train stage
    sets the time limit and the checkpoint to resume from.

    >>> from types import SimpleNamespace as NS
    >>> train_argv(NS(base_model="m", progress=True, train_bf16=False, train_argv=["--max_steps", "1"]), Path("d"))[2:]
    ['--model_name_or_path', 'm', '--train_file', 'd/data/train.jsonl', '--output_dir', 'd/train', '--max_steps', '1']
    """
    from j1.demo.shipped import RECIPE

    argv = ["--config", str(RECIPE), "--model_name_or_path", cfg.base_model,
            "--train_file", str(out / "data" / "train.jsonl"), "--output_dir", str(out / "train")]
    argv += ["--bf16", "true"] if cfg.train_bf16 else []
    return argv + ([] if cfg.progress else ["--disable_tqdm", "true"]) + list(cfg.train_argv)


def main(argv: Sequence[str]) -> int:
    cfg = parse(DemoSpec, argv, prog="j1 demo")
    train = None
    if cfg.minutes > 0:
        from j1.cli.train_cmd import parse_train

        train = parse_train(train_argv(cfg, Path(cfg.out)), prog="j1 demo --train_args")
    check_hub_inputs(cfg)  # an uncached hub id, offline: one line now, not after a minute of retries
    setup_logging()
    from j1.demo.report import group_table, markdown_table
    from j1.demo.runner import run_demo
    from j1.eval.runner import TooManyErrors
    from j1.schema import RowError

    try:
        with removed_on_error(cfg.out):  # a failed start leaves no empty run folder
            report = run_demo(cfg, train)
    except TooManyErrors as exc:
        sys.stderr.write(f"j1 demo: {exc}\n")
        return 1
    except (RowError, OSError, ValueError, RuntimeError) as exc:
        # A folder made with other options, a missing model, bad data: the message says what and where.
        sys.stderr.write(f"j1 demo: error: {error_message(exc)}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write(f"j1 demo: interrupted; rerun the same command to continue in {cfg.out}\n")
        return 130
    print(markdown_table(report["table"]))
    if report.get("reading"):
        print(report["reading"])
    if report.get("groups"):
        print(group_table(report["groups"]))
        for name, group in report["groups"].items():
            if group.get("reading"):
                print(f"{name}: {group['reading']}")
    print(f"report: {Path(cfg.out) / 'report.md'}")
    return 0
