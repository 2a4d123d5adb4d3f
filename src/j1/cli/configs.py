"""One config dataclass per command. Fields carry ``metadata={"help": ...}`` so ``--help`` shows
them; ``__post_init__`` checks name the field, its value and the fix. Parsed with TrlParser, so
every command also takes ``--config FILE.yaml`` (YAML keys are field names; CLI flags override)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from j1.formats import FORMATS, TEMPLATES

FORMAT_NAMES = sorted(FORMATS)
TEMPLATE_HELP = ("Judge prompt wording: full, compact (~70 fewer prompt tokens, for small models on CPU) or digest "
                 "(compact plus the first words of each part, for tiny judges). The output grammar is the same; "
                 "train, warm up and evaluate a judge with the same one.")

PREFILL_HELP = ("Text the judge's answer is fixed to start with (a prefill): the model continues it, and the "
                "verdict is read from the prefill plus what it wrote. For example a fixed thought and "
                "'<answer>[[' so that only the verdict is generated. Local models, and OpenAI-compatible servers "
                "that take continue_final_message (vLLM, SGLang). Unset (default) = the model writes it all.")


def template_field():
    return field(default="full", metadata={"help": TEMPLATE_HELP})


def check_template(value: str) -> None:
    if value not in TEMPLATES:
        raise ValueError(f"--template {value!r} is not a judge template; choose one of {sorted(TEMPLATES)}")


def check_format(value: str, field_name: str = "format") -> None:
    if value not in FORMATS:
        raise ValueError(f"--{field_name} {value!r} is not a judge format; choose one of {FORMAT_NAMES}")


@dataclass
class BackendArgs:
    """Where judgments come from; shared by every command that calls a model."""

    model: str | None = field(
        default=None,
        metadata={"help": "HF model id or local folder; with --base-url, the served model name. "
                  "Default: the embedded SmolLM2-135M-Instruct (offline)."},
    )
    base_url: str | None = field(
        default=None, metadata={"help": "OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 (vLLM, SGLang)."}
    )
    api_key_env: str = field(
        default="OPENAI_API_KEY", metadata={"help": "Environment variable holding the server's API key."}
    )
    concurrency: int = field(default=32, metadata={"help": "HTTP: most requests in flight."})
    timeout: float = field(default=120.0, metadata={"help": "HTTP: seconds per request."})
    max_retries: int = field(default=4, metadata={"help": "HTTP: retries of a failed request, with backoff."})
    batch_rows: int = field(default=32, metadata={"help": "Local: most sequences (prompts x samples) per batch."})
    dtype: str = field(default="float32", metadata={"help": "Local: float32 (fastest on CPU), bfloat16, float16."})

    def _check_backend(self) -> None:
        for name in ("concurrency", "batch_rows"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} {getattr(self, name)}: must be >= 1")
        if self.dtype not in {"float32", "bfloat16", "float16"}:
            raise ValueError(f"--dtype {self.dtype!r}: choose float32, bfloat16 or float16")

    def backend_kwargs(self) -> dict:
        if self.base_url:
            return dict(concurrency=self.concurrency, timeout=self.timeout, max_retries=self.max_retries)
        return dict(max_batch_rows=self.batch_rows, dtype=self.dtype)


@dataclass
class SamplingArgs:
    samples: int = field(default=1, metadata={"help": "Samples per prompt (N); verdicts aggregate by majority."})
    temperature: float = field(default=0.0, metadata={"help": "0 = greedy (needs --samples 1)."})
    top_p: float = field(default=1.0, metadata={"help": "Nucleus sampling."})
    max_new_tokens: int = field(default=512, metadata={"help": "Most tokens per judgment."})
    seed: int = field(default=0, metadata={"help": "Seed for sampling (and any random order)."})

    def _check_sampling(self) -> None:
        if self.samples < 1:
            raise ValueError(f"--samples {self.samples}: must be >= 1")
        if self.temperature == 0 and self.samples > 1:
            raise ValueError(
                f"--samples {self.samples} with --temperature 0 would repeat one greedy answer; set --temperature 1.0"
            )
        if self.max_new_tokens < 1:
            raise ValueError(f"--max-new-tokens {self.max_new_tokens}: must be >= 1")

    def sampling_params(self):
        from j1.backends import SamplingParams

        return SamplingParams(
            n=self.samples, temperature=self.temperature, top_p=self.top_p,
            max_new_tokens=self.max_new_tokens, seed=self.seed,
        )


@dataclass
class JudgeConfig(BackendArgs, SamplingArgs):
    """``j1 judge``: one prompt and one or two responses."""

    format: str = field(default="pav", metadata={"help": f"Judge format: {', '.join(FORMAT_NAMES)}."})
    template: str = template_field()
    assistant_prefill: str | None = field(default=None, metadata={"help": PREFILL_HELP})
    prompt: str | None = field(default=None, metadata={"help": "The user's request."})
    response_a: str | None = field(default=None, metadata={"help": "The first response."})
    response_b: str | None = field(default=None, metadata={"help": "The second response (pairwise formats)."})
    json: bool = field(default=False, metadata={"help": "Print one JSON object instead of text."})

    def __post_init__(self) -> None:
        check_format(self.format)
        check_template(self.template)
        self._check_backend()
        self._check_sampling()
        if self.prompt is None or self.response_a is None:
            raise ValueError("j1 judge needs --prompt and --response-a")
        if FORMATS[self.format].pairwise and self.response_b is None and self.format != "pos":
            raise ValueError(f"--format {self.format} compares two responses: add --response-b")


def _check_out(value: str | None, flag: str = "out") -> None:
    if not value:
        raise ValueError(f"--{flag} is required: the pair file to write, e.g. runs/synth/pairs.jsonl")
    if not value.endswith(".jsonl"):
        raise ValueError(f"--{flag} {value!r}: must end in .jsonl (side files are named after it)")


@dataclass
class _SynthSourceArgs:
    """What every ``j1 synth`` generator reads and writes."""

    source: str | None = field(
        default=None,
        metadata={"help": "A local .jsonl/.json/.parquet file, or a Hugging Face dataset id (id:config)."},
    )
    out: str | None = field(
        default=None,
        metadata={"help": "Pair file (.jsonl). Beside it: OUT.dropped.jsonl, OUT.stats.json, OUT.run.json. "
                  "Rerunning over an existing OUT resumes."},
    )
    prompt_field: str | None = field(default=None, metadata={"help": "Row field holding the prompt (default: detected)."})
    split: str = field(default="train", metadata={"help": "Split of a Hugging Face dataset source."})
    limit: int | None = field(default=None, metadata={"help": "Use only the first N prompts of the source."})
    progress: bool = field(default=True, metadata={"help": "Show a progress bar."})
    max_minutes: float | None = field(
        default=None,
        metadata={"help": "Stop taking new work after this many minutes (stats are written; rerun to continue)."},
    )

    def _check_source(self) -> None:
        if not self.source:
            raise ValueError("--source is required: a local file or a Hugging Face dataset id")
        _check_out(self.out)
        if self.max_minutes is not None and self.max_minutes <= 0:
            raise ValueError(f"--max-minutes {self.max_minutes}: must be > 0 (or leave it out for no limit)")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit {self.limit}: must be >= 1 (or leave it out for all prompts)")


@dataclass
class SynthMathConfig(_SynthSourceArgs, BackendArgs, SamplingArgs):
    """``j1 synth math``: N sampled solutions per problem, verified with math-verify; right vs wrong."""

    answer_field: str | None = field(default=None, metadata={"help": "Row field holding the gold answer (default: detected)."})
    samples: int = field(default=4, metadata={"help": "Solutions sampled per problem (N)."})
    temperature: float = field(default=0.8, metadata={"help": "Sampling temperature (> 0: samples must differ)."})
    top_p: float = field(default=0.95, metadata={"help": "Nucleus sampling."})
    max_new_tokens: int = field(default=512, metadata={"help": "Most tokens per solution."})

    def __post_init__(self) -> None:
        self._check_source()
        self._check_backend()
        self._check_sampling()
        if self.samples < 2:
            raise ValueError(f"--samples {self.samples}: a pair needs a right and a wrong sample; use >= 2")


@dataclass
class SynthChatConfig(_SynthSourceArgs, BackendArgs, SamplingArgs):
    """``j1 synth chat``: answer x (chosen) and a subtly changed x' (rejected), with noise checks."""

    temperature: float = field(default=0.7, metadata={"help": "Temperature for the answers to x and x'."})
    top_p: float = field(default=0.95, metadata={"help": "Nucleus sampling."})
    max_new_tokens: int = field(default=384, metadata={"help": "Most tokens per answer."})
    rewrite_temperature: float = field(default=0.8, metadata={"help": "Temperature for writing x'."})
    rewrite_samples: int = field(
        default=2, metadata={"help": "Candidate rewrites x' per prompt; the first that passes the checks is used."}
    )
    rewrite_max_new_tokens: int = field(default=256, metadata={"help": "Most tokens per rewrite."})
    lexical_min: float = field(default=0.1, metadata={"help": "x' vs x word-sequence similarity below this: drift."})
    embedding_min: float = field(default=0.4, metadata={"help": "x' vs x embedding cosine below this: drift."})
    embedding_max: float = field(default=0.97, metadata={"help": "x' vs x embedding cosine at or above this: paraphrase."})
    reword_lexical: float = field(
        default=0.5, metadata={"help": "Reworded paraphrase: lexical below this while embedding >= --reword-embedding."}
    )
    reword_embedding: float = field(default=0.85, metadata={"help": "See --reword-lexical."})
    answer_margin: float = field(
        default=0.0, metadata={"help": "x' whose embedding cosine to the chosen answer is >= its cosine to x plus this "
                               "reads as an answer, not a request: rewrite_answer_like."}
    )
    answer_dup_lexical: float = field(
        default=0.9, metadata={"help": "rejected vs chosen word-sequence similarity at or above this: duplicate."}
    )
    answer_dup_embedding: float = field(
        default=0.985, metadata={"help": "rejected vs chosen embedding cosine at or above this: duplicate."}
    )
    embedder: str | None = field(
        default=None, metadata={"help": "sentence-transformers model folder (default: the bundled all-MiniLM-L6-v2)."}
    )
    verify_with: str | None = field(
        default=None, metadata={"help": "Reference judge model; keep a pair only if it prefers chosen in both orders. "
                                "'embedded' = the embedded SmolLM2."},
    )
    verify_base_url: str | None = field(default=None, metadata={"help": "OpenAI-compatible server for --verify-with."})
    verify_format: str = field(default="pav", metadata={"help": f"Judge format of the reference judge: {', '.join(FORMAT_NAMES)}."})
    verify_max_new_tokens: int = field(default=512, metadata={"help": "Most tokens per reference judgment."})
    chunk_size: int = field(
        default=64, metadata={"help": "Prompts taken through all steps together (results are appended per chunk)."}
    )

    def __post_init__(self) -> None:
        self._check_source()
        self._check_backend()
        self._check_sampling()
        check_format(self.verify_format, "verify-format")
        if self.samples != 1:
            raise ValueError(f"--samples {self.samples}: chat pairs use one answer per prompt; use --samples 1")
        if not 0 <= self.embedding_min < self.embedding_max <= 1:
            raise ValueError(f"--embedding-min {self.embedding_min} / --embedding-max {self.embedding_max}: "
                             "need 0 <= min < max <= 1")
        for name in ("lexical_min", "reword_lexical", "reword_embedding", "answer_dup_lexical", "answer_dup_embedding"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"--{name.replace('_', '-')} {getattr(self, name)}: must be in [0, 1]")
        for name in ("rewrite_samples", "rewrite_max_new_tokens", "chunk_size", "verify_max_new_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} {getattr(self, name)}: must be >= 1")
        if self.rewrite_temperature <= 0 and self.rewrite_samples > 1:
            raise ValueError("--rewrite-samples > 1 needs --rewrite-temperature > 0 (else the rewrites are identical)")
        if self.verify_base_url and not self.verify_with:
            raise ValueError("--verify-base-url needs --verify-with (the served judge model's name)")


