"""Configs of ``j1 consistency`` (label-free consistency over response sets) and ``j1 compare``."""

from __future__ import annotations

from dataclasses import dataclass, field

from j1.cli.configs.common import BackendArgs, SamplingArgs
from j1.cli.configs.judging import JudgeArgs


@dataclass
class ConsistencyConfig(JudgeArgs, BackendArgs, SamplingArgs):
    """``j1 consistency``: judge every pair of K responses per prompt in both orders; report IPI, TOV and
    intransitive triples (no labels needed)."""

    data: str | None = field(
        default=None, metadata={"help": "JSONL/JSON/Parquet rows with 'prompt' and 'responses' (a list; or RewardBench "
                                "2's 'chosen' and 'rejected' lists). Default: the shipped set (24 GSM8K prompts x 6 "
                                "responses, j1/assets/data/consistency_gsm8k.jsonl)."})
    responses: int = field(default=4, metadata={"help": "K: judge the first K responses of each prompt "
                                                "(K(K-1) pairwise prompts per prompt; 3 <= K <= 12)."})
    out: str | None = field(default=None, metadata={"help": "Run folder: judgments.jsonl, metrics.json, report.md."})
    limit: int | None = field(default=None, metadata={"help": "Only the first N prompts (file order)."})
    resume: bool = field(default=False, metadata={"help": "Continue the run in --out, skipping judged prompts."})
    sampler_model: str | None = field(
        default=None, metadata={"help": "Sample the K responses from this model instead of reading them from --data "
                                "(then only 'prompt' is read); they are kept in DIR/responses.jsonl."})
    sampler_temperature: float = field(default=1.0, metadata={"help": "Sampling temperature of --sampler-model."})
    sampler_max_new_tokens: int = field(default=256, metadata={"help": "Most tokens per sampled response."})
    max_error_rate: float = field(
        default=0.05, metadata={"help": "Fail when more than this share of prompts fail for good (after retries)."})
    n_boot: int = field(default=1000, metadata={"help": "Bootstrap resamples for the 95 percent intervals."})
    progress: bool = field(default=True, metadata={"help": "Show a progress bar."})

    def __post_init__(self) -> None:
        from j1.eval.consistency import MAX_K

        self._setup_judge()
        if self.data is None and self.sampler_model is None:
            from j1.eval.consistency_run import SHIPPED_SETS

            self.data = str(SHIPPED_SETS)
        if self.format == "fourway":
            raise ValueError("--format fourway picks one of four; consistency judges pairs: use pav, pas, pavs or pos")
        if not self.out:
            raise ValueError("j1 consistency needs --out DIR (the run folder)")
        if not 3 <= self.responses <= MAX_K:
            raise ValueError(f"--responses {self.responses}: must be in [3, {MAX_K}] (triples need 3; the exact TOV "
                             f"is computed up to {MAX_K})")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit {self.limit}: must be >= 1 (or leave it out for all prompts)")
        if self.sampler_temperature <= 0:
            raise ValueError(f"--sampler-temperature {self.sampler_temperature}: must be > 0 (K greedy answers are one)")
        if self.sampler_max_new_tokens < 1:
            raise ValueError(f"--sampler-max-new-tokens {self.sampler_max_new_tokens}: must be >= 1")
        if not 0 <= self.max_error_rate <= 1:
            raise ValueError(f"--max-error-rate {self.max_error_rate}: must be in [0, 1]")
        if self.n_boot < 1:
            raise ValueError(f"--n-boot {self.n_boot}: must be >= 1")


@dataclass
class CompareConfig:
    """``j1 compare DIR1 DIR2 …``: several finished runs side by side, judges by benchmark."""

    runs: list[str] = field(default_factory=list, metadata={"help": "Run folders (also positional)."})
    out: str | None = field(default=None, metadata={"help": "Also write the table to this .md file."})
    json: bool = field(default=False, metadata={"help": "Print the rows as JSON instead of a table."})

    def __post_init__(self) -> None:
        if not self.runs:
            raise ValueError("j1 compare needs run folders: j1 compare DIR1 DIR2 …")
