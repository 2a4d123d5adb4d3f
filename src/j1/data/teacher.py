"""A teacher's thoughts (``j1 synth thoughts --teacher URL``): a served model writes each order's thought in the
judge's own format (``pav``: ``<think>…</think>`` then the verdict), and a thought is kept only when its verdict
names the winner the construction knows. A pair keeps the teacher's thoughts only when both orders agree; the
others keep their constructed thoughts. Disagreements are dropped and counted, never trained on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from j1.backends.base import Backend
    from j1.schema import PairRecord

def teacher_prompts(pair: PairRecord) -> dict[str, list[dict]]:
    """The pav prompts a teacher answers for ``pair``: one per letter the chosen response is shown under,
    with the inputs the pair's thoughts read (a reference) and nothing else.

    >>> from j1.schema import PairRecord
    >>> p = PairRecord("i", "q", "good", "bad", "chat", "s", thoughts={"A": "x", "B": "y", "reads": []})
    >>> sorted(teacher_prompts(p)), "good" in teacher_prompts(p)["A"][-1]["content"]
    (['A', 'B'], True)
    """
    from j1.formats import get_format
    from j1.pairs import render_both, shown_label

    reads = pair.thoughts["reads"] if pair.thoughts else []
    guide = pair.guidance.keep(reads)
    # rendered with chosen as response A: each order's prompt, keyed by the letter chosen is shown under
    return {shown_label("A", order): messages
            for order, messages in render_both(get_format("pav"), pair.prompt, pair.chosen, pair.rejected, guide)}


def teacher_thoughts(pairs: Sequence[PairRecord], teacher: Backend, *, max_tokens: int
                     ) -> tuple[list[PairRecord], dict]:
    """``pairs`` with the teacher's thoughts where its verdict agrees with the construction in both orders;
    counts: ``asked`` (thoughts asked for), ``disagreed`` (a verdict naming the loser, or invalid), ``kept`` (pairs
    with the teacher's thoughts)."""
    import dataclasses

    from j1.backends import SamplingParams
    from j1.formats import get_format

    fmt = get_format("pav")
    asks = [(i, winner, msgs) for i, p in enumerate(pairs) for winner, msgs in teacher_prompts(p).items()]
    outs = teacher.generate([m for _, _, m in asks], SamplingParams(n=1, temperature=0.0, max_new_tokens=max_tokens))
    written: dict[int, dict[str, str]] = {}
    disagreed = 0
    for (i, winner, _), comps in zip(asks, outs, strict=True):
        parsed = fmt.parse(comps[0].text)
        if parsed.verdict.value != winner or not parsed.thought or not parsed.thought.strip():
            disagreed += 1
            continue
        written.setdefault(i, {})[winner] = " ".join(parsed.thought.split())
    out = []
    for i, p in enumerate(pairs):
        mine = written.get(i, {})
        if len(mine) == 2:
            p = dataclasses.replace(p, thoughts={**mine, "reads": p.thoughts["reads"]})
        out.append(p)
    kept = sum(len(w) == 2 for w in written.values())
    return out, {"asked": len(asks), "disagreed": disagreed, "kept": kept}
