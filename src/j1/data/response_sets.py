"""Response sets for ``j1 consistency``: K answers of graded quality to one math question, built from
gold solutions alone (no model asked), so the set that ships with j1 costs nothing and is exact.

Each question (GSM8K, MIT licence; short ones only, as in ``j1.data.mismatch``) gets six responses:

- its gold solution (cleaned: no calculator annotations, ``The answer is x``);
- the same steps with a wrong final answer (x plus a seeded offset in 1..9);
- the same steps cut before the final answer (incomplete);
- the gold solutions of three other questions (answers to another request).

A judge with one view of quality ranks them gold > wrong or cut > the others, so every set has an
order a consistent judge can follow, and the sets differ in how close their members are. The
responses are shuffled per question (seeded), so the gold is in no fixed position.

Rebuild the shipped file with::

    python -m j1.data.response_sets ../shared/data/gsm8k_test.jsonl src/j1/assets/data/consistency_gsm8k.jsonl
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from j1.data.mismatch import clean_solution, is_short, select
from j1.data.sources import Problem

_FINAL_NUMBER = re.compile(r"The answer is (-?[0-9][0-9,]*(?:\.[0-9]+)?)\s*$")


def wrong_final(solution: str, rng: random.Random) -> str | None:
    """``solution`` with its final number moved by 1..9 (None when it ends in no number).

    >>> wrong_final("2 + 2 = 4\\nThe answer is 4", random.Random(0))
    '2 + 2 = 4\\nThe answer is 11'
    """
    m = _FINAL_NUMBER.search(solution)
    if m is None:
        return None
    value = float(m.group(1).replace(",", ""))
    shifted = value + rng.randint(1, 9)
    text = str(int(shifted)) if shifted == int(shifted) else f"{shifted:g}"
    return solution[: m.start(1)] + text


def cut_before_answer(solution: str) -> str | None:
    """The steps without the final answer line (None when nothing would be left).

    >>> cut_before_answer("2 + 2 = 4\\nThe answer is 4")
    '2 + 2 = 4'
    """
    lines = solution.splitlines()
    if len(lines) < 2:
        return None
    return "\n".join(lines[:-1]).strip() or None


def response_sets(problems: Sequence[Problem], *, n: int, max_words: int, seed: int) -> list[dict]:
    """``n`` rows ``{"id", "prompt", "responses", "kinds"}`` (kinds name each response's origin: gold,
    wrong_final, cut, other:<id>). One RNG drives the question choice, the offsets, the other
    answers and the shuffles, in that order.

    >>> ps = [Problem(str(i), f"q{i}", "f", f"{i} + 1 = {i + 1}\\n#### {i + 1}") for i in range(6)]
    >>> rows = response_sets(ps, n=2, max_words=9, seed=0)
    >>> [len(r["responses"]) for r in rows], sorted(rows[0]["kinds"])[:3]
    ([6, 6], ['cut', 'gold', 'other:0'])
    """
    rng = random.Random(seed)
    short = [p for p in problems if is_short(p, max_words)]
    picked = select(short, len(short), max_words, rng)  # every short question, shuffled
    golds = [clean_solution(p.answer or "") for p in picked]
    rows = []
    for i, p in enumerate(picked):
        if len(rows) == n:
            break
        wrong, cut = wrong_final(golds[i], rng), cut_before_answer(golds[i])
        if wrong is None or cut is None:
            continue
        others = [j for j in rng.sample(range(len(picked)), min(len(picked), 8)) if golds[j] != golds[i]][:3]
        members = [("gold", golds[i]), ("wrong_final", wrong), ("cut", cut)]
        members += [(f"other:{picked[j].id}", golds[j]) for j in others]
        rng.shuffle(members)
        rows.append({"id": p.id, "prompt": p.prompt, "responses": [t for _, t in members],
                     "kinds": [k for k, _ in members], "source": Path(p.where).name})
    if len(rows) < n:
        raise ValueError(f"only {len(rows)} questions qualify; ask for at most {len(rows)} sets or raise max_words")
    return rows


def main(argv: Sequence[str]) -> int:
    """``python -m j1.data.response_sets GSM8K.jsonl OUT.jsonl [N]``: the shipped file's recipe."""
    from j1.data.sources import load_math_problems
    from j1.runs.atomic import write_jsonl_atomic

    source, out = argv[0], argv[1]
    n = int(argv[2]) if len(argv) > 2 else 24
    rows = response_sets(load_math_problems(source, split="test"), n=n, max_words=50, seed=0)
    write_jsonl_atomic(out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