@dataclass
class SynthMismatchConfig:
    """``j1 synth mismatch``: a question's gold answer (chosen) vs another question's (rejected); no model."""

    source: str | None = field(
        default=None, metadata={"help": "Questions with gold answers: a local .jsonl/.json/.parquet file or a Hugging "
                                "Face dataset id (id:config, e.g. openai/gsm8k:main); GSM8K and MATH fields are detected."})
    out: str | None = field(default=None, metadata={"help": "Pair file (.jsonl) to write; OUT.run.json beside it."})
    pairs: int = field(default=500, metadata={"help": "Pairs to write, one per question."})
    max_words: int = field(
        default=30, metadata={"help": "Keep questions whose question and answer have at most this many words "
                              "(short judge prompts for CPU budgets)."})
    seed: int = field(default=0, metadata={"help": "Seed of the question draw and of the other question's answer."})
    prompt_field: str | None = field(default=None, metadata={"help": "Row field holding the question (default: detected)."})
    answer_field: str | None = field(default=None, metadata={"help": "Row field holding the gold answer (default: detected)."})
    split: str = field(default="train", metadata={"help": "Split of a Hugging Face dataset source."})

    def __post_init__(self) -> None:
        if not self.source:
            raise ValueError("--source is required: a local file or a Hugging Face dataset id (openai/gsm8k:main)")
        _check_out(self.out)
        if self.pairs < 2:
            raise ValueError(f"--pairs {self.pairs}: a mismatch pair needs another question's answer; use >= 2")
        if self.max_words < 1:
            raise ValueError(f"--max_words {self.max_words}: must be >= 1")


