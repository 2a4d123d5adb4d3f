"""Specs of the commands that judge a data set and score it: ``j1 eval``, ``j1 score``, ``j1 consistency``
(label-free consistency over response sets) and ``j1 compare``."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from j1.backends.spec import BackendArgs, SamplingArgs
from j1.eval.benchmarks import BENCHMARKS, benchmark_choices
from j1.formats import get_format, require_arity
from j1.judging.spec import JudgeArgs
from j1.runs.spec import BootArgs, RunArgs

# j1 consistency's default --data: GSM8K response sets that ship with j1.
SHIPPED_SETS = Path(__file__).resolve().parents[1] / "assets" / "data" / "consistency_gsm8k.jsonl"


@dataclass
class EvalSpec(BootArgs, RunArgs, JudgeArgs, BackendArgs, SamplingArgs):
    """``j1 eval``: judge a benchmark in its published schema and score it (see j1.eval)."""

    benchmark: str | None = field(default=None, metadata={"help": benchmark_choices()})
    data: str | None = field(
        default=None, metadata={"help": "Local JSONL/JSON/Parquet file, a Hugging Face dataset id (needs network), or "
                                "a dataset folder downloaded from the Hub."})
    split: str | None = field(
        default=None, metadata={"help": "The part of the data to judge: JudgeBench gpt-4o (the J1 paper's 350 pairs) "
                                "or claude, from a file's rows or the Hub's split that holds them; with a Hugging "
                                "Face id or a dataset folder, any of its splits (default: the benchmark's own, e.g. "
                                "RewardBench 2 test). A split that is not there is named with those that are."})
    # The old name of --split for a dataset's split, kept so that commands and YAML files that use it work.
    hf_split: str | None = field(default=None, metadata={"help": argparse.SUPPRESS})
    ties: str | None = field(
        default=None, metadata={"help": "keep or drop tie-labelled items (default per benchmark: PPE and "
                                "MT-Bench drop, the rest keep)."})
    rb2_mode: str = field(
        default="fourway", metadata={"help": "RewardBench 2: fourway (pick the best of four, the official default) or "
                                     "ratings (rate each response); sets the format. Ties is always rated."})
    rb2_rotations: int = field(
        default=1, metadata={"help": "RewardBench 2 fourway: judge each item with the chosen answer in this many "
                             "positions (1-4); reports the first, their mean and right-in-all."})
    use_reference: bool | None = field(
        default=None, metadata={"help": "Send the judge the reference inputs the data carries, each in its own fence: "
                                "MT-Bench's reference answers for math, reasoning and coding (from --references), "
                                "PPE correctness's gold answer, RewardBench 2 Precise IF's constraint (as criteria), "
                                "a pair file's own criteria and reference. Default: on where the benchmark's "
                                "official judge reads them (mtbench_human), off elsewhere."})
    references: str | None = field(
        default=None, metadata={"help": "Reference answers kept apart from the benchmark's rows: for mtbench_human, "
                                "FastChat's data/mt_bench/reference_answer/gpt-4.jsonl (what its official judge "
                                "reads; needed with --use_reference)."})
    dry_run: bool = field(
        default=False, metadata={"help": "Check the run without a model and write nothing: read the data (split, "
                                 "schema), print the items, judge prompts, completions and the most tokens they "
                                 "can cost (what docs/scale.md prices)."})

    def __post_init__(self) -> None:
        self._setup_judge()
        self._setup_rewardbench2()
        if self.benchmark is None:
            raise ValueError(f"j1 eval needs --benchmark, one of: {', '.join(sorted(BENCHMARKS))}")
        if self.benchmark not in BENCHMARKS:
            raise ValueError(f"--benchmark {self.benchmark!r}: unknown; choose one of {', '.join(sorted(BENCHMARKS))}")
        if not self.data:
            raise ValueError("j1 eval needs --data (a local file or a Hugging Face dataset id)")
        self._check_run("j1 eval", "rows")
        self._check_boot()
        if self.ties not in (None, "keep", "drop"):
            raise ValueError(f"--ties {self.ties!r}: choose keep or drop")
        self._setup_references(BENCHMARKS[self.benchmark])

    def _setup_references(self, bench) -> None:
        """``--use_reference`` from the benchmark's official rule when unset; a benchmark that reads its reference
        answers from a file of their own needs ``--references`` to use them."""
        if self.use_reference is None:
            self.use_reference = bench.use_reference
        if self.references is not None and bench.read_references is None:
            raise ValueError(f"--references {self.references}: --benchmark {bench.name} reads no reference file "
                             "(what it has is in its rows)")
        if self.use_reference and bench.read_references is not None and self.references is None:
            raise ValueError(f"--benchmark {bench.name} judges against reference answers kept apart from its rows, as "
                             "its official judge does: pass --references FILE (mtbench_human: FastChat's "
                             "data/mt_bench/reference_answer/gpt-4.jsonl), or --use_reference false to judge without")

    def _setup_rewardbench2(self) -> None:
        """RewardBench 2's mode picks the format (fourway or pos); fourway is for RewardBench 2 only."""
        if self.rb2_mode not in ("fourway", "ratings"):
            raise ValueError(f"--rb2-mode {self.rb2_mode!r}: choose fourway or ratings")
        if not 1 <= self.rb2_rotations <= 4:
            raise ValueError(f"--rb2-rotations {self.rb2_rotations}: must be in [1, 4] (four positions)")
        if self.benchmark == "rewardbench2":
            self.format = "fourway" if self.rb2_mode == "fourway" else "pos"
        elif get_format(self.format).arity > 2:
            raise ValueError(f"--format {self.format} picks one of {get_format(self.format).arity} answers: only "
                             f"--benchmark rewardbench2 has them (not {self.benchmark!r})")


