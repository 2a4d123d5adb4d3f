"""Where a j1 GRPO step's time goes: py-spy's raw samples of a `j1 train` run, summed by phase.

    OMP_NUM_THREADS=2 .venv/bin/py-spy record --rate 20 --format raw -o runs/bench/step.raw --subprocesses -- \
        bash results/bench/train_step_thoughts.sh runs/bench/dev/train.jsonl runs/bench/step-prof
    .venv/bin/python results/bench/train_step_phases.py runs/bench/step.raw --json results/bench/train_step_phases.json

A sample belongs to the first phase whose marker is in its stack (innermost phases first); samples
outside the trainer's step loop (loading, saving) are counted apart. py-spy attributes native time
(torch kernels) to the Python frame that called them.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

# (phase, markers): the first phase with a marker in the stack takes the sample.
PHASES = (
    ("generation (j1.backends.decode, the rollouts)", ("j1/backends/decode.py", "_generate (")),
    ("loss backward", ("backward",)),
    ("loss forward: prompts (encoded once each)", ("prefix_cache",)),
    ("loss forward: completions and LM head", ("compute_loss", "_get_per_token_logps")),
    ("rewards and advantages", ("_calculate_rewards", "reward", "advantage")),
    ("optimizer", ("optimizer", "optim")),
)
IN_STEP = ("training_step", "_inner_training_loop")


def phases(lines) -> dict[str, int]:
    """Samples per phase from py-spy raw lines (``frame;frame;... count``)."""
    out: Counter[str] = Counter()
    for line in lines:
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        if not any(m in stack for m in IN_STEP):
            out["outside the step loop"] += int(count)
            continue
        name = next((p for p, marks in PHASES if any(m in stack for m in marks)), "other, in the step")
        out[name] += int(count)
    return dict(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    counts = phases(args.raw.read_text().splitlines())
    step = sum(v for k, v in counts.items() if k != "outside the step loop")
    share = {k: round(v / step, 3) for k, v in counts.items() if k != "outside the step loop"}
    gen = next((v for k, v in share.items() if k.startswith("generation")), 0.0)
    out = {"samples": counts, "share_of_step": share,
           "step_speedup_if_generation_were_free": round(1 / (1 - gen), 2) if gen < 1 else None}
    for k, v in sorted(share.items(), key=lambda kv: -kv[1]):
        print(f"{v:6.1%}  {k}")
    print(f"a step with free generation: at most {out['step_speedup_if_generation_were_free']}x faster")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
