"""Specs of ``j1 synth``: math, chat, mismatch, thoughts and mix."""

from __future__ import annotations

from dataclasses import dataclass, field

from j1.backends.spec import BackendArgs, SamplingArgs
from j1.formats.spec import FORMAT_NAMES, check_format


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
class SynthMathSpec(_SynthSourceArgs, BackendArgs, SamplingArgs):
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
class SynthChatSpec(_SynthSourceArgs, BackendArgs, SamplingArgs):
    """``j1 synth chat``: answer x (chosen) and a subtly changed x' (rejected), with noise checks."""

    samples: int = field(
        default=1, metadata={"help": "Answers sampled per prompt, for x and for x': a chat pair is one answer to each, "
                             "so it must be 1."})
    temperature: float = field(default=0.7, metadata={"help": "Temperature for the answers to x and x'."})
    top_p: float = field(default=0.95, metadata={"help": "Nucleus sampling."})
    max_new_tokens: int = field(default=384, metadata={"help": "Most tokens per answer."})
    rewrite_temperature: float = field(default=0.8, metadata={"help": "Temperature for writing x'."})
    rewrite_samples: int = field(
        default=2, metadata={"help": "Candidate rewrites x' per prompt; the first that passes the checks is used."}
    )
    rewrite_max_new_tokens: int = field(default=256, metadata={"help": "Most tokens per rewrite."})
    max_prompt_words: int | None = field(
        default=None,
        metadata={"help": "Skip source prompts of more than this many words (a judge prompt holds the request and "
                  "both answers, and j1 train drops one that does not fit its context); unset = keep all."})
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
    criteria_from_rewrite: bool = field(
        default=False, metadata={"help": "Keep what the rewrite changed as each pair's criteria ('Keep to the request: it "
                                 "asks for \"young children\" (not \"elderly grandparents\")'), for a judge trained "
                                 "with --judge_inputs criteria. It names what separates the answers: a recipe's choice."})

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
        if self.max_prompt_words is not None and self.max_prompt_words < 1:
            raise ValueError(f"--max-prompt-words {self.max_prompt_words}: must be >= 1 (or unset)")
        for name in ("rewrite_samples", "rewrite_max_new_tokens", "chunk_size", "verify_max_new_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} {getattr(self, name)}: must be >= 1")
        if not 0 <= self.rewrite_temperature < float("inf"):
            raise ValueError(f"--rewrite-temperature {self.rewrite_temperature}: must be >= 0 (0 = greedy)")
        if self.rewrite_temperature <= 0 and self.rewrite_samples > 1:
            raise ValueError("--rewrite-samples > 1 needs --rewrite-temperature > 0 (else the rewrites are identical)")
        if self.verify_base_url and not self.verify_with:
            raise ValueError("--verify-base-url needs --verify-with (the served judge model's name)")


