"""Mismatch pairs: a question's own gold solution (chosen) vs the gold solution of another question
(rejected). No model is asked, so the pairs are exact and cost nothing.

Why: an answer to a different request is the far end of J1's noisy-prompt pairs (the answer to x vs
the answer to a changed x'), and the embedded 135M judge learned content on CPU from these pairs
(``configs/train/j1_135m_cpu.yaml``, ``results/train/``).

How they are built (``j1 synth mismatch``):

- keep the questions whose question and source answer both have at most ``max_words`` words (short
  texts keep a judge prompt near 300 tokens on the CPU);
- shuffle them with ``random.Random(seed)`` and take the first ``pairs``;
- clean each answer: GSM8K's calculator annotations (``<<48/2=24>>``) go, ``#### 72`` becomes
  ``The answer is 72`` (or, for a ``boxed_share`` of the questions, MATH's ``The answer is $\\boxed{72}$.``:
  a judge that only ever read the first form does not find a boxed final answer);
- pair question i with the answer of question (i + 1 + r) mod n, r drawn from the same RNG in
  [0, n - 1): never its own, and past any answer with the same text as its own.

One output file; ``j1 synth mix`` splits it by prompt afterwards. A held-out question's gold answer
can then be the rejected response of a training question (a different request), never its chosen one.

A math question's final answer (GSM8K's ``#### x``, MATH's last ``\\boxed{}``) is kept as the pair's
``reference``: the gold answer a judge trained with ``--judge_inputs reference`` reads. An instruction's
output has none (its whole text is the chosen response).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from j1.data.mathcheck import final_answer, gsm8k_final
from j1.data.rationales import beside, in_share
from j1.data.sources import Problem
from j1.schema import PairRecord

KIND = "math-mismatch"
_CALCULATOR = re.compile(r"<<[^>]*>>")
_FINAL = re.compile(r"^####\s*", flags=re.MULTILINE)
_MARKED_LINE = re.compile(r"^####[ \t]*\S[^\n]*$", flags=re.MULTILINE)  # GSM8K's final line, not empty


def clean_solution(text: str, boxed: bool = False) -> str:
    """A GSM8K solution as a reader sees it: no calculator annotations, the final line a sentence.

    Args:
        text: the source's answer field.
        boxed: write the final answer in a box, as MATH solutions do.

    Returns:
        The text without ``<<...>>`` annotations, ``#### x`` written as ``The answer is x`` (boxed:
        ``The answer is $\\boxed{x}$.``), stripped.

    >>> clean_solution("48/2 = <<48/2=24>>24 clips.\\n#### 72")
    '48/2 = 24 clips.\\nThe answer is 72'
    >>> print(clean_solution("48/2 = 24 clips.\\n#### 72", boxed=True))
    48/2 = 24 clips.
    The answer is $\\boxed{72}$.
    """
    text = _CALCULATOR.sub("", text)
    if boxed:
        # the box holds the final answer as the pair's reference reads it (gsm8k_final: no thousands commas)
        text = _MARKED_LINE.sub(lambda m: f"The answer is $\\boxed{{{gsm8k_final(m.group(0))}}}$.", text)
    return _FINAL.sub("The answer is ", text).strip()


def is_boxed(problem_id: str, share: float, seed: int) -> bool:
    """Whether a question's answer is written boxed when ``share`` of them should be (a coin seeded by its id,
    so the answer reads the same as chosen and as rejected).

    >>> is_boxed("q1", 1.0, 0), is_boxed("q1", 0.0, 0)
    (True, False)
    """
    return in_share(share, f"{seed}:boxed:{problem_id}")


def is_short(problem: Problem, max_words: int) -> bool:
    """Whether both the question and its source answer have at most ``max_words`` words.

    Words are whitespace-separated, counted on the source text (annotations included), as in the
    measured recipe; a problem without an answer is not short.

    >>> p = Problem("i", "What is 2 + 2?", "f:1", "2 + 2 = 4\\n#### 4")  # 4 and 7 words
    >>> is_short(p, 7), is_short(p, 6)
    (True, False)
    """
    return problem.answer is not None and len(problem.prompt.split()) <= max_words \
        and len(problem.answer.split()) <= max_words


def select(problems: Sequence[Problem], n: int, max_words: int, rng: random.Random) -> list[Problem]:
    """The first ``n`` short problems after a seeded shuffle (source order, then ``rng.shuffle``).

    Raises:
        ValueError: fewer than ``n`` (or fewer than 2) problems are short enough.

    >>> ps = [Problem(str(i), f"q{i}", "f", f"a{i}") for i in range(4)]
    >>> [p.id for p in select(ps, 2, 5, random.Random(0))]
    ['2', '0']
    """
    short = [p for p in problems if is_short(p, max_words)]
    if len(short) < max(n, 2):
        raise ValueError(f"--pairs {n}: only {len(short)} of {len(problems)} questions have a question and an "
                         f"answer of at most --max_words {max_words} words; ask for at most {len(short)} pairs "
                         "(and at least 2) or raise --max_words")
    rng.shuffle(short)
    return short[:n]


def mismatch_indices(answers: Sequence[str], rng: random.Random) -> list[int]:
    """For each i, the index j of another item whose answer text differs from answer i.

    j starts at (i + 1 + r) mod n with r = ``rng.randrange(n - 1)`` (uniform over the other items)
    and moves on by one while answer j equals answer i, so a duplicate answer is never the rejected one.

    Raises:
        ValueError: fewer than 2 items, or an answer that every other item shares.

    >>> mismatch_indices(["a", "b", "c"], random.Random(0))
    [2, 0, 0]
    >>> mismatch_indices(["a", "a", "b"], random.Random(0))
    [2, 2, 0]
    """
    n = len(answers)
    if n < 2:
        raise ValueError(f"mismatch pairs need at least 2 questions, got {n}")
    out = []
    for i, own in enumerate(answers):
        start = i + 1 + rng.randrange(n - 1)
        j = next((k % n for k in range(start, start + n) if k % n != i and answers[k % n] != own), None)
        if j is None:
            raise ValueError(f"every other question has the same answer as question {i} ({own[:60]!r}); "
                             "no mismatch pair can be built")
        out.append(j)
    return out


def mismatch_pairs(problems: Sequence[Problem], *, pairs: int, max_words: int, seed: int,
                   source: str, kind: str = KIND, boxed_share: float = 0.0) -> list[PairRecord]:
    """The mismatch pair file's records (see the module docstring).

    Args:
        problems: questions with gold answers (``j1.data.sources.load_math_problems``), in source order.
        pairs: how many pairs (one per question).
        max_words: the most words of a question and of its answer.
        seed: seeds the shuffle and the choice of the other answer (one RNG, in that order).
        source: the name recorded in each record's ``source``.
        kind: the records' ``kind`` (``math-mismatch`` by default; ``chat-mismatch`` for instructions).
        boxed_share: share of the questions whose GSM8K final line is boxed (``is_boxed``; the draw is unchanged).

    Returns:
        ``pairs`` records of ``kind``; id = the question's id; ``meta`` names the question
        whose answer was used (``rejected_from``) and the seed.

    >>> ps = [Problem(str(i), f"q{i}", "f", f"s{i}\\n#### {i}") for i in range(3)]
    >>> [(r.prompt, r.chosen, r.rejected) for r in mismatch_pairs(ps, pairs=2, max_words=5, seed=0, source="x")]
    [('q0', 's0\\nThe answer is 0', 's2\\nThe answer is 2'), ('q2', 's2\\nThe answer is 2', 's0\\nThe answer is 0')]
    """
    rng = random.Random(seed)
    picked = select(problems, pairs, max_words, rng)
    answers = [clean_solution(p.answer or "", is_boxed(p.id, boxed_share, seed)) for p in picked]
    # each pair with its thoughts beside it: how each response begins, or the final answers against the reference
    return [
        beside(PairRecord(p.id, p.prompt, answers[i], answers[j], kind, source,
                          {"seed": seed, "rejected_from": picked[j].id, "where": p.where},
                          reference=final_answer(p.answer or "")))
        for i, (p, j) in enumerate(zip(picked, mismatch_indices(answers, rng), strict=True))
    ]
