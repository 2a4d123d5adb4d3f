"""Configs of the commands that ask a judge: ``j1 judge``, ``j1 eval``, ``j1 score``, ``j1 probe``."""

from __future__ import annotations

from dataclasses import dataclass, field

from j1.cli.configs.common import (
    FORMAT_NAMES,
    PREFILL_HELP,
    TEMPLATE_CHOICES,
    BackendArgs,
    SamplingArgs,
    check_format,
    check_template,
)
from j1.formats import FORMATS
from j1.judges import DEFAULT_JUDGE, PLAIN_DEFAULTS, apply_manifest

_FROM_MANIFEST = " Default: the judge's manifest (judge.json), else {}."


@dataclass
class JudgeArgs:
    """The judge and how it is asked; unset values come from the judge's manifest (``j1.judges``)."""

    model: str | None = field(
        default=None,
        metadata={"help": f"The judge: {DEFAULT_JUDGE} (shipped, the default), a folder j1 train or j1 warmup wrote "
                  "(its judge.json sets the format, wording, prefill and lengths), smollm2-135m (the untrained base), "
                  "an HF id; with --base-url, the served model name."})
    format: str | None = field(
        default=None, metadata={"help": f"Judge format: {', '.join(FORMAT_NAMES)}." + _FROM_MANIFEST.format("pav")})
    template: str | None = field(
        default=None, metadata={"help": f"Judge prompt wording: {TEMPLATE_CHOICES}." + _FROM_MANIFEST.format("full")})
    assistant_prefill: str | None = field(default=None, metadata={"help": PREFILL_HELP})
    samples: int | None = field(
        default=None, metadata={"help": "Samples per prompt (N); verdicts aggregate by majority."
                                + _FROM_MANIFEST.format("1")})
    temperature: float | None = field(
        default=None, metadata={"help": "0 = greedy (needs --samples 1)." + _FROM_MANIFEST.format("0")})
    max_new_tokens: int | None = field(
        default=None, metadata={"help": "Most tokens per judgment." + _FROM_MANIFEST.format("512")})

    def _apply_judge(self) -> None:
        """The default judge when none is named (locally), then the manifest's settings for unset fields."""
        if self.model is None and not getattr(self, "base_url", None):
            self.model = DEFAULT_JUDGE
        self.manifest = apply_manifest(self, PLAIN_DEFAULTS)

    def _setup_judge(self) -> None:
        """What every judging command does first: the judge and its settings, then their checks."""
        self._apply_judge()
        check_format(self.format)
        check_template(self.template)
        self._check_backend()
        self._check_sampling()


@dataclass
class JudgeConfig(JudgeArgs, BackendArgs, SamplingArgs):
    """``j1 judge``: one prompt and one or two responses."""

    prompt: str | None = field(default=None, metadata={"help": "The user's request."})
    response_a: str | None = field(default=None, metadata={"help": "The first response."})
    response_b: str | None = field(default=None, metadata={"help": "The second response (pairwise formats)."})
    json: bool = field(default=False, metadata={"help": "Print one JSON object instead of text."})

    def __post_init__(self) -> None:
        self._setup_judge()
        if self.prompt is None or self.response_a is None:
            raise ValueError("j1 judge needs --prompt and --response-a")
        for name in ("prompt", "response_a", "response_b"):
            value = getattr(self, name)
            if value is not None and not value.strip():
                raise ValueError(f"--{name} is empty: give the text to judge")
        if FORMATS[self.format].pairwise and self.response_b is None and self.format != "pos":
            raise ValueError(f"--format {self.format} compares two responses: add --response-b")


@dataclass
class EvalConfig(JudgeArgs, BackendArgs, SamplingArgs):
    """``j1 eval``: judge a benchmark in its published schema and score it (see j1.eval)."""

    benchmark: str | None = field(
        default=None, metadata={"help": "judgebench, rmbench, rewardbench, ppe, followbencheval, llmbar, "
                                "mtbench_human, pandalm, autoj, hh_rlhf, generic or rewardbench2."})
    data: str | None = field(
        default=None, metadata={"help": "Local JSONL/JSON/Parquet file, or a Hugging Face dataset id (needs network)."})
    out: str | None = field(default=None, metadata={"help": "Run folder: judgments.jsonl, metrics.json, report.md."})
    limit: int | None = field(default=None, metadata={"help": "Judge only the first K rows (file order)."})
    resume: bool = field(default=False, metadata={"help": "Continue the run in --out, skipping judged prompts."})
    split: str | None = field(
        default=None, metadata={"help": "Benchmark part: JudgeBench 'gpt-4o' (the J1 paper's 350 pairs) or 'claude'."})
    hf_split: str | None = field(
        default=None, metadata={"help": "Hub split when --data is a dataset id (default: the benchmark's own)."})
    ties: str | None = field(
        default=None, metadata={"help": "keep or drop tie-labelled items (default per benchmark: PPE and "
                                "MT-Bench drop, the rest keep)."})
    max_error_rate: float = field(
        default=0.05, metadata={"help": "Fail when more than this share of prompts fail for good (after retries)."})
    n_boot: int = field(default=1000, metadata={"help": "Bootstrap resamples for the 95 percent intervals."})
    progress: bool = field(default=True, metadata={"help": "Show a progress bar."})
    rb2_mode: str = field(
        default="fourway", metadata={"help": "RewardBench 2: fourway (pick the best of four, the official default) or "
                                     "ratings (rate each response); sets the format. Ties is always rated."})
    rb2_rotations: int = field(
        default=1, metadata={"help": "RewardBench 2 fourway: judge each item with the chosen answer in this many "
                             "positions (1-4); reports the first, their mean and right-in-all."})

    def __post_init__(self) -> None:
        from j1.eval.benchmarks import BENCHMARKS

        self._setup_judge()
        self._setup_rewardbench2()
        if self.benchmark not in BENCHMARKS:
            raise ValueError(f"--benchmark {self.benchmark!r}: unknown; choose one of {sorted(BENCHMARKS)}")
        if not self.data:
            raise ValueError("j1 eval needs --data (a local file or a Hugging Face dataset id)")
        if not self.out:
            raise ValueError("j1 eval needs --out DIR (the run folder)")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit {self.limit}: must be >= 1 (or leave it out for all rows)")
        if self.ties not in (None, "keep", "drop"):
            raise ValueError(f"--ties {self.ties!r}: choose keep or drop")
        if not 0 <= self.max_error_rate <= 1:
            raise ValueError(f"--max-error-rate {self.max_error_rate}: must be in [0, 1]")
        if self.n_boot < 1:
            raise ValueError(f"--n-boot {self.n_boot}: must be >= 1")

    def _setup_rewardbench2(self) -> None:
        """RewardBench 2's mode picks the format (fourway or pos); fourway is for RewardBench 2 only."""
        if self.rb2_mode not in ("fourway", "ratings"):
            raise ValueError(f"--rb2-mode {self.rb2_mode!r}: choose fourway or ratings")
        if not 1 <= self.rb2_rotations <= 4:
            raise ValueError(f"--rb2-rotations {self.rb2_rotations}: must be in [1, 4] (four positions)")
        if self.benchmark == "rewardbench2":
            self.format = "fourway" if self.rb2_mode == "fourway" else "pos"
        elif self.format == "fourway":
            raise ValueError(f"--format fourway picks one of four answers: only --benchmark rewardbench2 has them "
                             f"(not {self.benchmark!r})")


