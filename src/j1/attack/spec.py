"""Spec of ``j1 attack``: the judge (as ``j1 eval`` asks it) and the attack rows."""

from __future__ import annotations

from dataclasses import dataclass, field

from j1.attack.attacks import choose_attacks
from j1.backends.spec import BackendArgs, SamplingArgs
from j1.judging.spec import JudgeArgs
from j1.runs.spec import BootArgs, RunArgs


@dataclass
class AttackSpec(BootArgs, RunArgs, JudgeArgs, BackendArgs, SamplingArgs):
    """``j1 attack``: how easily is a judge fooled? Master keys, injected verdicts and padded wrong
    answers against correct answers, each judged in both orders (see j1.attack)."""

    data: str | None = field(
        default=None, metadata={"help": "Rows with a prompt, its correct answer (chosen) and a wrong answer (rejected), "
                                "as j1 synth writes them (JSONL/JSON/Parquet). Default: 60 GSM8K test questions "
                                "that ship with j1 (MIT)."})
    out: str | None = field(
        default=None, metadata={"help": "Run folder: judgments.jsonl, results.jsonl (each attack pair), report.json, report.md, "
                                "attacks.png."})
    limit: int | None = field(default=None, metadata={"help": "Attack only the first K rows (file order)."})
    attacks: str | None = field(
        default=None, metadata={"help": "Run only these attacks, comma-separated (listed below). Default: every "
                                "one. The control (the plain wrong answer) always runs."})

    def __post_init__(self) -> None:
        self._setup_judge()
        self._judges_as_written("j1 attack judges each attack as written (a shortened attack is another attack)")
        self._check_run("j1 attack", "rows")
        self._check_boot()
        choose_attacks(self.attacks)  # an unknown name: one line naming the valid ones