@dataclass
class MixConfig:
    """``j1 synth mix``: pair files in given amounts -> train/held-out rows, both orders of every pair."""

    inputs: list[str] = field(
        default_factory=list,
        metadata={"help": "PATH[:N] pair files; N = pairs drawn from that file (seeded), omitted or 'all' = every pair. "
                  "E.g. chat.jsonl:17000 math.jsonl:5000."},
    )
    out_dir: str | None = field(
        default=None, metadata={"help": "Writes train.jsonl, heldout.jsonl, mix.stats.json, mix.run.json here."}
    )
    heldout_fraction: float = field(
        default=0.05, metadata={"help": "Share of distinct prompts held out (split by prompt, seeded)."}
    )
    seed: int = field(default=0, metadata={"help": "Seed of the draw, the split and the A/B placement."})

    def __post_init__(self) -> None:
        if not self.inputs:
            raise ValueError("--inputs is required: one or more PATH[:N] pair files")
        if not self.out_dir:
            raise ValueError("--out-dir is required: where train.jsonl and heldout.jsonl go")
        if not 0 <= self.heldout_fraction < 1:
            raise ValueError(f"--heldout-fraction {self.heldout_fraction}: must be in [0, 1)")


# --- j1 reward / j1 train / j1 warmup ----------------------------------------------------------
# The choices live with the trainer's options object (a light module: no torch import).
from j1.train.options import CONSISTENCY_MODES, FORMULATIONS, J1Options  # noqa: E402
from j1.train.options import check_choice as _check_choice  # noqa: E402


