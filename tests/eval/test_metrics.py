"""Every metric against hand-worked numbers (the arithmetic is in the comments)."""

from __future__ import annotations

import numpy as np
import pytest

from j1.eval import metrics as M
from j1.eval import stats as S
from j1.eval.metrics import ItemOutcome, PairOutcome


def pw(label, ab, ba):
    return PairOutcome(label, ab=ab, ba=ba)


def pt(label, verdict):
    return PairOutcome(label, verdict=verdict)


def one(cat, pair, id_="x"):
    return ItemOutcome(id_, cat, (pair,))


# (label, AB verdict, BA verdict) -> (averaged accuracy, consistent, AB right, BA right, JudgeBench right)
PAIR_TABLE = [
    ("A", "A", "A", 1.0, 1.0, 1.0, 1.0, True),      # +1 +1 = 2 > 0
    ("A", "A", "B", 0.5, 0.0, 1.0, 0.0, False),     # +1 -1 = 0, not > 0
    ("A", "A", "invalid", 0.5, 0.0, 1.0, 0.0, True),  # +1 + 0 = 1 > 0: official right, strict (consistent) wrong
    ("A", "A", "tie", 0.5, 0.0, 1.0, 0.0, True),    # +1 + 0 = 1
    ("A", "tie", "tie", 0.0, 0.0, 0.0, 0.0, False),  # 0 + 0
    ("A", "invalid", "invalid", 0.0, 0.0, 0.0, 0.0, False),
    ("A", "B", "invalid", 0.0, 0.0, 0.0, 0.0, False),  # -1 + 0 = -1
    ("B", "B", "invalid", 0.5, 0.0, 1.0, 0.0, True),
    ("B", "A", "A", 0.0, 0.0, 0.0, 0.0, False),     # -2
    ("tie", "tie", "A", 0.5, 0.0, 1.0, 0.0, True),  # tie label: only a tie verdict is right; no opposite
]


@pytest.mark.parametrize("label,ab,ba,acc,cons,r_ab,r_ba,jb", PAIR_TABLE)
def test_pair_scores_and_judgebench_rule(label, ab, ba, acc, cons, r_ab, r_ba, jb):
    assert M.pair_scores(pw(label, ab, ba)) == (acc, cons, r_ab, r_ba)
    assert M.judgebench_right([ab, ba], label) is jb


def test_judgebench_official_vs_strict_on_one_right_one_invalid():
    # The example: AB right, BA invalid. Official JudgeBench: +1 + 0 = 1 > 0 -> right (1.0).
    # Strict (right in both orders, = consistent accuracy): 0. Order-averaged: (1 + 0) / 2 = 0.5.
    item = one("knowledge", pw("A", "A", "invalid"))
    jb = M.metric_block([item], "judgebench", n_boot=10)
    plain = M.metric_block([item], "mean", n_boot=10)
    assert jb["accuracy"] == 1.0 and jb["consistent_accuracy"] == 0.0
    assert plain["accuracy"] == 0.5
    assert jb["invalid_rate"] == 0.5  # 1 of 2 per-order verdicts


@pytest.mark.parametrize("label,verdict,right", [
    ("A", "A", 1.0), ("A", "B", 0.0), ("A", "tie", 0.0), ("A", "invalid", 0.0), ("tie", "tie", 1.0), ("B", "B", 1.0),
])
def test_pointwise_pair(label, verdict, right):
    assert M.pair_scores(pt(label, verdict)) == (right, right, None, None)


