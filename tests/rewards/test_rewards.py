"""Table tests for the J1 rewards, with hand-worked numbers in the comments."""

from __future__ import annotations

import pickle

import pytest

from j1.rewards import (
    ConsistencyReward,
    CorrectnessReward,
    FormatReward,
    Rollout,
    batch_metrics,
    check_rollout,
    judge_rollout,
    make_reward_funcs,
    score_rollouts,
)
from j1.rewards.core import shown_positions

A = "<think>compare</think><answer>[[A]]</answer>"
B = "<think>compare</think><answer>[[B]]</answer>"
BAD = "[[A]]"  # no think block, no answer tag: invalid


def S(a, b, verdict=None):
    text = f"<think>t</think><score_A>{a}</score_A> <score_B>{b}</score_B>"
    return text + (f"<answer>[[{verdict}]]</answer>" if verdict else "")


def P(s):
    return f"<think>t</think><score>{s}</score>"


def rolls(fmt, label, spec, pair="p"):
    """spec: [(order, completion), ...] -> Rollouts of one pair."""
    return [Rollout(pair, order, label, text, fmt) for order, text in spec]


def triples(parts):
    return [(p.correctness, p.consistency, p.total) for p in parts]


# --- pairwise verdict (pav) ---------------------------------------------------------------------
# Pair p, better response = A (AB naming).
# AB rollouts say [A, A, B, BAD]   -> correctness [1, 1, 0, 0] (shown A = original A)
# BA rollouts say [B, A]           -> shown B is original A -> correctness [1, 0]
PAV_SPEC = [("AB", A), ("AB", A), ("AB", B), ("AB", BAD), ("BA", B), ("BA", A)]

PAV_CASES = [
    # expected: AB consistency = c x mean(BA) = c x 0.5; BA consistency = c x mean(AB) = c x 0.5
    ("expected", [(1, 0.5, 1.5), (1, 0.5, 1.5), (0, 0.0, 0.0), (0, 0.0, 0.0), (1, 0.5, 1.5), (0, 0.0, 0.0)]),
    # index: AB0&BA0 = 1x1; AB1&BA1 = 1x0; AB2, AB3 have no BA partner (only 2 BA rollouts) -> None
    ("index", [(1, 1, 2), (1, 0, 1), (0, None, 0), (0, None, 0), (1, 1, 2), (0, 0, 0)]),
]


@pytest.mark.parametrize("mode,expected", PAV_CASES)
def test_pav_correctness_and_consistency(mode, expected):
    assert triples(score_rollouts(rolls("pav", "A", PAV_SPEC), consistency=mode)) == expected


def test_pav_label_b_mirrors():
    # better = B. AB says B -> 1; BA says A (shown A is original B) -> 1: consistent, 1 + 1x1 = 2.
    parts = score_rollouts(rolls("pav", "B", [("AB", B), ("BA", A)]))
    assert triples(parts) == [(1, 1, 2), (1, 1, 2)]


def test_position_bias_gets_no_consistency():
    # A judge that always says "A" (the first shown): right in AB, wrong in BA; never consistent.
    parts = score_rollouts(rolls("pav", "A", [("AB", A), ("AB", A), ("BA", A), ("BA", A)]))
    assert triples(parts) == [(1, 0, 1), (1, 0, 1), (0, 0, 0), (0, 0, 0)]


def test_weights():
    # correct and consistent: 2 x 1 + 0.5 x 1 = 2.5; second pair wrong everywhere: 0.
    parts = score_rollouts(
        rolls("pav", "A", [("AB", A), ("BA", B)]) + rolls("pav", "A", [("AB", B), ("BA", A)], pair="q"),
        w_correct=2.0, w_consistency=0.5,
    )
    assert [p.total for p in parts] == [2.5, 2.5, 0.0, 0.0]


def test_missing_partner_order_gives_none_consistency():
    parts = score_rollouts(rolls("pav", "A", [("AB", A), ("AB", B)]))
    assert triples(parts) == [(1, None, 1), (0, None, 0)]


def test_pairs_do_not_mix():
    # Same orders, different pair ids: p is consistent, q is not, and neither leaks into the other.
    batch = rolls("pav", "A", [("AB", A), ("BA", B)]) + rolls("pav", "A", [("AB", A), ("BA", A)], pair="q")
    assert [p.consistency for p in score_rollouts(batch)] == [1, 1, 0, 0]


