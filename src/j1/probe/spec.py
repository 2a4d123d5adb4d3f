"""Spec of ``j1 probe``: a pav judge's verdict log-odds in both orders, or a pos judge's expected
scores (see :mod:`j1.probe.runner`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from j1.formats.spec import TEMPLATE_CHOICES, check_template
from j1.judging.judges import DEFAULT_JUDGE
from j1.judging.settings import JudgeSettings

_FROM_MANIFEST = " Default: the judge's manifest (judge.json), else {}."


@dataclass
class ProbeSpec:
    """``j1 probe``: a judge's preference read from its logits, no sampling (see j1.probe.runner). A pav judge:
    its verdict log-odds in both orders after a fixed thought and ``<answer>[[`` (content margin,
    content accuracy, position bias). A pos judge: each response's expected score after a fixed
    thought and ``<score>`` (content margin in score points, content accuracy, mean score)."""

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
    format: str | None = field(
        default=None, metadata={"help": "The judge's format: pav (the verdict's log-odds, each pair in both orders) "
                                "or pos (the expected 0-9 score of each response shown alone)."
                                + _FROM_MANIFEST.format("pav")})
    template: str | None = field(
        default=None, metadata={"help": f"Judge prompt wording: {TEMPLATE_CHOICES}." + _FROM_MANIFEST.format("full")})
    thought: str | None = field(
        default=None, metadata={"help": "The fixed thought before the verdict (pav) or the score (pos). Default: "
                                "the one in the judge's manifest prefill, else the first generic thought of j1 "
                                "warmup (j1.train.warmup.THOUGHTS, POINT_THOUGHTS for pos), the one a warmed-up "
                                "judge writes."})
    quote_words: int = field(
        default=0, metadata={"help": "N > 0: the thought quotes the first N words of the request and of each "
                             "response as shown, in place of --thought."})
    use_reference: bool = field(
        default=False, metadata={"help": "Show each pair's own criteria and reference answer (pair-file fields) to the "
                                 "judge, as j1 eval --use_reference does."})
    limit: int | None = field(default=None, metadata={"help": "Probe only the first K pairs (file order)."})
    batch_size: int = field(default=8, metadata={"help": "Judge prompts per forward pass."})
    out: str | None = field(
        default=None, metadata={"help": "Also write the summary and every pair's log-odds (pos: expected scores) "
                                "to this .json file."})
    progress: bool = field(default=True, metadata={"help": "Show a progress bar."})

    def __post_init__(self) -> None:
        from j1.probe.texts import PROBE_FORMATS, thought_of_prefill

        if self.model is None:
            self.model = DEFAULT_JUDGE
        # resolved as every judging command resolves its judge; the probe then loads the model itself (its logits)
        settings, self.manifest = JudgeSettings(model=self.model, format=self.format, template=self.template).resolved()
        self.format, self.template = settings.format, settings.template
        if self.format not in PROBE_FORMATS:
            raise ValueError(f"--format {self.format!r}: j1 probe reads {' or '.join(PROBE_FORMATS)} judges; pass "
                             "--format pav to read a pairwise judge's verdict letter (it must write [[A]] or [[B]])")
        if self.thought is None and not self.quote_words and self.manifest is not None:
            self.thought = thought_of_prefill(self.manifest.assistant_prefill, self.format)
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