@dataclass
class ScoreConfig:
    """``j1 score DIR``: recompute DIR/metrics.json and DIR/report.md from DIR/judgments.jsonl."""

    run_dir: str | None = field(default=None, metadata={"help": "The j1 eval run folder (also positional)."})
    n_boot: int = field(default=1000, metadata={"help": "Bootstrap resamples for the 95 percent intervals."})

    def __post_init__(self) -> None:
        if not self.run_dir:
            raise ValueError("j1 score needs the run folder: j1 score DIR")
        if self.n_boot < 1:
            raise ValueError(f"--n-boot {self.n_boot}: must be >= 1")


@dataclass
class ProbeConfig:
    """``j1 probe``: a pav judge's verdict log-odds in both orders after a fixed thought and
    ``<answer>[[`` (no sampling): content margin, content accuracy and position bias (see j1.probe)."""

    model: str | None = field(
        default=None,
        metadata={"help": f"The judge: {DEFAULT_JUDGE} (shipped, the default), a model folder, a LoRA adapter folder "
                  "(a checkpoint; its base is --base, its manifest's or its adapter_config.json's), smollm2-135m "
                  "(the untrained base) or a Hugging Face id."})
    base: str | None = field(
        default=None, metadata={"help": "Base model of a LoRA adapter --model (default: the one its "
                                "adapter_config.json names); not used when --model is a full model."})
    data: str | None = field(
        default=None, metadata={"help": "Pairs: j1 synth mix rows (e.g. heldout.jsonl) or a chosen/rejected pair file."})
    template: str | None = field(
        default=None, metadata={"help": f"Judge prompt wording: {TEMPLATE_CHOICES}." + _FROM_MANIFEST.format("full")})
    thought: str | None = field(
        default=None, metadata={"help": "The fixed thought before the verdict. Default: the one in the judge's "
                                "manifest prefill, else the first generic thought of j1 warmup "
                                "(j1.train.warmup.THOUGHTS), the one a warmed-up judge writes."})
    quote_words: int = field(
        default=0, metadata={"help": "N > 0: the thought quotes the first N words of the request and of each "
                             "response as shown (j1 warmup --thoughts quote), in place of --thought."})
    limit: int | None = field(default=None, metadata={"help": "Probe only the first K pairs (file order)."})
    batch_size: int = field(default=8, metadata={"help": "Judge prompts per forward pass."})
    out: str | None = field(
        default=None, metadata={"help": "Also write the summary and every pair's log-odds to this .json file."})
    progress: bool = field(default=True, metadata={"help": "Show a progress bar."})

    def __post_init__(self) -> None:
        from j1.probe import thought_of_prefill

        if self.model is None:
            self.model = DEFAULT_JUDGE
        self.manifest = apply_manifest(self, PLAIN_DEFAULTS)
        if self.thought is None and not self.quote_words and self.manifest is not None:
            self.thought = thought_of_prefill(self.manifest.assistant_prefill)
        check_template(self.template)
        if not self.data:
            raise ValueError("j1 probe needs --data (j1 synth mix rows or a chosen/rejected pair file)")
        if self.quote_words < 0:
            raise ValueError(f"--quote_words {self.quote_words}: must be >= 0 (0 = the fixed --thought)")
        if self.quote_words and self.thought is not None:
            raise ValueError(f"--thought and --quote_words {self.quote_words} both set the thought; keep one")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit {self.limit}: must be >= 1 (or leave it out for all pairs)")
        if self.batch_size < 1:
            raise ValueError(f"--batch_size {self.batch_size}: must be >= 1")
        if self.out is not None and not self.out.endswith(".json"):
            raise ValueError(f"--out {self.out!r}: must end in .json")