@dataclass
class RewardConfig:
    """``j1 reward``: score judge rollouts offline with the J1 rewards."""

    format: str = field(default="pav", metadata={"help": f"Judge format of the completions: {', '.join(FORMAT_NAMES)}."})
    consistency: str = field(
        default="expected",
        metadata={"help": "expected: correctness x mean correctness of the other order's rollouts; "
                  "index: rollout k of each order paired, 1 if both right (pos: compare with the mean "
                  "or the k-th score of the other response)."},
    )
    input: str | None = field(
        default=None,
        metadata={"help": 'Rollouts JSONL: {"pair_id", "order": "AB"|"BA" (pos: "A"|"B"), "label": "A"|"B", '
                  '"completion"} per line.'},
    )
    output: str | None = field(default=None, metadata={"help": 'Output JSONL: the input rows plus "rewards".'})
    correctness_weight: float = field(default=1.0, metadata={"help": "Weight of correctness in total."})
    consistency_weight: float | None = field(
        default=None, metadata={"help": "Weight of consistency in total (default 1 for pav/pavs, 0 for pas)."}
    )

    def __post_init__(self) -> None:
        check_format(self.format)
        _check_choice("consistency", self.consistency, CONSISTENCY_MODES)
        if not self.input or not self.output:
            raise ValueError("j1 reward needs --input ROLLOUTS.jsonl and --output OUT.jsonl")


