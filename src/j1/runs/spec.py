"""The run-folder options of a command that judges a data file (``RunArgs``: ``--out``, ``--limit``,
``--resume``, ``--max-error-rate``, ``--progress``, ``--no_texts``; ``j1 eval``, ``j1 consistency``, ``j1 attack``,
``j1 label``) and the bootstrap's resamples of a command that reports intervals (``BootArgs``:
``--n-boot``); ``j1.runs.runinfo.RunFolder`` keeps the folder's rules."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RunArgs:
    """Where a judging run goes, how much of its data it takes and when it fails. A spec whose files or
    items differ restates ``out`` or ``limit`` with its own help (a field keeps its place in ``--help``)."""

    out: str | None = field(default=None, metadata={
        "help": "Run folder: judgments.jsonl, results.jsonl (one line per item, source order), metrics.json, report.md."})
    limit: int | None = field(default=None, metadata={"help": "Judge only the first K rows (file order)."})
    resume: bool = field(default=False, metadata={"help": "Continue the run in --out, skipping judged prompts."})
    max_error_rate: float = field(
        default=0.05, metadata={"help": "Fail when more than this share of prompts fail for good (after retries)."})
    progress: bool = field(default=True, metadata={"help": "Show a progress bar."})
    texts: bool = field(
        default=True, metadata={"help": "Write each item's prompt and responses into results.jsonl (j1 show prints them)."})

    def _check_run(self, command: str, items: str) -> None:
        """The run options' checks; ``command`` names the command, ``items`` what ``--limit`` counts.

        >>> RunArgs(out="runs/x", limit=0)._check_run("j1 eval", "rows")
        Traceback (most recent call last):
        ...
        ValueError: --limit 0: must be >= 1 (or leave it out for all rows)
        """
        if not self.out:
            raise ValueError(f"{command} needs --out DIR (the run folder)")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit {self.limit}: must be >= 1 (or leave it out for all {items})")
        if not 0 <= self.max_error_rate <= 1:
            raise ValueError(f"--max-error-rate {self.max_error_rate}: must be in [0, 1]")


@dataclass
class BootArgs:
    """The bootstrap behind a report's 95 percent intervals (``j1.eval.stats``)."""

    n_boot: int = field(default=1000, metadata={"help": "Bootstrap resamples for the 95 percent intervals."})

    def _check_boot(self) -> None:
        """
        >>> BootArgs(n_boot=0)._check_boot()
        Traceback (most recent call last):
        ...
        ValueError: --n-boot 0: must be >= 1
        """
        if self.n_boot < 1:
            raise ValueError(f"--n-boot {self.n_boot}: must be >= 1")
