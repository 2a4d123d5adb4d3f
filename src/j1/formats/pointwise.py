"""The pointwise format (pos): one response, think, then a 0–10 score."""

from __future__ import annotations

import random

from j1.formats.base import Guidance, JudgeFormat, Messages, Prompt, request_text
from j1.formats.grammar import invalid, parse_score, split_thought
from j1.pairs import Parsed, Verdict


class PointwiseScore(JudgeFormat):
    """``pos``: ``<score>8</score>``. A valid parse has verdict ``A`` (the single response) and
    ``scores == {"A": score}``; pairs become two pointwise judgments compared afterwards."""

    name = "pos"
    arity = 1
    answer_template = "<score>{score}</score>"
    answer_tags = ("<score>", "</score>")
    names_position = False

    def write_answer(self, winner: str | None = None, rng: random.Random | None = None) -> str:
        """A score drawn from ``rng`` (0 to 10), or the top score without one; ``winner`` can only be
        ``A``, the response shown.

        >>> PointwiseScore().write_answer("A")
        '<score>10</score>'
        """
        self._position(winner)
        return self.answer_template.format(score=rng.randint(0, 10) if rng is not None else 10)

    def render(self, prompt: Prompt, response_a: str, response_b: str | None = None,
               guidance: Guidance | None = None) -> Messages:
        self._check_arity(response_b)
        return self._messages(self.template.point_intro, request_text(prompt), [("response", response_a)], guidance)

    def parse(self, text: str) -> Parsed:
        thought, tail, err = split_thought(text)
        if err:
            return invalid(err, thought)
        score, err = parse_score(tail, "score")
        if err:
            return invalid(err, thought)
        return Parsed(Verdict.A, {"A": score}, thought)