@dataclass
class TrainConfig:
    """``j1 train``: the J1 section. GRPOConfig (TRL) and ModelConfig keys are parsed beside it, so
    every TRL option works in the YAML or as a flag (``--learning_rate 1e-6``, ``--use_peft``)."""

    # Fields that `--help` leaves to `--help-all`: diagnostics, not recipe choices.
    ADVANCED: ClassVar[frozenset[str]] = frozenset({"reward_trace"})

    formulation: str = field(
        default="pav", metadata={"help": f"Judge formulation: {', '.join(FORMULATIONS)} (multitask = pas + pos)."}
    )
    train_file: str | None = field(
        default=None,
        metadata={"help": "Training pairs: `j1 synth mix` rows (both orders), or a prompt/chosen/rejected pair file."},
    )
    template: str = template_field()
    assistant_prefill: str | None = field(
        default=None,
        metadata={"help": "Fixed start of every answer (e.g. a thought and '<answer>[['): only the rest is sampled and "
                  "trained; the rewards read prefill + continuation."},
    )
    consistency: str = field(
        default="expected",
        metadata={"help": "Consistency reward: expected (x mean correctness of the other order) or index (rollout k "
                  "with rollout k)."})
    correctness_weight: float = field(default=1.0, metadata={"help": "Weight of the correctness reward."})
    consistency_weight: float | None = field(
        default=None, metadata={"help": "Weight of the consistency reward (default 1 for pav/pavs, 0 otherwise)."}
    )
    format_weight: float = field(
        default=0.0, metadata={"help": "Weight of a format reward (the paper's ablation; 0 = off)."}
    )
    advantage_groups: str = field(
        default="pair",
        metadata={"help": "Rollouts that share a GRPO baseline: prompt (TRL's own), pair (both orders' 2G "
                  "rollouts) or couple (rollout k of AB with rollout k of BA)."},
    )
    loss_span: str = field(
        default="all",
        metadata={"help": "Completion tokens the policy loss trains: all, to_answer (stop at the answer's "
                  "closing tag) or answer (the answer span alone; the thought still conditions it)."},
    )
    invalid_advantage: float | None = field(
        default=None,
        metadata={"help": "pair/couple groups: a rollout with no parseable verdict leaves the baseline and gets "
                  "this advantage (e.g. -1). Unset = scored 0 like a wrong verdict (the paper)."},
    )
    position_balance: float = field(
        default=0.0,
        metadata={"help": "Strength of a restoring force on the judge's position preference (leave-one-out batch "
                  "imbalance); 0 = off."},
    )
    stop_advantage: float | None = field(
        default=None,
        metadata={"help": "loss_span to_answer/answer: advantage -X for a token written after the answer in place "
                  "of the stop. Unset = off."},
    )
    max_pairs: int | None = field(default=None, metadata={"help": "Use at most this many training pairs."})
    max_prompt_tokens: int | None = field(
        default=None, metadata={"help": "Drop pairs whose judge prompt exceeds this many tokens (CPU budgets)."}
    )
    share_prompt_prefix: bool = field(
        default=True,
        metadata={"help": "Encode each judge prompt once for its G rollouts (generation and log-prob passes); "
                  "TRL's numbers at 1/G of the prompt cost. false = TRL's own passes."},
    )
    pair_seed: int = field(
        default=0, metadata={"help": "Seed of the side the chosen response is placed on (chosen/rejected input)."}
    )
    lora_last_layers: int | None = field(
        default=None,
        metadata={"help": "With --use_peft: LoRA on the last N decoder blocks only (backward stops there: a "
                  "cheaper CPU step)."},
    )
    max_minutes: float | None = field(
        default=None,
        metadata={"help": "Stop and save after this many minutes (continue with --resume_from_checkpoint latest)."},
    )
    reward_trace: bool = field(
        default=False,
        metadata={"help": "Write the (pair_id, order) rows of every reward call per process to "
                  "OUTPUT_DIR/reward_trace-RANK.jsonl (shows both orders are rewarded together)."},
    )

    def __post_init__(self) -> None:
        _check_choice("formulation", self.formulation, FORMULATIONS)
        _check_choice("consistency", self.consistency, CONSISTENCY_MODES)
        check_template(self.template)
        if not self.train_file:
            raise ValueError("j1 train needs --train_file (pairs from `j1 synth mix`)")
        for name in ("max_pairs", "max_prompt_tokens", "lora_last_layers"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name} {value}: must be >= 1 (or unset)")
        if self.formulation == "pos" and self.consistency_weight:
            raise ValueError("--consistency_weight: pos has no consistency reward; leave it unset")
        self.options()  # the named choices, checked here once

    def options(self) -> J1Options:
        """The frozen options object the trainer takes."""
        return J1Options(
            formulation=self.formulation, advantage_groups=self.advantage_groups, loss_span=self.loss_span,
            invalid_advantage=self.invalid_advantage, position_balance=self.position_balance,
            stop_advantage=self.stop_advantage, share_prompt_prefix=self.share_prompt_prefix,
        )