def test_block_rates_pairwise():
    # 4 items, labels all A:
    #   1: A/A  right both          -> acc 1, cons 1, no flip
    #   2: A/B  flip                -> acc .5, cons 0, flip
    #   3: tie/invalid              -> acc 0, not counted for flips (one invalid), 1 tie, 1 invalid
    #   4: B/tie flip (both valid)  -> acc 0, flip, 1 tie
    items = [one("c", pw("A", "A", "A"), "1"), one("c", pw("A", "A", "B"), "2"),
             one("c", pw("A", "tie", "invalid"), "3"), one("c", pw("A", "B", "tie"), "4")]
    b = M.metric_block(items, "mean", n_boot=50)
    assert b["n"] == 4
    assert b["accuracy"] == pytest.approx((1 + 0.5 + 0 + 0) / 4)        # 0.375
    assert b["consistent_accuracy"] == pytest.approx(1 / 4)
    assert b["order_accuracy"] == {"AB": pytest.approx(2 / 4), "BA": pytest.approx(1 / 4)}  # AB: 1,2; BA: 1
    assert b["flip_rate"] == pytest.approx(2 / 3)                        # items 2 and 4 of the 3 valid in both orders
    assert b["tie_rate"] == pytest.approx(2 / 8)                         # 8 per-order verdicts, 2 ties
    assert b["invalid_rate"] == pytest.approx(1 / 8)
    # 4 items < MIN_CI_N: no interval, null in metrics.json
    assert b["accuracy_ci"] is None and b["consistent_accuracy_ci"] is None
    big = M.metric_block(items * 3, "mean", n_boot=50)  # the same items three times: 12 >= MIN_CI_N
    lo, hi = big["accuracy_ci"]
    assert 0 <= lo <= big["accuracy"] <= hi <= 1


def test_block_pointwise_nulls_order_metrics():
    items = [one("c", pt("A", "A"), "1"), one("c", pt("A", "tie"), "2"), one("c", pt("B", "invalid"), "3")]
    b = M.metric_block(items, "mean", n_boot=20)
    assert b["accuracy"] == pytest.approx(1 / 3) and b["consistent_accuracy"] == pytest.approx(1 / 3)
    assert b["order_accuracy"] is None and b["flip_rate"] is None
    assert b["tie_rate"] == pytest.approx(1 / 3) and b["invalid_rate"] == pytest.approx(1 / 3)


def rm_item(cells_ab, cells_ba, cat="chat", id_="r"):
    """An RM-Bench item from two 3x3 grids of AB/BA verdicts (label A: chosen_i first)."""
    pairs = tuple(pw("A", cells_ab[i][j], cells_ba[i][j]) for i in range(3) for j in range(3))
    return ItemOutcome(id_, cat, pairs)


def test_rmbench_matrix_pairwise_hand_made_row():
    # Verdicts per (chosen_i, rejected_j); "A" is right.
    ab = [["A", "B", "B"],
          ["A", "A", "B"],
          ["A", "A", "invalid"]]
    ba = [["A", "A", "B"],
          ["A", "B", "B"],
          ["B", "A", "A"]]
    # Cells = mean of the two orders:
    #  [[1,  .5, 0 ],
    #   [1,  .5, 0 ],
    #   [.5, 1,  .5]]
    # hard (above diagonal: (0,1),(0,2),(1,2)) = (.5 + 0 + 0)/3 = 1/6
    # normal (diagonal) = (1 + .5 + .5)/3 = 2/3
    # easy (below: (1,0),(2,0),(2,1)) = (1 + .5 + 1)/3 = 5/6
    # accuracy = (1/6 + 2/3 + 5/6)/3 = 5/9
    item = rm_item(ab, ba)
    cells = M.rmbench_cells(item)
    assert cells.tolist() == [[1, 0.5, 0], [1, 0.5, 0], [0.5, 1, 0.5]]
    lv = M.rmbench_levels(cells)
    assert lv == {"easy": pytest.approx(5 / 6), "normal": pytest.approx(2 / 3), "hard": pytest.approx(1 / 6)}
    b = M.metric_block([item], "rmbench", n_boot=10)
    assert b["accuracy"] == pytest.approx(5 / 9)
    assert (b["easy"], b["normal"], b["hard"]) == (pytest.approx(5 / 6), pytest.approx(2 / 3), pytest.approx(1 / 6))
    # consistent: cells right in both orders: (0,0), (1,0), (2,1) -> 3/9
    assert b["consistent_accuracy"] == pytest.approx(3 / 9)
    # AB right: (0,0),(1,0),(1,1),(2,0),(2,1) = 5/9; BA right: (0,0),(0,1),(1,0),(2,1),(2,2) = 5/9
    assert b["order_accuracy"] == {"AB": pytest.approx(5 / 9), "BA": pytest.approx(5 / 9)}
    # flips (both valid, different): (0,1) B/A, (1,1) A/B, (2,0) A/B -> 3 of the 8 cells valid in
    # both orders; (2,2) has an invalid, so it is not counted
    assert b["flip_rate"] == pytest.approx(3 / 8)


