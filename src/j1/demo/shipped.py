"""What j1 demo ships with: its pairs and its recipe, under j1/assets, and how many held-out pairs there are.

A leaf of the demo package: the spec checks ``--heldout_pairs`` against it and the runner reads it.
"""

from __future__ import annotations

from j1.judging.judges import ASSETS

TRAIN_PAIRS = ASSETS / "data" / "gsm8k_mismatch.jsonl"
HELDOUT_PAIRS = ASSETS / "data" / "heldout_mismatch.jsonl"
SAME_SOURCE_PAIRS = ASSETS / "data" / "gsm8k_test_mismatch.jsonl"
RECIPE = ASSETS / "recipes" / "j1_135m.yaml"


def heldout_available() -> tuple[int, int]:
    """The shipped held-out pairs: (same source, other sources)."""
    return tuple(sum(1 for line in p.read_text(encoding="utf-8").splitlines() if line.strip())
                 for p in (SAME_SOURCE_PAIRS, HELDOUT_PAIRS))
