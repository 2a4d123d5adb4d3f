"""The four-way format (fourway): the judge sees four responses and names the best, as RewardBench 2
asks generative judges to (allenai/reward-bench, ``run_generative_v2.py``), with j1's strict grammar:
think, then ``<answer>[[A]]</answer>`` … ``[[D]]``.

j1's verdict vocabulary (``j1.pairs.Verdict``) has two positions, so the pick itself is read with
``pick``; ``parse`` keeps the shared interface the pointwise way: a valid parse has verdict ``A`` ("a
valid pick") and one-hot ``scores`` over the four positions, an unparseable one is INVALID.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from j1.formats.base import JudgeFormat, Messages, fence_nonce, fenced
from j1.formats.grammar import split_thought, tag_contents
from j1.formats.templates import first_words
from j1.pairs import Parsed, Verdict

POSITIONS = ("A", "B", "C", "D")
_TOKEN = re.compile(r"^\s*\[\[\s*([ABCD])\s*\]\]\s*$", re.IGNORECASE)

# Our own wording, per template (the output grammar is the same in all of them).
_INTRO = {"full": "A user sent the request below; four assistants replied.",
          "compact": "Which of the four responses best answers the request?"}
_TASK = {
    "full": ("First reason inside <think> and </think>: check each response against the request. Then give the best "
             "response as <answer>[[A]]</answer>, <answer>[[B]]</answer>, <answer>[[C]]</answer> or "
             "<answer>[[D]]</answer>."),
    "compact": "Think in <think></think>, then answer <answer>[[A]]</answer>, [[B]], [[C]] or [[D]].",
}


@dataclass(frozen=True)
class Pick:
    """What a four-way judgment says: ``choice`` is A–D (the position shown) or ``"invalid"``."""

    choice: str
    thought: str | None = None
    error: str | None = None

    @property
    def valid(self) -> bool:
        return self.choice != "invalid"


def pick(text: str) -> Pick:
    """Total, strict parse of one four-way completion: only the text after the last ``</think>``
    counts, every ``<answer>`` there must hold one of [[A]]–[[D]], and they must agree.

    >>> pick("<think>C is right</think> <answer>[[c]]</answer>").choice
    'C'
    >>> pick("<think>x</think> <answer>[[E]]</answer>").error
    "answer is not [[A]], [[B]], [[C]] or [[D]]: '[[E]]'"
    >>> pick("[[A]]").choice
    'invalid'
    """
    thought, tail, err = split_thought(text)
    if err:
        return Pick("invalid", thought, err)
    contents, err = tag_contents(tail, "answer")
    if err:
        return Pick("invalid", thought, err)
    if not contents:
        return Pick("invalid", thought, "no <answer> tag")
    choices = set()
    for content in contents:
        m = _TOKEN.match(content)
        if not m:
            return Pick("invalid", thought, f"answer is not [[A]], [[B]], [[C]] or [[D]]: {content.strip()[:40]!r}")
        choices.add(m.group(1).upper())
    if len(choices) > 1:
        return Pick("invalid", thought, "answer tags disagree")
    return Pick(choices.pop(), thought)


class FourWay(JudgeFormat):
    """``fourway``: four responses, think, then the best one as ``<answer>[[A]]</answer>`` … ``[[D]]``."""

    name = "fourway"
    pairwise = True  # it compares responses shown together (not one alone)
    answer_template = "<answer>[[{verdict}]]</answer>"

    @property
    def task(self) -> str:
        return _TASK["full" if self.template_name == "full" else "compact"]

    def render(self, prompt: str, response_a: str, response_b: str | None = None,
               response_c: str | None = None, response_d: str | None = None) -> Messages:
        shown = [response_a, response_b, response_c, response_d]
        if any(r is None for r in shown):
            raise ValueError("format 'fourway' shows four responses: pass response_a to response_d")
        nonce = fence_nonce(prompt, *shown)
        fences = [fenced("request", prompt, nonce)]
        fences += [fenced(f"response_{p}", r, nonce) for p, r in zip(POSITIONS, shown, strict=True)]
        parts = [_INTRO["full" if self.template_name == "full" else "compact"], *fences, self.task]
        if self.template.quote_words:
            n = self.template.quote_words
            quote = " ".join([f"Request: {first_words(prompt, n)}."]
                             + [f"{p}: {first_words(r, n)}." for p, r in zip(POSITIONS, shown, strict=True)])
            parts.append(fenced("starts", quote, nonce))
        return [{"role": "system", "content": self.template.system}, {"role": "user", "content": "\n\n".join(parts)}]

    def parse(self, text: str) -> Parsed:
        p = pick(text)
        if not p.valid:
            return Parsed(Verdict.INVALID, None, p.thought, p.error)
        return Parsed(Verdict.A, {q: float(q == p.choice) for q in POSITIONS}, p.thought)
