"""Checking a model's math answer against a gold answer with math-verify.

Gold answers come in two shapes: GSM8K's reasoning ending ``#### 72`` (a plain number, maybe with
thousands commas) and MATH's LaTeX answer (``\\frac{1}{2}``, ``(3,-1)``), either given in an
``answer`` field or as the last ``\\boxed{}`` of a worked solution.

A model's answer counts only from its LAST ``\\boxed{...}``: the synthesis prompt asks for one, and
math-verify's free-text fallback picks the last number in the text, which for a wrong or unfinished
solution is often an intermediate result (``"48/2 = 24 ... and 5 bags"`` -> 5). Without a box the
sample is ``no_answer``: neither right (we do not know what it answered) nor wrong (a truncated
solution makes a trivially bad rejected response), so it is never used in a pair.

math-verify is imported where used (style rule 9); its parse/verify time out through SIGALRM, so
call these from the main thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

RIGHT, WRONG, NO_ANSWER = "right", "wrong", "no_answer"

_GSM8K_MARK = "####"
# A digit-comma-three-digits group: "1,000" -> "1000" (GSM8K writes thousands separators).
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
# A response's final line as GSM8K-style solutions end: "The answer is x" (GSM8K's own mark: gsm8k_final).
_FINAL_LINE = re.compile(r"[Tt]he (?:final )?answer is:?\s*\$?\s*([-+]?[\d.,/]+)")


def _mv():
    try:
        import math_verify
    except ImportError as exc:  # pragma: no cover - a hard dependency of j1
        raise ImportError("j1 synth math needs math-verify: pip install 'math-verify[antlr4_13_2]'") from exc
    return math_verify


def last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``, braces balanced.

    >>> last_boxed(r"so $x=\\boxed{\\frac{1}{2}}$, not \\boxed{3")
    '\\\\frac{1}{2}'
    >>> last_boxed("no box") is None
    True
    """
    best: str | None = None
    for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            best = text[m.end(): i - 1]
    return best


def gsm8k_final(answer: str) -> str | None:
    """The final answer after GSM8K's ``####`` marker, thousands commas removed; None without one.

    >>> gsm8k_final("48/2 = 24\\n#### 1,072")
    '1072'
    """
    if _GSM8K_MARK not in answer:
        return None
    final = answer.rsplit(_GSM8K_MARK, 1)[1].strip()
    return _THOUSANDS.sub("", final) or None


@dataclass(frozen=True)
class Gold:
    """A parsed gold answer: ``text`` as written (after ``####``/box extraction) and math-verify's parse."""

    text: str
    parsed: list[Any]


def parse_gold(text: str) -> Gold:
    """Parse a gold answer (a bare number, LaTeX, or a GSM8K ``#### x`` / boxed solution).

    Raises:
        ValueError: math-verify extracts nothing from it.
    """
    mv = _mv()
    final = gsm8k_final(text)
    if final is None:
        final = last_boxed(text)
    if final is None:
        final = text.strip()
    # Boxing makes math-verify take the whole answer as one expression ("(3, -1)", "x^2+1"),
    # not its last number; bare numbers come out the same either way.
    parsed = mv.parse(f"$\\boxed{{{final}}}$", parsing_timeout=5)
    if not parsed:
        parsed = mv.parse(final, parsing_timeout=5)
    if not parsed:
        raise ValueError(f"math-verify cannot parse the gold answer {final!r}")
    return Gold(final, parsed)


@dataclass(frozen=True)
class Check:
    """One sample's verification: ``status`` is right, wrong or no_answer; ``answer`` the boxed text."""

    status: str
    answer: str | None


def check_answer(gold: Gold, completion: str) -> Check:
    """Verify the last ``\\boxed{}`` of ``completion`` against ``gold``.

    >>> g = parse_gold("#### 1,000")
    >>> check_answer(g, r"... so \\boxed{1000}").status, check_answer(g, r"\\boxed{999}").status
    ('right', 'wrong')
    >>> check_answer(g, "the answer is 1000").status
    'no_answer'
    """
    mv = _mv()
    boxed = last_boxed(completion)
    if boxed is None or not boxed.strip():
        return Check(NO_ANSWER, boxed)
    # No comma surgery here: in MATH "(100,200)" is a point; math-verify reads "1,000" as 1000.
    parsed = mv.parse(f"$\\boxed{{{boxed.strip()}}}$", parsing_timeout=5)
    if not parsed:
        return Check(NO_ANSWER, boxed)
    return Check(RIGHT if mv.verify(gold.parsed, parsed, timeout_seconds=5) else WRONG, boxed)


def final_answer(text: str) -> str | None:
    """A response's final answer: its last ``\\boxed{}``, else GSM8K's ``#### x`` or "The answer is x"
    (thousands commas dropped); None without one.

    >>> final_answer(r"so $x = \\boxed{\\frac{1}{2}}$."), final_answer("12*5=60\\nThe answer is 1,060")
    ('\\\\frac{1}{2}', '1060')
    >>> final_answer("no answer here") is None
    True
    """
    boxed = last_boxed(text)
    if boxed is not None and boxed.strip():
        return boxed.strip()
    marked = gsm8k_final(text)
    if marked is not None:
        return marked
    found = _FINAL_LINE.findall(text)
    if not found:
        return None
    answer = found[-1].rstrip(".")
    return _THOUSANDS.sub("", answer) or None


def same_answer(a: str, b: str) -> bool:
    """Whether two final answers agree: equal once spaces, ``$`` and a trailing ``.0`` go, else by
    math-verify (``\\frac{1}{2}`` and ``0.5``).

    >>> same_answer("1,000", "1000"), same_answer("7", "8"), same_answer(r"\\frac{1}{2}", "0.5")
    (True, False, True)
    """
    def norm(s: str) -> str:
        s = re.sub(r"[\s$]|\\[,!;: ]", "", s).replace("dfrac", "frac").replace("tfrac", "frac")
        s = _THOUSANDS.sub("", s)
        return re.sub(r"^(-?\d+)\.0+$", r"\1", s)

    if norm(a) == norm(b):
        return True
    mv = _mv()
    try:
        left = mv.parse(f"$\\boxed{{{a}}}$", parsing_timeout=5)
        right = mv.parse(f"$\\boxed{{{b}}}$", parsing_timeout=5)
        return bool(left and right and mv.verify(left, right, timeout_seconds=5))
    except Exception:  # math-verify raises many types on odd LaTeX; an unreadable answer is no match
        return False