@dataclass
class SynthMismatchSpec:
    """``j1 synth mismatch``: a question's gold answer (chosen) vs another question's (rejected); no model."""

    source: str | None = field(
        default=None, metadata={"help": "Questions with gold answers: a local .jsonl/.json/.parquet file or a Hugging "
                                "Face dataset id (id:config, e.g. openai/gsm8k:main); GSM8K, MATH and Alpaca fields are detected (an Alpaca "
                                "input is appended to its instruction)."})
    out: str | None = field(default=None, metadata={"help": "Pair file (.jsonl) to write; OUT.run.json beside it."})
    pairs: int = field(default=500, metadata={"help": "Pairs to write, one per question."})
    max_words: int = field(
        default=30, metadata={"help": "Keep questions whose question and answer have at most this many words "
                              "(short judge prompts for CPU budgets)."})
    seed: int = field(default=0, metadata={"help": "Seed of the question draw and of the other question's answer."})
    prompt_field: str | None = field(default=None, metadata={"help": "Row field holding the question (default: detected)."})
    answer_field: str | None = field(default=None, metadata={"help": "Row field holding the gold answer (default: detected)."})
    split: str = field(default="train", metadata={"help": "Split of a Hugging Face dataset source."})
    kind: str = field(
        default="math-mismatch", metadata={"help": "The pairs' kind, as j1 synth mix counts and splits them "
                                           "(chat-mismatch for instruction data)."})
    boxed_share: float = field(
        default=0.0, metadata={"help": "Share of the questions (seeded by id) whose GSM8K final line is written as "
                               "MATH writes it, 'The answer is $\\boxed{72}$.', so a judge learns both forms."})

    def __post_init__(self) -> None:
        if not self.source:
            raise ValueError("--source is required: a local file or a Hugging Face dataset id (openai/gsm8k:main)")
        if not self.kind.strip():
            raise ValueError("--kind: must not be empty")
        _check_out(self.out)
        if self.pairs < 2:
            raise ValueError(f"--pairs {self.pairs}: a mismatch pair needs another question's answer; use >= 2")
        if self.max_words < 1:
            raise ValueError(f"--max_words {self.max_words}: must be >= 1")
        if not 0.0 <= self.boxed_share <= 1.0:
            raise ValueError(f"--boxed_share {self.boxed_share}: must be in [0, 1]")


@dataclass
class MixSpec:
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
    exclude: list[str] = field(
        default_factory=list,
        metadata={"help": "Pair files, or another mix's train/held-out rows, to keep out (evaluation sets): an input pair is dropped before the draw when "
                  "its prompt or one of its responses is a prompt or response there (whitespace-normalised)."},
    )

    def __post_init__(self) -> None:
        if not self.inputs:
            raise ValueError("--inputs is required: one or more PATH[:N] pair files")
        if not self.out_dir:
            raise ValueError("--out-dir is required: where train.jsonl and heldout.jsonl go")
        if not 0 <= self.heldout_fraction < 1:
            raise ValueError(f"--heldout-fraction {self.heldout_fraction}: must be in [0, 1)")


@dataclass
class ThoughtsSpec:
    """``j1 synth thoughts``: a pair file with a thought per order beside each pair (``j1.data.rationales``), by
    construction or, with ``--teacher``, written by a served model and checked against the construction."""

    pairs: str | None = field(
        default=None, metadata={"help": "Pair file to add thoughts to (.jsonl/.json/.parquet; any form j1 reads)."})
    out: str | None = field(default=None, metadata={"help": "Pair file (.jsonl) to write; OUT.run.json beside it."})
    reference_share: float = field(
        default=1.0, metadata={"help": "Share of pairs that keep their reference (seeded by pair id); the others lose "
                               "it and think without one, so one judge learns both."})
    seed: int = field(default=0, metadata={"help": "Seed of which pairs keep their reference."})
    teacher: str | None = field(
        default=None, metadata={"help": "OpenAI-compatible base URL (vLLM, llama.cpp) of a model that writes the thoughts "
                                "instead; a thought whose verdict disagrees with the construction is dropped and counted."})
    teacher_model: str | None = field(default=None, metadata={"help": "The teacher's model name (with --teacher)."})
    teacher_key_env: str = field(
        default="OPENAI_API_KEY", metadata={"help": "Environment variable holding the teacher's API key, if any."})
    teacher_max_tokens: int = field(default=160, metadata={"help": "Token budget of a teacher's thought and verdict."})

    def __post_init__(self) -> None:
        if not self.pairs:
            raise ValueError("--pairs is required: the pair file to add thoughts to")
        _check_out(self.out)
        if not 0.0 <= self.reference_share <= 1.0:
            raise ValueError(f"--reference_share {self.reference_share}: must be in [0, 1]")
        if self.teacher and not self.teacher_model:
            raise ValueError("--teacher needs --teacher_model (the served model's name)")
        if self.teacher_max_tokens < 1:
            raise ValueError(f"--teacher_max_tokens {self.teacher_max_tokens}: must be >= 1")