@dataclass
class WarmupConfig:
    """``j1 warmup``: a short label-free SFT (TRL SFTTrainer; every SFTConfig key works) that teaches
    the output format with random verdicts/scores and short thoughts, and reports the valid-output
    rate before and after on held-out prompts."""

    formulation: str = field(default="pav", metadata={"help": f"Format to teach: {', '.join(FORMULATIONS)}."})
    template: str = template_field()
    train_file: str | None = field(default=None, metadata={"help": "Pairs to build prompts from (same as j1 train)."})
    max_pairs: int | None = field(default=None, metadata={"help": "Use at most this many pairs."})
    max_prompt_tokens: int | None = field(default=None, metadata={"help": "Drop pairs with longer judge prompts."})
    heldout_pairs: int = field(
        default=16, metadata={"help": "Pairs kept out of the SFT data to measure the valid-output rate on."}
    )
    check_samples: int = field(default=2, metadata={"help": "Samples per held-out prompt for the valid rate."})
    check_temperature: float = field(default=1.0, metadata={"help": "Sampling temperature for the valid rate."})
    check_max_new_tokens: int = field(default=64, metadata={"help": "Token budget per check sample."})
    warmup_seed: int = field(default=0, metadata={"help": "Seed of the random verdicts, scores and thoughts."})
    pair_seed: int = field(default=0, metadata={"help": "Seed for which side the chosen response is shown on."})
    thoughts: str = field(
        default="generic", metadata={"help": "generic (a content-free sentence) or quote (the first --quote_words "
                                     "words of the request and of each response, as shown)."})
    quote_words: int = field(default=8, metadata={"help": "Words quoted from each part with --thoughts quote."})

    def __post_init__(self) -> None:
        _check_choice("formulation", self.formulation, FORMULATIONS)
        from j1.train.warmup import THOUGHT_KINDS  # light: formats only

        _check_choice("thoughts", self.thoughts, THOUGHT_KINDS)
        check_template(self.template)
        if not self.train_file:
            raise ValueError("j1 warmup needs --train_file (pairs from `j1 synth mix`)")
        if self.quote_words < 1:
            raise ValueError(f"--quote_words {self.quote_words}: must be >= 1")
        if self.heldout_pairs < 0 or self.check_samples < 1 or self.check_max_new_tokens < 1:
            raise ValueError("--heldout_pairs must be >= 0, --check_samples and --check_max_new_tokens >= 1")


