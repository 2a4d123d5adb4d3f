"""The three pairwise formats: verdict (pav), scores (pas), scores and verdict (pavs)."""

from __future__ import annotations

from j1.formats.base import JudgeFormat, Messages, fence_nonce, fenced
from j1.formats.grammar import invalid, parse_answer, parse_score, split_thought
from j1.pairs import Parsed, compare_scores


class _Pairwise(JudgeFormat):
    pairwise = True

    def render(self, prompt: str, response_a: str, response_b: str | None = None) -> Messages:
        self._check_arity(response_b)
        nonce = fence_nonce(prompt, response_a, response_b)
        fences = [fenced("request", prompt, nonce), fenced("response_A", response_a, nonce),
                  fenced("response_B", response_b, nonce)]
        user = self._user(self.template.pair_intro, fences, prompt, [response_a, response_b], nonce)
        return [{"role": "system", "content": self.template.system}, {"role": "user", "content": user}]

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

    def parse(self, text: str) -> Parsed:
        thought, tail, err = split_thought(text)
        if err:
            return invalid(err, thought)
        verdict, err = parse_answer(tail)
        if err:
            return invalid(err, thought)
        return Parsed(verdict, None, thought)


class PairwiseScores(_Pairwise):
    """``pas``: think, then a 0–10 score per response; the verdict follows from the scores."""

    name = "pas"
    answer_template = "<score_A>{score_a}</score_A> <score_B>{score_b}</score_B>"

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

    def parse(self, text: str) -> Parsed:
        thought, tail, err = split_thought(text)
        if err:
            return invalid(err, thought)
        scores, bad = self._scores(tail, thought)
        if bad:
            return bad
        verdict, err = parse_answer(tail)
        if err:
            return invalid(err, thought)
        return Parsed(verdict, scores, thought)