def test_rmbench_matrix_pointwise_strict():
    # Scores: chosen = (7, 5, 9), rejected = (6, 5, 8). Cell = 1[c_i > r_j] (strict):
    #   c0=7: >6 yes, >5 yes, >8 no   -> [1, 1, 0]
    #   c1=5: >6 no,  >5 no (tie), >8 no -> [0, 0, 0]
    #   c2=9: yes, yes, yes            -> [1, 1, 1]
    # hard = (0,1),(0,2),(1,2) = (1 + 0 + 0)/3 = 1/3; normal = (1 + 0 + 1)/3 = 2/3;
    # easy = (1,0),(2,0),(2,1) = (0 + 1 + 1)/3 = 2/3; accuracy = (1/3 + 2/3 + 2/3)/3 = 5/9
    c, r = (7, 5, 9), (6, 5, 8)
    verdict = {(i, j): "A" if c[i] > r[j] else "tie" if c[i] == r[j] else "B" for i in range(3) for j in range(3)}
    item = ItemOutcome("p", "chat", tuple(pt("A", verdict[i, j]) for i in range(3) for j in range(3)))
    b = M.metric_block([item], "rmbench", n_boot=10)
    assert (b["hard"], b["normal"], b["easy"]) == (pytest.approx(1 / 3), pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert b["accuracy"] == pytest.approx(5 / 9)
    assert b["tie_rate"] == pytest.approx(1 / 9)  # the (1,1) cell


def test_rmbench_domains_weigh_equally():
    # chat: two items all right (1.0); safety: one item all wrong (0.0).
    # Item mean would be 2/3; RM-Bench's mean over domains is (1 + 0)/2 = 0.5.
    right = rm_item([["A"] * 3] * 3, [["A"] * 3] * 3, "chat", "a")
    right2 = rm_item([["A"] * 3] * 3, [["A"] * 3] * 3, "chat", "b")
    wrong = rm_item([["B"] * 3] * 3, [["B"] * 3] * 3, "safety", "c")
    b = M.metric_block([right, right2, wrong], "rmbench", n_boot=10)
    assert b["accuracy"] == pytest.approx(0.5)
    assert b["easy"] == b["normal"] == b["hard"] == pytest.approx(0.5)


def test_rmbench_needs_nine_pairs():
    with pytest.raises(ValueError, match="9 pairs"):
        M.rmbench_cells(one("chat", pw("A", "A", "A")))


def test_rewardbench_section_weighting():
    # Per-subset accuracies (each item right in both orders or in neither):
    #   alpacaeval-easy 1.0 (weight 100), mt-bench-easy 0.0 (28)          -> Chat = 100/128
    #   llmbar-natural 0.5 (two items: one right, one wrong)                -> Chat Hard = 0.5
    #   math-prm 1.0 (984), hep-go 0.0 (164)                               -> Reasoning = 984/1148
    #   score = (100/128 + 0.5 + 984/1148) / 3
    def it(subset, right, id_):
        v = "A" if right else "B"
        return one(subset, pw("A", v, v), id_)

    items = [it("alpacaeval-easy", True, "1"), it("mt-bench-easy", False, "2"), it("llmbar-natural", True, "3"),
             it("llmbar-natural", False, "4"), it("math-prm", True, "5"), it("hep-go", False, "6")]
    b = M.metric_block(items, "rewardbench", n_boot=10)
    chat, hard, reasoning = 100 / 128, 0.5, 984 / 1148
    assert b["sections"] == {"Chat": pytest.approx(chat), "Chat Hard": pytest.approx(hard),
                             "Reasoning": pytest.approx(reasoning)}
    assert b["accuracy"] == pytest.approx((chat + hard + reasoning) / 3)
    # consistent accuracy uses the same weighting (here every item is all-or-nothing, so equal)
    assert b["consistent_accuracy"] == pytest.approx(b["accuracy"])
    # the plain item mean would be 3/6 = 0.5: weighting matters
    assert b["accuracy"] != pytest.approx(0.5)


def test_rewardbench_rejects_unknown_subset():
    with pytest.raises(ValueError, match="not RewardBench subsets"):
        M.category_weights({"my-subset": 3}, "rewardbench")


def test_category_weights_sum_to_one():
    counts = {"alpacaeval-easy": 2, "hep-go": 1, "donotanswer": 5}
    assert sum(M.category_weights(counts, "rewardbench").values()) == pytest.approx(1.0)


def test_bootstrap_is_seeded_and_brackets_the_mean():
    rng_items = np.random.default_rng(3)
    items = [one("a" if k % 2 else "b", pw("A", v, v), str(k))
             for k, v in enumerate(rng_items.choice(["A", "B"], size=40))]
    b1 = M.metric_block(items, "mean", seed=7, n_boot=500)
    b2 = M.metric_block(items, "mean", seed=7, n_boot=500)
    assert b1["accuracy_ci"] == b2["accuracy_ci"]  # same seed, same interval
    lo, hi = b1["accuracy_ci"]
    p = b1["accuracy"]
    # Normal approximation: width ~ 2 * 1.96 * sqrt(p (1 - p) / 40) ~ 0.31 at p ~ 0.5
    expected = 2 * 1.96 * np.sqrt(p * (1 - p) / 40)
    assert lo < p < hi and abs((hi - lo) - expected) < 0.1


def test_bootstrap_of_constant_values_is_a_point():
    values = {"x": np.ones((2, 10))}
    assert S.bootstrap_ci(values, {"x": 1.0}, np.random.default_rng(0), n_boot=20) == [(1.0, 1.0), (1.0, 1.0)]


RNG = np.random.default_rng


# (case, n items, min_n, interval given): the small-n rule counts units (items, or clusters).
SMALL_N = [
    ("below the rule", S.MIN_CI_N - 1, S.MIN_CI_N, False),
    ("at the rule", S.MIN_CI_N, S.MIN_CI_N, True),
    ("n = 3, the issue's case", 3, S.MIN_CI_N, False),
    ("n = 1 with the rule off", 1, 1, True),
]


@pytest.mark.parametrize("n,min_n,given", [c[1:] for c in SMALL_N], ids=[c[0] for c in SMALL_N])
def test_small_n_rule(n, min_n, given):
    values = {"x": np.array([[k % 2 for k in range(n)]], dtype=float)}
    (ci,) = S.bootstrap_ci(values, {"x": 1.0}, RNG(0), 50, min_n=min_n)
    assert (ci is not None) == given
    # with clusters the rule counts clusters: n items in 2 clusters are 2 units
    (ci,) = S.bootstrap_ci(values, {"x": 1.0}, RNG(0), 50, clusters={"x": [k % 2 for k in range(n)]},
                           min_n=min_n)
    assert (ci is not None) == (min(n, 2) >= min_n)


def test_percentile_ci_drops_replicates_without_a_value():
    # a replicate that drew no item of a stratum is NaN; the interval is of the rest, None if nothing is left
    assert S.percentile_ci(np.array([[np.nan, 0.5, 0.5]]), n=10) == [(0.5, 0.5)]
    assert S.percentile_ci(np.array([[np.nan, np.nan]]), n=10) == [None]


def _replicate_values(values, clusters, weights=None, n_boot=400, units=None):
    weights = weights or dict.fromkeys(values, 1.0 / len(values))
    arr = S.bootstrap_samples({k: np.array([v], dtype=float) for k, v in values.items()}, weights, RNG(0), n_boot,
                              clusters=clusters, units=units)[0]
    return sorted({round(float(x), 6) for x in arr[np.isfinite(arr)]})


# (case, stratum -> item values, stratum -> clusters, every value a replicate can take: worked by hand)
CLUSTER_CASES = [
    # one cluster holds every item: each replicate draws it K = 1 time -> the sample mean, always
    ("one cluster", {"x": [0, 1, 1, 0]}, {"x": ["q"] * 4}, [0.5]),
    # two constant clusters of 2: draws (q1,q1) -> 1, (q1,q2) or (q2,q1) -> 0.5, (q2,q2) -> 0
    ("two constant clusters", {"x": [1, 1, 0, 0]}, {"x": ["q1", "q1", "q2", "q2"]}, [0.0, 0.5, 1.0]),
    # unequal sizes, a ratio estimator: q1 has 1 item (1), q2 has 3 (0): (q1,q1) -> 1, mixed -> 1/4, (q2,q2) -> 0
    ("unequal clusters", {"x": [1, 0, 0, 0]}, {"x": ["q1", "q2", "q2", "q2"]}, [0.0, 0.25, 1.0]),
    # every item its own cluster, items 1 and 0: the item bootstrap's values, 0, 1/2, 1
    ("singleton clusters", {"x": [1, 0]}, {"x": ["a", "b"]}, [0.0, 0.5, 1.0]),
    # a question spans strata: q1 is 1 in both attacks, q2 0 in both; drawn together, the pooled mean takes
    # only 0, 1/2, 1 (resampling each attack on its own would also give 1/4 and 3/4)
    ("clusters across strata", {"x": [1, 0], "y": [1, 0]}, {"x": ["q1", "q2"], "y": ["q1", "q2"]}, [0.0, 0.5, 1.0]),
    # x only from q1, y only from q2: a replicate without q2 has no y (NaN, left out); mixed -> (1 + 0)/2
    ("a stratum missing from a replicate", {"x": [1], "y": [0]}, {"x": ["q1"], "y": ["q2"]}, [0.5]),
]


@pytest.mark.parametrize("values,clusters,possible", [c[1:] for c in CLUSTER_CASES], ids=[c[0] for c in CLUSTER_CASES])
def test_cluster_bootstrap_hand_worked(values, clusters, possible):
    assert _replicate_values(values, clusters) == possible


def test_cluster_bootstrap_units_without_items_take_their_draws():
    # units q1..q3, only q1 has an item (1): a replicate is 1 when it drew q1, else it has no item (NaN)
    assert _replicate_values({"x": [1]}, {"x": ["q1"]}, units=["q1", "q2", "q3"]) == [1.0]
    # the interval of two constant clusters over many replicates spans both: [0, 1]
    values = {"x": np.array([[1.0] * 5 + [0.0] * 5])}
    (ci,) = S.bootstrap_ci(values, {"x": 1.0}, RNG(0), 2000, clusters={"x": ["q1"] * 5 + ["q2"] * 5}, min_n=2)
    assert ci == (0.0, 1.0)


def test_cluster_bootstrap_is_seeded_and_wider_than_the_pair_bootstrap():
    # 12 questions x 6 pairs each; a question's pairs share its outcome (all 1 or all 0): the pairs are
    # 72 but the independent units are 12, so the honest interval is much wider than the pair one.
    outcome = [k % 2 for k in range(12)]
    values = {"x": np.array([[float(outcome[q]) for q in range(12) for _ in range(6)]])}
    clusters = {"x": [q for q in range(12) for _ in range(6)]}
    (c1,) = S.bootstrap_ci(values, {"x": 1.0}, RNG(1), 1000, clusters=clusters)
    (c2,) = S.bootstrap_ci(values, {"x": 1.0}, RNG(1), 1000, clusters=clusters)
    (pairs,) = S.bootstrap_ci(values, {"x": 1.0}, RNG(1), 1000)
    assert c1 == c2
    assert (c1[1] - c1[0]) > 1.8 * (pairs[1] - pairs[0])  # ~ sqrt(6) wider


def test_bootstrap_without_clusters_is_the_item_bootstrap():
    # clusters of one item each, drawn within one stratum: the same replicates as the item bootstrap
    values = {"x": np.array([[1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0]])}
    plain = S.bootstrap_samples(values, {"x": 1.0}, RNG(5), 300)
    clustered = S.bootstrap_samples(values, {"x": 1.0}, RNG(5), 300, clusters={"x": list(range(10))})
    assert np.allclose(plain, clustered)


@pytest.mark.parametrize("n,ks", [(1, [1]), (2, [1, 2]), (3, [1, 2, 3]), (8, [1, 2, 4, 8]), (10, [1, 2, 4, 8, 10])])
def test_scaling_ks(n, ks):
    assert M.scaling_ks(n) == ks


def test_empty_input_raises():
    with pytest.raises(ValueError):
        M.metric_block([], "mean")
    with pytest.raises(ValueError):
        M.rates([])
    with pytest.raises(ValueError):
        M.scaling_ks(0)
    with pytest.raises(ValueError):
        M.category_weights({}, "mean")


def test_category_blocks_keep_rules():
    items = [one("knowledge", pw("A", "A", "invalid"), "1"), one("math", pw("B", "A", "A"), "2")]
    blocks = M.category_blocks(items, "judgebench", n_boot=10)
    assert blocks["knowledge"]["accuracy"] == 1.0 and blocks["math"]["accuracy"] == 0.0
    rb = M.category_blocks([one("hep-go", pw("A", "A", "B"), "1")], "rewardbench", n_boot=10)
    assert "sections" not in rb["hep-go"] and rb["hep-go"]["accuracy"] == 0.5