@dataclass
class EvalConfig(BackendArgs, SamplingArgs):
    """``j1 eval``: judge a benchmark in its published schema and score it (see j1.eval)."""

    benchmark: str | None = field(
        default=None, metadata={"help": "judgebench, rmbench, rewardbench, ppe, followbencheval, llmbar, "
                                "mtbench_human, pandalm, autoj, hh_rlhf or generic."})
    data: str | None = field(
        default=None, metadata={"help": "Local JSONL/JSON/Parquet file, or a Hugging Face dataset id (needs network)."})
    out: str | None = field(default=None, metadata={"help": "Run folder: judgments.jsonl, metrics.json, report.md."})
    format: str = field(default="pav", metadata={"help": f"Judge format: {', '.join(FORMAT_NAMES)}."})
    template: str = template_field()
    assistant_prefill: str | None = field(default=None, metadata={"help": PREFILL_HELP})
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

    def __post_init__(self) -> None:
        from j1.eval.benchmarks import BENCHMARKS

        check_format(self.format)
        check_template(self.template)
        self._check_backend()
        self._check_sampling()
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


@dataclass
class ScoreConfig:
    """``j1 score DIR``: recompute DIR/metrics.json and DIR/report.md from DIR/judgments.jsonl."""

    run_dir: str | None = field(default=None, metadata={"help": "The j1 eval run folder (also positional)."})
    n_boot: int = field(default=1000, metadata={"help": "Bootstrap resamples for the 95 percent intervals."})

    def __post_init__(self) -> None:
        if not self.run_dir:
            raise ValueError("j1 score needs the run folder: j1 score DIR")


@dataclass
class ProbeConfig:
    """``j1 probe``: a pav judge's verdict log-odds in both orders after a fixed thought and
    ``<answer>[[`` (no sampling): content margin, content accuracy and position bias (see j1.probe)."""

    model: str | None = field(
        default=None,
        metadata={"help": "The judge: a model folder, a LoRA adapter folder (a checkpoint; its base is --base or "
                  "the adapter's base_model_name_or_path), smollm2-135m (the embedded model, default) or a "
                  "Hugging Face id."})
    base: str | None = field(
        default=None, metadata={"help": "Base model of a LoRA adapter --model (default: the one its "
                                "adapter_config.json names); not used when --model is a full model."})
    data: str | None = field(
        default=None, metadata={"help": "Pairs: j1 synth mix rows (e.g. heldout.jsonl) or a chosen/rejected pair file."})
    template: str = template_field()
    thought: str | None = field(
        default=None, metadata={"help": "The fixed thought before the verdict. Default: the first generic thought "
                                "of j1 warmup (j1.train.warmup.THOUGHTS), the one a warmed-up judge writes."})
    quote_words: int = field(
        default=0, metadata={"help": "N > 0: the thought quotes the first N words of the request and of each "
                             "response as shown (j1 warmup --thoughts quote), in place of --thought."})
    limit: int | None = field(default=None, metadata={"help": "Probe only the first K pairs (file order)."})
    batch_size: int = field(default=8, metadata={"help": "Judge prompts per forward pass."})
    out: str | None = field(
        default=None, metadata={"help": "Also write the summary and every pair's log-odds to this .json file."})
    progress: bool = field(default=True, metadata={"help": "Show a progress bar."})

    def __post_init__(self) -> None:
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
