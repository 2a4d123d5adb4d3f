"""Spec of ``j1 attack``: the judge (as ``j1 eval`` asks it) and the attack rows."""

from __future__ import annotations

from dataclasses import dataclass, field

from j1.backends.spec import BackendArgs, SamplingArgs
from j1.judge_spec import JudgeArgs


@dataclass
class AttackSpec(JudgeArgs, BackendArgs, SamplingArgs):
    """``j1 attack``: how easily is a judge fooled? Master keys, injected verdicts and padded wrong
    answers against correct answers, each judged in both orders (see j1.attack)."""

    data: str | None = field(
        default=None, metadata={"help": "Rows with a prompt, its correct answer (chosen) and a wrong answer (rejected), "
                                "as j1 synth writes them (JSONL/JSON/Parquet). Default: 60 GSM8K test questions "
                                "that ship with j1 (MIT)."})
    out: str | None = field(
        default=None, metadata={"help": "Run folder: judgments.jsonl, report.json, report.md, attacks.png."})
    limit: int | None = field(default=None, metadata={"help": "Attack only the first K rows (file order)."})
    resume: bool = field(default=False, metadata={"help": "Continue the run in --out, skipping judged prompts."})
    max_error_rate: float = field(
        default=0.05, metadata={"help": "Fail when more than this share of prompts fail for good (after retries)."})
    n_boot: int = field(default=1000, metadata={"help": "Bootstrap resamples for the 95 percent intervals."})
    progress: bool = field(default=True, metadata={"help": "Show a progress bar."})

    def __post_init__(self) -> None:
        self._setup_judge()
        self._judges_as_written("j1 attack judges each attack as written (a shortened attack is another attack)")
        if not self.out:
            raise ValueError("j1 attack needs --out DIR (the run folder)")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit {self.limit}: must be >= 1 (or leave it out for all rows)")
        if not 0 <= self.max_error_rate <= 1:
            raise ValueError(f"--max-error-rate {self.max_error_rate}: must be in [0, 1]")
        if self.n_boot < 1:
            raise ValueError(f"--n-boot {self.n_boot}: must be >= 1")