@pytest.mark.parametrize(
    "text",
    ["", BAD, "<think>never closed <answer>[[A]]</answer>", "<think>[[A]] inside</think>",
     "<think>t</think><answer>[[A]]</answer><answer>[[B]]</answer>", "<think>x</think><answer>[[C]]</answer>",
     "<think>日本語</think><answer>[[Ａ]]</answer>", "<think>t</think>[[A]]"],
)
def test_unparseable_is_zero_never_half(text):
    parts = score_rollouts(rolls("pav", "A", [("AB", text), ("BA", B)]))
    assert parts[0].correctness == 0.0 and parts[0].consistency == 0.0 and parts[0].total == 0.0
    # the right BA rollout keeps correctness 1 but gets consistency 1 x mean([0]) = 0
    assert triples(parts)[1] == (1, 0, 1)


def test_unicode_thought_is_fine():
    parts = score_rollouts(rolls("pav", "A", [("AB", "<think>Ответ 🙂 A</think><answer>[[A]]</answer>"), ("BA", B)]))
    assert triples(parts) == [(1, 1, 2), (1, 1, 2)]


# --- pairwise scores (pas) and scores & verdict (pavs) ------------------------------------------
PAS_CASES = [
    # (order, completion, label, correctness)
    ("AB", S(7, 3), "A", 1.0),  # 7 > 3, A better
    ("AB", S(7, 3), "B", 0.0),
    ("AB", S(5, 5), "A", 0.0),  # equal scores: tie -> 0
    ("BA", S(2, 8), "A", 1.0),  # shown B (=original A) scored 8 > 2
    ("BA", S(8, 2), "A", 0.0),
    ("AB", S(11, 3), "A", 0.0),  # out of [0, 10]: invalid
    ("AB", S("7/10", "3.5"), "A", 1.0),
    ("AB", S("seven", 3), "A", 0.0),
]


@pytest.mark.parametrize("order,text,label,expected", PAS_CASES)
def test_pas_score_comparison(order, text, label, expected):
    (part,) = score_rollouts([Rollout("p", order, label, text, "pas")], w_consistency=0.0)
    assert part.correctness == expected and part.total == expected


def test_pavs_verdict_comes_from_answer_tag():
    # Scores say B (2 < 9) but the answer tag says A: J1 takes the tag, so label A is correct.
    parts = score_rollouts(rolls("pavs", "A", [("AB", S(2, 9, "A")), ("BA", S(9, 2, "B"))]))
    assert triples(parts) == [(1, 1, 2), (1, 1, 2)]
    # Missing scores make a pavs output invalid even with a good answer tag.
    (bad,) = score_rollouts([Rollout("p", "AB", "A", A, "pavs")])
    assert bad.correctness == 0.0


# --- pointwise (pos) ----------------------------------------------------------------------------
# Pair p, better = A. Slot A rollouts score [8, 4, BAD]; slot B rollouts [5, 7].
# expected: A vs mean(B) = 6 -> [8>6, 4>6, invalid] = [1, 0, 0];
#           B vs mean of A's valid scores (8+4)/2 = 6 -> worse should be lower: [5<6, 7<6] = [1, 0]
# index:    A0=8 vs B0=5 -> 1; A1=4 vs B1=7 -> 0; A2 invalid -> 0; B0=5 vs A0=8 -> 1; B1=7 vs A1=4 -> 0
POS_SPEC = [("A", P(8)), ("A", P(4)), ("A", BAD), ("B", P(5)), ("B", P(7))]


@pytest.mark.parametrize("mode,expected", [("expected", [1, 0, 0, 1, 0]), ("index", [1, 0, 0, 1, 0])])
def test_pos_ranking(mode, expected):
    parts = score_rollouts(rolls("pos", "A", POS_SPEC), consistency=mode)
    assert [p.correctness for p in parts] == expected
    assert all(p.consistency is None for p in parts)
    assert [p.total for p in parts] == expected


def test_pos_modes_differ():
    # A (better): [6, 6]; B: [2, 9].
    # expected: A vs mean(B) = 5.5 -> [1, 1]; B vs mean(A) = 6 -> [2<6, 9<6] = [1, 0]
    # index:    A0=6 vs B0=2 -> 1; A1=6 vs B1=9 -> 0; B0=2 vs A0=6 -> 1; B1=9 vs A1=6 -> 0
    spec = [("A", P(6)), ("A", P(6)), ("B", P(2)), ("B", P(9))]
    exp = [p.correctness for p in score_rollouts(rolls("pos", "A", spec), consistency="expected")]
    idx = [p.correctness for p in score_rollouts(rolls("pos", "A", spec), consistency="index")]
    assert exp == [1, 1, 1, 0]
    assert idx == [1, 0, 1, 0]


