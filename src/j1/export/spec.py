"""Spec of ``j1 export judge``: a trained judge as a folder engines and loaders read (``j1.export.judge``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from j1.export.gguf import QTYPES

DTYPES = ("auto", "bfloat16", "float16", "float32")


@dataclass
class ExportJudgeSpec:
    """``j1 export judge``: a trained judge as a new folder that ``--model``/``--judge`` read, PEFT or
    transformers load and vLLM serves, and/or as one GGUF file for llama.cpp (``j1.export.judge``)."""

    model: str | None = field(
        default=None,
        metadata={"help": "The judge to export: a folder j1 train or j1 warmup wrote (its final/ or a "
                  "checkpoint-N/) or a shipped judge; also given as the first argument."},
    )
    out: str | None = field(
        default=None,
        metadata={"help": "The new folder (it must not exist): the adapter (or with --merged the full model), its "
                  "judge.json, run.json and a judge card (README.md); src/j1/assets/judges/NAME ships the judge in "
                  "the package. Optional with --gguf."},
    )
    merged: bool = field(
        default=False,
        metadata={"help": "Fold a LoRA adapter into its base: a full model that plain transformers and vLLM load, "
                  "with its tokenizer, chat template and generation config; else the adapter is copied as it is."},
    )
    base: str | None = field(
        default=None,
        metadata={"help": "The adapter's base: where it is loaded from, and what the exported adapter_config.json "
                  "names (a local folder makes the export load offline with PEFT's AutoPeftModelForCausalLM). "
                  "Default: the judge.json's base, named in adapter_config.json by its hub id where it has one "
                  "(smollm2-135m: HuggingFaceTB/SmolLM2-135M-Instruct)."},
    )
    dtype: str = field(
        default="auto",
        metadata={"help": f"Weights of a --merged export: {', '.join(DTYPES)} (auto: the base's dtype; the embedded "
                  "base's original is bfloat16)."},
    )
    gguf: str | None = field(
        default=None,
        metadata={"help": "Also write the judge, merged, as this GGUF file (llama.cpp, Ollama, LM Studio), its "
                  "judge.json kept in the file's metadata (j1.manifest) so --judge FILE.gguf reads it. Llama-"
                  "architecture judges (SmolLM2, Llama 3)."},
    )
    gguf_type: str = field(
        default="F16", metadata={"help": "GGUF weights: F16 (the judge's weights to half precision: it judges as "
                                 "trained) or Q8_0 (about half the size; 8-bit rounding moves a few close verdicts)."})

    def __post_init__(self) -> None:
        if not self.model or not (self.out or self.gguf):
            raise ValueError("j1 export judge needs the judge and --out DIR or --gguf FILE: "
                             "j1 export judge runs/x/final --out DIR")
        if self.dtype not in DTYPES:
            raise ValueError(f"--dtype {self.dtype!r}: choose one of {', '.join(DTYPES)}")
        if self.gguf_type not in QTYPES:
            raise ValueError(f"--gguf_type {self.gguf_type!r}: choose one of {', '.join(QTYPES)}")
        if self.gguf is not None and not self.gguf.endswith(".gguf"):
            raise ValueError(f"--gguf {self.gguf}: name a .gguf file")
