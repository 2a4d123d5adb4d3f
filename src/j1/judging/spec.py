"""How a judge is named and asked (``JudgeArgs``, shared by every judging spec) and the spec of ``j1 judge``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from j1.backends.spec import BackendArgs, SamplingArgs
from j1.formats import require_arity
from j1.formats.base import Guidance, request_text
from j1.formats.spec import FORMAT_NAMES, PREFILL_HELP, TEMPLATE_CHOICES, check_format, check_template
from j1.formats.templates import rubric_text
from j1.judging.judges import (
    DEFAULT_JUDGE,
    PLAIN_DEFAULTS,
    Manifest,
    judge_folder,
    judge_manifest,
    manifest_settings,
    named_judge,
)
from j1.judging.limits import TRUNCATE
from j1.judging.settings import JudgeSettings

_FROM_MANIFEST = " Default: the judge's manifest (judge.json), else {}."


@dataclass
class JudgeArgs:
    """The judge and how it is asked; unset values come from the judge's manifest (``j1.judging.judges``)."""

    model: str | None = field(
        default=None,
        metadata={"help": f"The judge: {DEFAULT_JUDGE} (shipped, the default), a folder j1 train or j1 warmup wrote "
                  "(its judge.json sets the format, wording, prefill and lengths), smollm2-135m (the untrained base), "
                  "an HF id; with --base-url, the served model name."})
    judge: str | None = field(
        default=None,
        metadata={"help": "A judge j1 made, served by an engine: its folder, judge.json, shipped name or the GGUF "
                  "j1 export judge --gguf wrote. With --base-url its manifest sets the format, wording, prefill and "
                  "budgets, and the engine is asked for the judge's name (checked against its /v1/models; --model "
                  "overrides the name); its prompt is rendered with its own chat template when its tokenizer is on "
                  "this machine (--endpoint). Without --base-url, the same as --model."})
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
    max_context: int | None = field(
        default=None, metadata={"help": "The judge's context in tokens (prompt plus answer). A judge prompt that "
                                "cannot fit with --max_new_tokens is refused before any model work (j1 serve: 413 "
                                "context_length_exceeded; j1 eval/attack: counted invalid with the reason). Default: "
                                "the model's max_position_embeddings (local models)."})
    truncate: str = field(
        default="error", metadata={"help": "A prompt over the context: error (refuse it), left (shorten the "
                                   "responses from their start, keeping their ends) or middle (keep both ends)."})

    def _apply_judge(self) -> None:
        """The judge (``--judge``, else ``--model``, else the default locally), then its manifest's settings for
        unset fields."""
        served = bool(getattr(self, "base_url", None))
        if self.judge is not None:
            named = named_judge(self.judge)
            if served:
                self.model = self.model or named.manifest.name
                if not self.model:
                    raise ValueError(f"--judge {self.judge}: its manifest names no model; pass --model with the "
                                     "engine's served name")
            elif named.gguf is not None:
                raise ValueError(f"--judge {self.judge}: a GGUF judge runs in an engine (llama.cpp); serve it and "
                                 "pass --base-url")
            elif self.model is not None and self.model != self.judge:
                raise ValueError("--model and --judge both name the judge: pass one (--model with --judge names "
                                 "the engine's model, with --base-url)")
            else:
                self.model = self.judge if judge_folder(self.judge) is not None else str(named.folder)
        elif self.model is None and not served:
            self.model = DEFAULT_JUDGE
        self.manifest = judge_manifest(self.model, self.judge if served else None, served)
        given = {key: getattr(self, key) for key in Manifest.DEFAULTS}
        for key, value in manifest_settings(self.manifest, given, PLAIN_DEFAULTS).items():
            setattr(self, key, value)

    def judge_settings(self, api_key: str | None = None) -> JudgeSettings:
        """The judge these flags name, as ``j1.load_judge`` takes it (``api_key``: the engine's, which only the CLI
        reads from the environment)."""
        served = bool(self.base_url)
        return JudgeSettings(
            model=self.model, base_url=self.base_url, judge=self.judge if served else None, api_key=api_key,
            format=self.format, template=self.template, assistant_prefill=self.assistant_prefill,
            max_new_tokens=self.max_new_tokens, temperature=self.temperature, samples=self.samples, top_p=self.top_p,
            seed=self.seed, batch_rows=self.batch_rows, dtype=self.dtype, concurrency=self.concurrency,
            timeout=self.timeout, max_retries=self.max_retries, endpoint=self.endpoint, max_context=self.max_context)

    def open_backend(self, api_key: str | None = None):
        """The judge's backend (``JudgeSettings.open_backend``): a served judge keeps its manifest."""
        return self.judge_settings(api_key).open_backend()

    def _judges_as_written(self, why: str) -> None:
        """For a command that must judge its texts whole (``why``): --truncate stays ``error``."""
        if self.truncate != "error":
            raise ValueError(f"--truncate {self.truncate}: {why}; a prompt over the context counts invalid. "
                             "Leave it at error")

    def _setup_judge(self) -> None:
        """What every judging command does first: the judge and its settings, then their checks."""
        self._apply_judge()
        check_format(self.format)
        check_template(self.template)
        self._check_backend()
        self._check_sampling()
        if self.max_context is not None and self.max_context <= self.max_new_tokens:
            raise ValueError(f"--max_context {self.max_context}: must be over --max_new_tokens {self.max_new_tokens}, "
                             "to leave room for the prompt")
        if self.truncate not in TRUNCATE:
            raise ValueError(f"--truncate {self.truncate!r}: choose one of {', '.join(TRUNCATE)}")