def test_pos_ties_and_missing_partner():
    # equal scores rank nothing -> 0; a slot whose partner slot is absent or all invalid -> 0
    tie = score_rollouts(rolls("pos", "B", [("A", P(5)), ("B", P(5))]))
    assert [p.total for p in tie] == [0, 0]
    alone = score_rollouts(rolls("pos", "A", [("A", P(9))]))
    assert [p.total for p in alone] == [0]
    partner_invalid = score_rollouts(rolls("pos", "A", [("A", P(9)), ("B", BAD)]))
    assert [p.total for p in partner_invalid] == [0, 0]


def test_multitask_formats_do_not_interact():
    # pas and pos rows of the same pair id are separate groups: pos rollout A has no pos partner
    # -> 0, even though pas rows of pair p are present.
    batch = [Rollout("p", "AB", "A", S(8, 1), "pas"), Rollout("p", "BA", "A", S(1, 8), "pas"),
             Rollout("p", "A", "A", P(9), "pos")]
    assert [p.correctness for p in score_rollouts(batch)] == [1, 1, 0]


# --- validation ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "rollout,msg",
    [
        (Rollout("p", "A", "A", A, "pav"), "order 'A' is not valid for format 'pav'"),
        (Rollout("p", "AB", "A", A, "pos"), "order 'AB' is not valid for format 'pos'"),
        (Rollout("p", "AB", "tie", A, "pav"), "label 'tie'"),
        (Rollout("p", "AB", "A", A, "xyz"), "unknown format 'xyz'"),
    ],
)
def test_check_rollout(rollout, msg):
    with pytest.raises(ValueError, match=msg):
        check_rollout(rollout)


def test_bad_consistency_mode():
    with pytest.raises(ValueError, match="consistency 'both'"):
        score_rollouts([], consistency="both")
    with pytest.raises(ValueError, match="consistency 'both'"):
        CorrectnessReward("pav", "both")


# --- TRL wrappers -----------------------------------------------------------------------------
def _trl_kwargs(spec, label="A"):
    return dict(
        completions=[[{"role": "assistant", "content": text}] for _, text in spec],
        pair_id=[7] * len(spec), order=[o for o, _ in spec], label=[label] * len(spec),
        # what TRL adds beyond the dataset columns; all must be ignored
        prompts=[[{"role": "user", "content": "x"}]] * len(spec), completion_ids=[[1]] * len(spec),
        trainer_state=object(), log_extra=lambda *a: None, unrelated_column=["z"] * len(spec),
    )


def test_trl_functions_match_core_and_ignore_extra_kwargs():
    kw = _trl_kwargs(PAV_SPEC)
    assert CorrectnessReward("pav")(**kw) == [1, 1, 0, 0, 1, 0]
    assert ConsistencyReward("pav")(**kw) == [0.5, 0.5, 0, 0, 0.5, 0]
    assert ConsistencyReward("pav", "index")(**kw) == [1, 0, None, None, 1, 0]
    assert FormatReward("pav")(**kw) == [1, 1, 1, 0, 1, 1]


def test_a_prefill_in_the_prompt_is_read_before_the_completion():
    """With ``--assistant_prefill`` the prompt ends in the start of the answer and TRL's completion is
    only the rest: the verdict is parsed from prefill + completion (PAV_SPEC again, split in two)."""
    head = "<think>compare</think><answer>[["
    kw = _trl_kwargs([(o, text.removeprefix(head)) for o, text in PAV_SPEC])
    kw["prompts"] = [[{"role": "user", "content": "x"}, {"role": "assistant", "content": head}]] * len(PAV_SPEC)
    kw["prompts"][3] = [{"role": "user", "content": "x"}]  # BAD has no prefill: still invalid
    assert CorrectnessReward("pav")(**kw) == [1, 1, 0, 0, 1, 0]
    assert ConsistencyReward("pav", "index")(**kw) == [1, 0, None, None, 1, 0]
    # the same completions without the prefill have no answer tag: all invalid
    bare = _trl_kwargs([(o, text.removeprefix(head)) for o, text in PAV_SPEC])
    assert FormatReward("pav")(**bare) == [0] * 6
    # plain-text prompts (not chat messages) carry no prefill
    assert CorrectnessReward("pav")(**_trl_kwargs(PAV_SPEC) | {"prompts": ["x"] * 6}) == [1, 1, 0, 0, 1, 0]


