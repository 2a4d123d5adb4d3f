"""The probe's forced answer start, and which judge formats it reads.

A leaf of the probe package: the spec checks ``--format`` and reads a judge's prefill with it, and the
runner builds its prompts with it, so the spec never imports the runner.
"""

from __future__ import annotations

from j1.formats import get_format

# The judge formats j1 probe reads (j1.probe.runner.PROBES holds each one's reading).
PROBE_FORMATS = ("pav", "pos")


def answer_head(thought: str, fmt: str = "pav") -> str:
    """The start of an answer in format ``fmt`` up to its first value (pav: the verdict letter, pos:
    the score), with ``thought`` as the thought.

    >>> answer_head("I compare."), answer_head("I check.", "pos")
    ('<think>I compare.</think>\\n<answer>[[', '<think>I check.</think>\\n<score>')
    """
    answer_prefix = get_format(fmt).answer_template.split("{")[0]  # "<answer>[[", "<score>"
    return f"<think>{thought}</think>\n{answer_prefix}"


def thought_of_prefill(prefill: str | None, fmt: str = "pav") -> str | None:
    """The thought of a prefill that ``answer_head(thought, fmt)`` could have written, None for any
    other prefill.

    >>> thought_of_prefill("<think>I compare.</think>\\n<answer>[["), thought_of_prefill("<think>")
    ('I compare.', None)
    >>> thought_of_prefill("<think>I check.</think>\\n<score>", "pos")
    'I check.'
    """
    start, end = "<think>", answer_head("", fmt)[len("<think>"):]  # end: "</think>\n<answer>[[", ...
    if not prefill or not prefill.startswith(start) or not prefill.endswith(end):
        return None
    thought = prefill[len(start): len(prefill) - len(end)]
    return thought if thought and "</think>" not in thought else None
