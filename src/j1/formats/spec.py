"""The judge format and template choices every spec that names them shares: help texts, the template field, checks."""

from __future__ import annotations

from dataclasses import field

from j1.formats import FORMATS, TEMPLATES

FORMAT_NAMES = sorted(FORMATS)
# What each judge template is for, shown in --help beside its name; every template in TEMPLATES is listed.
_TEMPLATE_NOTES = {"compact": "~70 fewer prompt tokens, for small models on CPU",
                   "digest": "compact plus the first words of each part, for tiny judges"}


def _choices(names: list[str]) -> str:
    """'a, b or c'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


TEMPLATE_CHOICES = _choices(list(TEMPLATES))
TEMPLATE_HELP = ("Judge prompt wording: "
                 + _choices([f"{n} ({_TEMPLATE_NOTES[n]})" if n in _TEMPLATE_NOTES else n for n in TEMPLATES])
                 + ". The output grammar is the same; train, warm up and evaluate a judge with the same one.")

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