def test_trl_function_reads_row_format_column():
    spec = [("AB", S(8, 1)), ("BA", S(1, 8))]
    kw = _trl_kwargs(spec) | {"judge_format": ["pas", "pas"]}
    assert CorrectnessReward("pav")(**kw) == [1, 1]  # parsed as pas despite the pav default


def test_trl_function_logs_metrics():
    logged = {}
    CorrectnessReward("pav")(**_trl_kwargs(PAV_SPEC), log_metric=lambda k, v: logged.__setitem__(k, v))
    # acc/AB = 2/4; acc/BA = 1/2; invalid 1/6; flip: (AB0=A, BA0=A) same, (AB1=A, BA1=B) flip -> 1/2
    assert logged["j1/acc/AB"] == 0.5 and logged["j1/acc/BA"] == 0.5
    assert logged["j1/invalid_rate"] == pytest.approx(1 / 6)
    assert logged["j1/flip_rate"] == 0.5
    assert logged["j1/missing_partner"] == 0.0


def test_trl_function_names_missing_column():
    with pytest.raises(KeyError, match="pair_id"):
        CorrectnessReward("pav")(completions=[A], order=["AB"], label=["A"])


@pytest.mark.parametrize("cls", [CorrectnessReward, ConsistencyReward, FormatReward])
def test_reward_is_picklable(cls):
    fn = cls("pavs", "index")
    clone = pickle.loads(pickle.dumps(fn))
    kw = _trl_kwargs([("AB", S(8, 1, "A")), ("BA", S(1, 8, "B"))])
    assert clone(**kw) == fn(**kw) and clone.__name__ == fn.__name__


@pytest.mark.parametrize(
    "formulation,names,weights",
    [
        ("pav", ["correctness", "consistency"], [1.0, 1.0]),
        ("pavs", ["correctness", "consistency"], [1.0, 1.0]),
        ("pas", ["correctness"], [1.0]),
        ("pos", ["correctness"], [1.0]),
        ("multitask", ["correctness"], [1.0]),
    ],
)
def test_make_reward_funcs_defaults(formulation, names, weights):
    funcs, w = make_reward_funcs(formulation)
    assert [f.__name__ for f in funcs] == names and w == weights


def test_make_reward_funcs_format_switch():
    funcs, w = make_reward_funcs("pav", w_consistency=0.5, w_format=0.2)
    assert [f.__name__ for f in funcs] == ["correctness", "consistency", "format"] and w == [1.0, 0.5, 0.2]


# --- metrics ----------------------------------------------------------------------------------
def test_batch_metrics_hand_worked():
    r = rolls("pav", "A", PAV_SPEC)
    j = [judge_rollout(x) for x in r]
    m = batch_metrics(r, j, score_rollouts(r))
    # shown verdicts (valid): AB [A, A, B], BA [B, A] -> A shown 3 of 5
    assert m["shown_A_share"] == pytest.approx(3 / 5)
    assert m["thought_words"] == 1.0  # "compare" in each of the 5 valid ones
    assert m["acc/AB"] == 0.5 and m["acc/BA"] == 0.5 and m["flip_rate"] == 0.5
    assert "acc/pos" not in m


def test_batch_metrics_empty_raises():
    with pytest.raises(ValueError, match="empty"):
        batch_metrics([], [], [])


# Which shown position a verdict names: +1 first shown, -1 second shown, 0 none. The ORDER does not
# matter (it is the position as shown); ties, invalid output and pointwise rollouts name none.
SHOWN_POSITION_CASES = [
    ("pav", "AB", A, 1.0),
    ("pav", "BA", A, 1.0),
    ("pav", "AB", B, -1.0),
    ("pav", "BA", B, -1.0),
    ("pav", "AB", BAD, 0.0),
    ("pav", "AB", "<think>t</think><answer>[[C]]</answer>", 0.0),
    ("pas", "AB", S(7, 3), 1.0),
    ("pas", "BA", S(2, 9), -1.0),
    ("pas", "AB", S(5, 5), 0.0),  # equal scores: a tie
    ("pavs", "BA", S(2, 9, "A"), 1.0),  # the answer tag decides, as for the reward
    ("pos", "A", P(9), 0.0),
    ("pos", "B", P(1), 0.0),
]


@pytest.mark.parametrize("fmt,order,text,expected", SHOWN_POSITION_CASES)
def test_shown_positions(fmt, order, text, expected):
    assert shown_positions([Rollout("p", order, "A", text, fmt)]) == [expected]
