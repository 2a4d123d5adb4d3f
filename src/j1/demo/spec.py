"""Spec of ``j1 demo``: the whole J1 loop on data shipped with j1 (see :mod:`j1.demo.runner`)."""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from j1.judging.judges import DEFAULT_JUDGE
from j1.models import EMBEDDED_NAME

# The demo sets these j1 train flags itself (its data, its run folder, the time left, resuming).
DEMO_TRAIN_FLAGS = ("--config", "--train_file", "--output_dir", "--max_minutes", "--resume_from_checkpoint")
BF16_CHOICES = ("auto", "true", "false")


@dataclass
class DemoSpec:
    """``j1 demo``: judge an example, evaluate the base model on held-out pairs, train a judge with J1 GRPO
    for the time given (or take the shipped one), evaluate it the same way, and report before vs after."""

    minutes: float = field(
        # What the shipped recipe needs on a small CPU with native bf16 (results/demo/README.md).
        default=90.0,
        metadata={"help": "Time budget in minutes. 0 = the quick demo (make demo): no training; the base model is compared with "
                  "the ready judge --judge. M > 0: train a judge with the shipped recipe (j1_135m.yaml) for what is "
                  "left of M after the other stages, then compare it with its base. The default is what the recipe "
                  "needs on a small CPU with native bf16; in fp32 give it about 150 (results/demo/README.md)."})
    out: str = field(
        default="runs/demo",
        metadata={"help": "Run folder (stages.json, data/, eval-before/, train/, eval-after/, report.md). "
                  "Rerun the same command to continue an interrupted demo."})
    judge: str = field(
        default=DEFAULT_JUDGE,
        metadata={"help": "With --minutes 0, the judge compared with the base: a shipped judge or a judge folder "
                  "(its judge.json says how it is asked)."})
    base_model: str = field(
        default=EMBEDDED_NAME,
        metadata={"help": "The model before training: evaluated first, and (--minutes > 0) the one trained."})
    heldout_pairs: int = field(
        default=120,
        metadata={"help": "Evaluate on N shipped held-out pairs: half from GSM8K test questions (the training source, "
                  "questions never trained on; 60 in all), the rest from MATH and Alpaca (sources not trained on; "
                  "120 in all). The report gives each group and both together."})
    seed: int = field(default=0, metadata={"help": "Seed of the A/B placement of the training pairs and of judging."})
    train_args: str = field(
        default="",
        metadata={"help": "Extra j1 train flags, one string, after the recipe's (e.g. \"--max_steps 20\")."})
    bf16: str = field(
        default="auto",
        metadata={"help": "Train in bf16 mixed precision (j1 train --bf16 true; the weights stay fp32; the evaluations "
                  "judge in bf16 wherever it is native, whatever this says): auto = where the machine computes bf16 natively "
                  "(a CPU with AVX-512 BF16 or AMX, or a GPU), where a step is ~1.6x faster; true; false.",
                  "choices": list(BF16_CHOICES)})
    progress: bool = field(default=True, metadata={"help": "Show progress bars."})

    def __post_init__(self) -> None:
        from j1.demo.shipped import heldout_available
        from j1.judging.judges import SHIPPED, judge_folder

        if not math.isfinite(self.minutes) or self.minutes < 0:
            raise ValueError(f"--minutes {self.minutes}: must be >= 0 (0 = the quick demo, without training)")
        if Path(self.out).exists() and not Path(self.out).is_dir():
            raise ValueError(f"--out {self.out}: is a file; give a folder for the run")
        available = sum(heldout_available())
        if not 1 <= self.heldout_pairs <= available:
            raise ValueError(f"--heldout_pairs {self.heldout_pairs}: must be in 1..{available} (the shipped held-out pairs)")
        try:
            self.train_argv = shlex.split(self.train_args)
        except ValueError as exc:
            raise ValueError(f"--train_args {self.train_args!r}: {exc}") from None
        taken = [a for a in self.train_argv if a.split("=", 1)[0] in DEMO_TRAIN_FLAGS]
        if taken:
            raise ValueError(f"--train_args sets {taken[0].split('=', 1)[0]}: the demo sets it; leave it out")
        if self.bf16 not in BF16_CHOICES:
            raise ValueError(f"--bf16 {self.bf16!r}: choose one of {', '.join(BF16_CHOICES)}")
        if self.minutes == 0 and self.train_argv:
            raise ValueError("--train_args needs --minutes > 0 (training runs only then)")
        if self.minutes == 0 and judge_folder(self.judge) is None:
            shipped = ", ".join(SHIPPED) or "none in this install"
            raise ValueError(f"--judge {self.judge!r}: not a shipped judge ({shipped}) nor a folder; with --minutes 0 "
                             "the demo needs a ready judge (or give --minutes > 0 to train one)")

    @property
    def train_bf16(self) -> bool:
        """Whether training runs in bf16 mixed precision (``--bf16``, auto resolved on this machine)."""
        if self.bf16 == "auto":
            from j1.device import native_bf16

            return native_bf16()
        return self.bf16 == "true"
