"""Spec of ``j1 export judge``: a trained judge as a new folder (``j1.judges.export_judge``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ExportJudgeSpec:
    """``j1 export judge``: a trained judge as a new folder that ``--model`` reads (``j1.judges.export_judge``)."""

    model: str | None = field(
        default=None,
        metadata={"help": "The judge to export: a folder j1 train or j1 warmup wrote (its final/ or a "
                  "checkpoint-N/) or a shipped judge; also given as the first argument."},
    )
    out: str | None = field(
        default=None,
        metadata={"help": "The new folder (it must not exist); src/j1/assets/judges/NAME ships the judge in the "
                  "package."},
    )
    merged: bool = field(
        default=False,
        metadata={"help": "Fold a LoRA adapter into its base: a full model that plain transformers loads, no "
                  "base needed; else the adapter is copied as it is."},
    )
    base: str | None = field(
        default=None, metadata={"help": "The adapter's base, when its judge.json names none."}
    )

    def __post_init__(self) -> None:
        if not self.model or not self.out:
            raise ValueError("j1 export judge needs the judge and --out DIR: j1 export judge runs/x/final --out DIR")
