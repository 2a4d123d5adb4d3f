"""The four-way format (fourway): the judge sees four responses and names the best, as RewardBench 2
asks generative judges to (allenai/reward-bench, ``run_generative_v2.py``), with j1's strict grammar:
think, then ``<answer>[[A]]</answer>`` … ``[[D]]``.

Its arity is 4: ``parse`` reads the pick with the shared grammar parser over the letters A to D, so a
valid parse's verdict is the position picked (``Verdict.A`` … ``Verdict.D``), an unparseable one is
INVALID. ``pick`` gives the same reading as a ``Pick`` (RewardBench 2's scoring reads that). The J1
rewards and ``j1 serve`` score pairs and single responses only: they refuse this format
(``j1.formats.require_arity``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from j1.formats.base import POSITIONS, Guidance, JudgeFormat, Messages, Prompt, request_text
from j1.formats.grammar import parse_verdict
from j1.formats.templates import first_words
from j1.pairs import Parsed

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
    parsed = _FOURWAY.parse(text)
    return Pick(parsed.verdict.value, parsed.thought, parsed.error)


class FourWay(JudgeFormat):
    """``fourway``: four responses, think, then the best one as ``<answer>[[A]]</answer>`` … ``[[D]]``."""

    name = "fourway"
    arity = 4
    answer_template = "<answer>[[{verdict}]]</answer>"
    answer_tags = ("<answer>", "</answer>")
    names_position = True

    @property
    def task(self) -> str:
        return _TASK["full" if self.template_name == "full" else "compact"]

    def render(self, prompt: Prompt, response_a: str, response_b: str | None = None,
               response_c: str | None = None, response_d: str | None = None,
               guidance: Guidance | None = None) -> Messages:
        prompt = request_text(prompt)
        shown = [response_a, response_b, response_c, response_d]
        if any(r is None for r in shown):
            raise ValueError("format 'fourway' shows four responses: pass response_a to response_d")
        n = self.template.quote_words
        quote = " ".join([f"Request: {first_words(prompt, n)}."]
                         + [f"{p}: {first_words(r, n)}." for p, r in zip(POSITIONS, shown, strict=True)])
        return self._messages(_INTRO["full" if self.template_name == "full" else "compact"], prompt,
                              [(f"response_{p}", r) for p, r in zip(POSITIONS, shown, strict=True)], guidance,
                              quote=quote)

    def write_answer(self, winner: str | None = None, rng: random.Random | None = None) -> str:
        """The pick ``winner``, or one drawn from ``rng``.

        >>> FourWay().write_answer("D")
        '<answer>[[D]]</answer>'
        """
        return self.answer_template.format(verdict=self._pick(winner, rng))

    def parse(self, text: str) -> Parsed:
        """The pick, A to D: the shared grammar with four letters (``[[D]]`` is ``Verdict.D``).

        >>> FourWay().parse("<think>x</think><answer>[[D]]</answer>").verdict
        <Verdict.D: 'D'>
        """
        return parse_verdict(text, self.positions)


_FOURWAY = FourWay()
