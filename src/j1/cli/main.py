"""``j1``: one entry point; each subcommand lives in its own module with a ``main(argv) -> int``."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence

from j1.cli.common import run_reporting_errors, setup_threads

# name -> (module, one-line help). Modules are imported only when their command runs.
COMMANDS: dict[str, tuple[str, str]] = {
    "judge": ("j1.cli.judge_cmd", "judge a prompt and one or two responses, in both orders"),
    "reward": ("j1.cli.reward_cmd", "score judge rollouts offline with the J1 rewards"),
    "train": ("j1.cli.train_cmd", "J1 GRPO training of a judge on TRL (position-agnostic batches)"),
    "warmup": ("j1.cli.warmup_cmd", "label-free SFT that teaches a small model the judge output format"),
    "synth": ("j1.cli.synth_cmd", "make training pairs: synth math | chat | mismatch | mix"),
    "eval": ("j1.cli.eval_cmd", "judge a benchmark (both orders, N samples) and score it"),
    "score": ("j1.cli.score_cmd", "recompute the metrics and report of an eval, consistency or attack run, no model"),
    "demo": ("j1.cli.demo_cmd", "the whole J1 loop on shipped data: example, eval before, train, eval after, report"),
    "serve": ("j1.cli.serve_cmd", "serve a judge over HTTP: OpenRLHF's /get_reward and /v1/judge, requests batched"),
    "probe": ("j1.cli.probe_cmd", "read a judge without sampling: pav verdict log-odds in both orders, pos expected scores"),
    "export": ("j1.cli.export_cmd", "export judge: a judge PEFT, vLLM and llama.cpp load (adapter, --merged, --gguf); "
               "export verl: pairs as verl parquet"),
    "attack": ("j1.cli.attack_cmd", "how easily is a judge fooled: master keys, injected verdicts, padded answers"),
    "label": ("j1.cli.label_cmd", "unlabelled responses -> a TRL preference dataset, judged in both orders"),
    "consistency": ("j1.cli.consistency_cmd", "label-free consistency over K responses per prompt: IPI, TOV, cycles"),
    "compare": ("j1.cli.compare_cmd", "several finished runs side by side: judges by benchmark"),
    "show": ("j1.cli.show_cmd", "read a run example by example: prompt, responses side by side, each order's verdict"),
}

# Commands that never run a model on this machine: torch's threads are not theirs to set.
NO_MODEL = {"score", "compare", "show"}


def usage() -> str:
    width = max(map(len, COMMANDS))
    rows = "\n".join(f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items())
    return (f"usage: j1 COMMAND [options]   (j1 COMMAND --help for a command's options)\n\ncommands:\n{rows}\n\n"
            "Bad input is reported in one line; --debug (anywhere) shows the traceback instead.\n")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help", "help"}:
        sys.stdout.write(usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        sys.stderr.write(f"j1: unknown command {name!r}\n\n{usage()}")
        return 2
    debug = "--debug" in rest
    rest = [a for a in rest if a != "--debug"]
    if name not in NO_MODEL and not {"-h", "--help"} & set(rest):
        # Before the command's imports load torch: OpenMP reads its variables once, when it loads.
        warning = setup_threads(os.environ)
        if warning:
            sys.stderr.write(f"j1 {name}: warning: {warning}\n")
    module = importlib.import_module(COMMANDS[name][0])
    # A command with subcommands (j1 synth math) names both in its messages.
    sub = rest[:1] if rest and rest[0] in getattr(module, "SUBCOMMANDS", ()) else []
    return run_reporting_errors(" ".join(["j1", name, *sub]), lambda: int(module.main(rest) or 0), debug=debug)


if __name__ == "__main__":
    sys.exit(main())