@dataclass
class ScoreSpec(BootArgs):
    """``j1 score DIR``: recompute DIR/metrics.json and DIR/report.md from DIR/judgments.jsonl (``j1.eval.rescore``)."""

    run_dir: str | None = field(default=None, metadata={
        "help": "The run folder of j1 eval, j1 consistency or j1 attack (also positional)."})

    def __post_init__(self) -> None:
        if not self.run_dir:
            raise ValueError("j1 score needs the run folder: j1 score DIR")
        self._check_boot()


@dataclass
class ShowSpec:
    """``j1 show RUN``: a run's results.jsonl example by example (``j1.eval.show``)."""

    run_dir: str | None = field(default=None, metadata={
        "help": "The run folder of j1 eval, attack, consistency or label (also positional)."})
    wrong: bool = field(default=False, metadata={
        "help": "Only items with a wrong verdict in some order (an invalid verdict is wrong)."})
    flips: bool = field(default=False, metadata={"help": "Only items whose verdict changed with the order."})
    invalid: bool = field(default=False, metadata={"help": "Only items with an invalid judgment (no verdict read)."})
    category: str | None = field(default=None, metadata={"help": "Only items of this category."})
    limit: int = field(default=10, metadata={"help": "Show the first N items that match, in source order (0: all)."})
    chars: int = field(default=800, metadata={"help": "Cut each prompt, response and thought to N characters (0: whole)."})
    width: int | None = field(default=None, metadata={"help": "Line width (default: the terminal's, else 100)."})

    def __post_init__(self) -> None:
        if not self.run_dir:
            raise ValueError("j1 show needs the run folder: j1 show RUN")
        for name in ("limit", "chars"):
            if getattr(self, name) < 0:
                raise ValueError(f"--{name} {getattr(self, name)}: must be >= 0 (0: no limit)")
        if self.width is not None and self.width < 40:
            raise ValueError(f"--width {self.width}: must be >= 40 (two responses side by side)")


@dataclass
class ConsistencySpec(BootArgs, RunArgs, JudgeArgs, BackendArgs, SamplingArgs):
    """``j1 consistency``: judge every pair of K responses per prompt in both orders; report IPI, TOV and
    intransitive triples (no labels needed)."""

    data: str | None = field(
        default=None, metadata={"help": "JSONL/JSON/Parquet rows with 'prompt' and 'responses' (a list; or RewardBench "
                                "2's 'chosen' and 'rejected' lists). Default: the shipped set (24 GSM8K prompts x 6 "
                                "responses, j1/assets/data/consistency_gsm8k.jsonl)."})
    responses: int = field(default=4, metadata={"help": "K: judge the first K responses of each prompt "
                                                "(K(K-1) pairwise prompts per prompt; 3 <= K <= 12)."})
    limit: int | None = field(default=None, metadata={"help": "Only the first N prompts (file order)."})
    sampler_model: str | None = field(
        default=None, metadata={"help": "Sample the K responses from this model instead of reading them from --data "
                                "(then only 'prompt' is read); they are kept in DIR/responses.jsonl."})
    sampler_temperature: float = field(default=1.0, metadata={"help": "Sampling temperature of --sampler-model."})
    sampler_max_new_tokens: int = field(default=256, metadata={"help": "Most tokens per sampled response."})

    def __post_init__(self) -> None:
        from j1.eval.consistency import MAX_K

        self._setup_judge()
        self._judges_as_written("j1 consistency compares each response as written")
        if self.data is None and self.sampler_model is None:
            self.data = str(SHIPPED_SETS)
        require_arity(self.format, (1, 2), "j1 consistency")  # it judges pairs and single responses
        self._check_run("j1 consistency", "prompts")
        self._check_boot()
        if not 3 <= self.responses <= MAX_K:
            raise ValueError(f"--responses {self.responses}: must be in [3, {MAX_K}] (triples need 3; the exact TOV "
                             f"is computed up to {MAX_K})")
        if self.sampler_temperature <= 0:
            raise ValueError(f"--sampler-temperature {self.sampler_temperature}: must be > 0 (K greedy answers are one)")
        if self.sampler_max_new_tokens < 1:
            raise ValueError(f"--sampler-max-new-tokens {self.sampler_max_new_tokens}: must be >= 1")


@dataclass
class CompareSpec:
    """``j1 compare DIR1 DIR2 …``: several finished runs side by side, judges by benchmark."""

    runs: list[str] = field(default_factory=list, metadata={"help": "Run folders (also positional)."})
    out: str | None = field(default=None, metadata={"help": "Also write the table to this .md file."})
    json: bool = field(default=False, metadata={"help": "Print the rows as JSON instead of a table."})

    def __post_init__(self) -> None:
        if not self.runs:
            raise ValueError("j1 compare needs run folders: j1 compare DIR1 DIR2 …")
