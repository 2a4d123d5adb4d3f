"""The three pairwise formats: verdict (pav), scores (pas), scores and verdict (pavs)."""

from __future__ import annotations

import random

from j1.formats.base import Guidance, JudgeFormat, Messages, Prompt, request_text
from j1.formats.grammar import invalid, parse_answer, parse_score, parse_verdict, split_thought
from j1.pairs import Parsed, compare_scores


class _Pairwise(JudgeFormat):
    arity = 2

    def render(self, prompt: Prompt, response_a: str, response_b: str | None = None,
               guidance: Guidance | None = None) -> Messages:
        self._check_arity(response_b)
        return self._messages(self.template.pair_intro, request_text(prompt),
                              [("response_A", response_a), ("response_B", response_b)], guidance)

    def _drawn_scores(self, winner: str | None, rng: random.Random | None) -> tuple[int, int]:
        """``(score_A, score_B)``: distinct scores drawn from ``rng`` (a well-defined winner), ordered so
        that ``winner`` (if named) scores higher; without ``rng``, 10 for the winner and 0 for the other."""
        winner = self._position(winner)
        if rng is None:
            if winner is None:
                raise ValueError(f"format {self.name!r}: name a winner or pass an rng to draw the scores")
            return (10, 0) if winner == "A" else (0, 10)
        a, b = rng.sample(range(11), 2)
        if winner is not None and (a > b) != (winner == "A"):
            a, b = b, a
        return a, b

    @staticmethod
    def _scores(tail: str, thought: str | None) -> tuple[dict[str, float] | None, Parsed | None]:
        score_a, err = parse_score(tail, "score_A")
        if err:
            return None, invalid(err, thought)
        score_b, err = parse_score(tail, "score_B")
        if err:
            return None, invalid(err, thought)
        return {"A": score_a, "B": score_b}, None


class PairwiseVerdict(_Pairwise):
    """``pav``: think, then ``<answer>[[A]]</answer>`` or ``[[B]]``."""

    name = "pav"
    answer_template = "<answer>[[{verdict}]]</answer>"
    answer_tags = ("<answer>", "</answer>")
    names_position = True

    def write_answer(self, winner: str | None = None, rng: random.Random | None = None) -> str:
        """The verdict ``winner``, or one drawn from ``rng``.

        >>> PairwiseVerdict().write_answer("B")
        '<answer>[[B]]</answer>'
        """
        return self.answer_template.format(verdict=self._pick(winner, rng))

    def parse(self, text: str) -> Parsed:
        return parse_verdict(text, self.positions)


class PairwiseScores(_Pairwise):
    """``pas``: think, then a 0–10 score per response; the verdict follows from the scores."""

    name = "pas"
    answer_template = "<score_A>{score_a}</score_A> <score_B>{score_b}</score_B>"
    answer_tags = ("<score_A>", "</score_B>")
    names_position = False

    def write_answer(self, winner: str | None = None, rng: random.Random | None = None) -> str:
        """Two scores, the winner's higher (see ``_drawn_scores``).

        >>> PairwiseScores().write_answer("B")
        '<score_A>0</score_A> <score_B>10</score_B>'
        """
        a, b = self._drawn_scores(winner, rng)
        return self.answer_template.format(score_a=a, score_b=b)

    def parse(self, text: str) -> Parsed:
        thought, tail, err = split_thought(text)
        if err:
            return invalid(err, thought)
        scores, bad = self._scores(tail, thought)
        if bad:
            return bad
        return Parsed(compare_scores(scores["A"], scores["B"]), scores, thought)


class PairwiseScoresVerdict(_Pairwise):
    """``pavs``: scores and a verdict; the verdict comes from the answer tag (as in J1), and both
    parts must be well formed."""

    name = "pavs"
    answer_template = "<score_A>{score_a}</score_A> <score_B>{score_b}</score_B> <answer>[[{verdict}]]</answer>"
    answer_tags = ("<score_A>", "</answer>")
    names_position = True

    def write_answer(self, winner: str | None = None, rng: random.Random | None = None) -> str:
        """Two scores and the verdict they give, the winner's score higher.

        >>> PairwiseScoresVerdict().write_answer("A")
        '<score_A>10</score_A> <score_B>0</score_B> <answer>[[A]]</answer>'
        """
        a, b = self._drawn_scores(winner, rng)
        return self.answer_template.format(score_a=a, score_b=b, verdict="A" if a > b else "B")

    def parse(self, text: str) -> Parsed:
        thought, tail, err = split_thought(text)
        if err:
            return invalid(err, thought)
        scores, bad = self._scores(tail, thought)
        if bad:
            return bad
        verdict, err = parse_answer(tail, self.positions)
        if err:
            return invalid(err, thought)
        return Parsed(verdict, scores, thought)