@dataclass
class CriteriaArgs:
    """Criteria every judgment of a command reads (``j1 judge``, ``j1 label``): text, or a file's."""

    criteria: str | None = field(default=None, metadata={
        "help": "What to judge by, in plain words (e.g. 'security of the code'); the judge reads it in a fence of its "
                "own, as data that cannot set the verdict."})
    criteria_file: str | None = field(default=None, metadata={
        "help": "Instead of --criteria: a text file, or a rubric (.yaml/.json: 'criteria' and 'levels', each a "
                "score 0-10 with an optional name and a description, what the score formats pas, pavs, pos read)."})

    def _setup_criteria(self) -> None:
        """``--criteria_file`` read into ``criteria``; one of the two, and not empty."""
        if self.criteria_file is not None:
            if self.criteria is not None:
                raise ValueError("--criteria and --criteria_file both give the criteria: pass one")
            self.criteria = read_criteria_file(self.criteria_file)
        if self.criteria is not None and not self.criteria.strip():
            raise ValueError("--criteria is empty: give the text, or leave the flag out")


@dataclass
class JudgeSpec(JudgeArgs, CriteriaArgs, BackendArgs, SamplingArgs):
    """``j1 judge``: one prompt and one or two responses."""

    prompt: str | None = field(default=None, metadata={"help": "The user's request."})
    messages: str | None = field(default=None, metadata={
        "help": "Instead of --prompt: a JSON file holding the conversation the responses answer, a list of "
                "{role, content} messages; the judge reads its turns."})
    response_a: str | None = field(default=None, metadata={"help": "The first response."})
    response_b: str | None = field(default=None, metadata={"help": "The second response (pairwise formats)."})
    reference: str | None = field(default=None, metadata={
        "help": "A gold answer to the request: the judge compares the responses with it (in a fence of its own)."})
    show_prompt: bool = field(default=False, metadata={
        "help": "Print the judge prompts as rendered (each order, or each response alone: system and user messages "
                "and the prefill) and stop; no model is loaded."})
    json: bool = field(default=False, metadata={"help": "Print one JSON object instead of text."})
    min_margin: float = field(
        default=1.0, metadata={"help": "A local pav judge's verdict is marked low-confidence when it is no pick of A or "
                               "B, or its log-odds margin for the pick (as j1 probe reads it, averaged over both "
                               "orders) is below this."})

    def __post_init__(self) -> None:
        self._setup_judge()
        if self.min_margin < 0:
            raise ValueError(f"--min_margin {self.min_margin}: must be >= 0")
        if self.messages is not None:
            if self.prompt is not None:
                raise ValueError("--prompt and --messages both give the request: pass one")
            self.prompt = conversation_prompt(self.messages)
        if self.prompt is None or self.response_a is None:
            raise ValueError("j1 judge needs --prompt (or --messages) and --response-a")
        for name in ("prompt", "response_a", "response_b"):
            value = getattr(self, name)
            if value is not None and not value.strip():
                raise ValueError(f"--{name} is empty: give the text to judge")
        self._setup_criteria()
        if self.reference is not None and not self.reference.strip():
            raise ValueError("--reference is empty: give the text, or leave the flag out")
        if require_arity(self.format, (1, 2), "j1 judge").pairwise and self.response_b is None:
            raise ValueError(f"--format {self.format} compares two responses: add --response-b")

    @property
    def guidance(self) -> Guidance:
        """What the judge reads besides the request and the responses."""
        return Guidance(self.criteria, self.reference)


def read_criteria_file(path: str) -> str:
    """The criteria a ``--criteria_file`` holds: a rubric (``.yaml``, ``.yml``, ``.json``: an object with
    ``criteria`` and ``levels``) written out by ``j1.formats.templates.rubric_text``, else the file's text.

    Raises:
        ValueError: an unreadable or empty file, a rubric that is not valid YAML/JSON or is malformed, naming the
            file (and the field).
    """
    text = Path(path).read_text(encoding="utf-8")  # OSError names the file
    if Path(path).suffix.lower() not in (".yaml", ".yml", ".json"):
        if not text.strip():
            raise ValueError(f"--criteria_file {path}: the file is empty")
        return text.strip()
    import yaml

    try:
        data = json.loads(text) if path.lower().endswith(".json") else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--criteria_file {path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ValueError(f"--criteria_file {path}{f':{mark.line + 1}' if mark else ''}: not valid YAML") from None
    return rubric_text(data, f"--criteria_file {path}")


def conversation_prompt(path: str) -> str:
    """The request in a ``--messages`` file (a JSON list of ``{role, content}`` messages) as the judge
    reads it (``j1.formats.base.request_text``: the conversation's turns).

    Raises:
        ValueError: not JSON, or not a list of chat messages, naming the file.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"--messages {path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, list):
        raise ValueError(f"--messages {path}: expected a JSON list of {{role, content}} messages, "
                         f"got {type(data).__name__}")
    try:
        return request_text(data)
    except ValueError as exc:
        raise ValueError(f"--messages {path}: {exc}") from None
