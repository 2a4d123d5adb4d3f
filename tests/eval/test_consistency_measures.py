"""Sage's label-free measures (j1.eval.consistency) on hand-made verdict sets with a known number of
violations; y[i][j] is the verdict with response i shown first (1: i better, -1: j better, 0: tie,
None: invalid)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from j1.eval import consistency as C

N = None


def from_order(ranks):
    """The verdicts a perfectly consistent judge gives for tier ranks (0 = best)."""
    k = len(ranks)
    return [[0 if i == j else int(np.sign(ranks[j] - ranks[i])) for j in range(k)] for i in range(k)]


def first_wins(k):
    """A judge that always prefers whatever is shown first."""
    return [[0 if i == j else 1 for j in range(k)] for i in range(k)]


CYCLE = [[0, 1, -1], [-1, 0, 1], [1, -1, 0]]  # 0 > 1 > 2 > 0, every pair consistent in both orders

CASES = [
    # (name, y, IPI, TOV, intransitive, determined triples, invalid rate)
    ("strict order", from_order([0, 1, 2, 3]), 0.0, 0, 0, 4, 0.0),
    ("weak order with ties", from_order([0, 0, 1]), 0.0, 0, 0, 1, 0.0),
    ("all tied", from_order([0, 0, 0, 0]), 0.0, 0, 0, 4, 0.0),
    # The 3-cycle: no order fits; the best (any strict order) breaks one pair in both orders: 2.
    ("3-cycle", CYCLE, 0.0, 2, 1, 1, 0.0),
    # Always the first shown: every pair flips. Best order: all tied breaks all 6 ordered verdicts;
    # a strict order agrees with one of each pair's two verdicts: 3 violations (one per pair).
    ("first shown wins, K=3", first_wins(3), 1.0, 3, 0, 0, 0.0),
    ("first shown wins, K=4", first_wins(4), 1.0, 6, 0, 0, 0.0),
    # One flipped pair on top of the order 0 > 1 > 2: y[2][1] says 2 wins too -> 1 unstable pair of 3,
    # TOV 1 (keep the order; only y[2][1] disagrees); triples with the undetermined pair are left out.
    ("one flip", [[0, 1, 1], [-1, 0, 1], [-1, 1, 0]], 1 / 3, 1, 0, 0, 0.0),
    # Invalid verdicts: each disagrees with every order (+1 TOV) and makes its pair unstable.
    ("one invalid", [[0, 1, 1], [-1, 0, N], [-1, -1, 0]], 1 / 3, 1, 0, 0, 1 / 6),
    ("all invalid", [[0, N, N], [N, 0, N], [N, N, 0]], 1.0, 6, 0, 0, 1.0),
    # a > b, b = c, a = c: consistent pairs, but no weak order (ties are transitive): TOV 2, intransitive.
    ("tie intransitivity", [[0, 1, 0], [-1, 0, 0], [0, 0, 0]], 0.0, 2, 1, 1, 0.0),
    # Two disjoint 3-cycles in K=6 with the first beating the second everywhere: 2 + 2 violations,
    # 2 intransitive triples of C(6,3) = 20.
    ("two cycles", [
        [0, 1, -1, 1, 1, 1], [-1, 0, 1, 1, 1, 1], [1, -1, 0, 1, 1, 1],
        [-1, -1, -1, 0, 1, -1], [-1, -1, -1, -1, 0, 1], [-1, -1, -1, 1, -1, 0]], 0.0, 4, 2, 20, 0.0),
]


@pytest.mark.parametrize(("name", "y", "ipi", "tov", "bad", "det", "invalid"), CASES, ids=[c[0] for c in CASES])
def test_measures_on_hand_made_verdicts(name, y, ipi, tov, bad, det, invalid):
    p = C.prompt_consistency(y)
    assert p.ipi == pytest.approx(ipi)
    assert p.tov == tov == C.tov_dp(y)
    assert p.tov_rate == pytest.approx(tov / (len(y) * (len(y) - 1)))
    assert (p.intransitive, p.determined_triples) == (bad, det)
    assert p.invalid_rate == pytest.approx(invalid)


def test_enumeration_and_dp_agree_on_random_verdicts():
    rng = random.Random(0)
    for _ in range(60):
        k = rng.randint(2, 6)
        y = [[0 if i == j else rng.choice([1, -1, 0, N]) for j in range(k)] for i in range(k)]
        assert C.tov_enumerate(y)[0] == C.tov_dp(y)


def test_best_order_of_the_enumeration_attains_the_minimum():
    y = [[0, 1, 1, -1], [-1, 0, 1, 1], [-1, -1, 0, 0], [1, -1, 0, 0]]
    cost, ranks = C.tov_enumerate(y)
    implied = from_order(ranks)
    assert sum(implied[i][j] != y[i][j] for i, j in itertools.permutations(range(4), 2)) == cost


def test_dp_beyond_enumeration():
    # K = 9: a strict order with one pair reversed in both orders costs exactly 2 (reverse it back
    # is impossible without breaking the order: the pair itself disagrees in both orders).
    y = from_order(list(range(9)))
    y[0][8], y[8][0] = -1, 1
    assert C.tov(y) == 2
    # K = 8 with every verdict "first wins": 28 pairs, one violation each.
    assert C.tov(first_wins(8)) == 28
    with pytest.raises(ValueError, match="K <= 12"):
        C.tov_dp(first_wins(13))


def test_weak_order_counts_are_the_fubini_numbers():
    assert [len(C.weak_orders(k)) for k in range(1, 8)] == [1, 3, 13, 75, 541, 4683, 47293]


@pytest.mark.parametrize(("y", "message"), [
    ([[0]], "at least 2"), ([[0, 1], [1]], "K x K"), ([[0, 2], [1, 0]], "must be 1, 0, -1 or None"),
])
def test_malformed_matrices_raise(y, message):
    with pytest.raises(ValueError, match=message):
        C.prompt_consistency(y)


def test_pointwise_scores_are_transitive_by_construction():
    y = C.score_verdicts([7, 3, 7, 1])
    p = C.prompt_consistency(y)
    assert (p.ipi, p.tov, p.intransitive) == (0.0, 0, 0)
    q = C.prompt_consistency(C.score_verdicts([7, None, 5]))  # a missing score: its pairs are invalid
    assert q.invalid_rate == pytest.approx(4 / 6) and q.ipi == pytest.approx(2 / 3) and q.tov == 4


@pytest.mark.parametrize(("verdict", "code"), [("A", 1), ("B", -1), ("tie", 0), ("invalid", None), (None, None)])
def test_verdict_codes(verdict, code):
    assert C.verdict_code(verdict) == code


def test_summary_means_and_pooled_intransitive_rate():
    per = [C.prompt_consistency(CYCLE), C.prompt_consistency(from_order([0, 1, 2])),
           C.prompt_consistency(first_wins(3))]
    s = C.summarize(per, seed=0, n_boot=200)
    # IPI (0 + 0 + 1)/3; TOV (2 + 0 + 3)/3; intransitive pooled: 1 of the 2 determined triples.
    assert s["ipi"] == pytest.approx(1 / 3) and s["tov"] == pytest.approx(5 / 3)
    assert (s["intransitive_triples"], s["determined_triples"], s["intransitive_rate"]) == (1, 2, 0.5)
    # 3 prompts < MIN_CI_N: no intervals (null), the keys kept
    assert all(s[f"{key}_ci"] is None for key in ("ipi", "tov", "tov_rate", "invalid_rate", "intransitive_rate"))
    big = C.summarize(per * 4, seed=0, n_boot=200)  # 12 prompts
    for key in ("ipi", "tov", "tov_rate", "intransitive_rate"):
        assert big[f"{key}_ci"][0] <= big[key] <= big[f"{key}_ci"][1]
    assert C.summarize(per, seed=0, n_boot=200) == s  # seeded
    with pytest.raises(ValueError):
        C.summarize([])
