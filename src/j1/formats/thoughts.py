"""How varied a judge's thoughts are: one measure for training batches (``j1.rewards.metrics``) and evaluations
(``j1.eval.scoring``), so a collapse reads the same wherever it is seen. A leaf: it imports nothing of j1."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence


def thought_spread(thoughts: Sequence[tuple[str, str]]) -> dict[str, float]:
    """How varied a batch's thoughts are, from ``(prompt key, thought)`` per rollout: ``thought_median_words``,
    ``thought_distinct`` (distinct thoughts / rollouts, whitespace-normalised) and ``thought_shared`` (the share
    of rollouts whose thought also appears under another prompt: a thought that no longer depends on the pair).
    A judge that writes one sentence for every pair has ``thought_shared`` 1; one that writes a thought per pair,
    the same for each of its rollouts, has ``thought_distinct`` 1/G but ``thought_shared`` 0.

    Raises:
        ValueError: no thoughts.

    >>> thought_spread([("p1", "a b c"), ("p1", "a b c"), ("p2", "a  b c"), ("p3", "x")])
    {'thought_median_words': 3.0, 'thought_distinct': 0.5, 'thought_shared': 0.75}
    """
    if not thoughts:
        raise ValueError("thought_spread: no thoughts")
    norm = [(key, " ".join(t.split())) for key, t in thoughts]
    keys_of: dict[str, set[str]] = defaultdict(set)
    for key, t in norm:
        keys_of[t].add(key)
    words = sorted(len(t.split()) for _, t in norm)
    mid = len(words) // 2
    median = float(words[mid]) if len(words) % 2 else (words[mid - 1] + words[mid]) / 2
    return {"thought_median_words": median, "thought_distinct": len(keys_of) / len(norm),
            "thought_shared": sum(len(keys_of[t]) > 1 for _, t in norm) / len(norm)}
