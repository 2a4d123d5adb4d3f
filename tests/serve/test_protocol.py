"""``j1.serve.protocol``: prompt-prefix stripping and the reward arithmetic, as tables."""

from __future__ import annotations

import pickle

import pytest

from j1.judging.judge import Judgment, OrderResult, Sample
from j1.serve.protocol import (
    ItemError,
    RequestError,
    Rewards,
    pairwise_reward,
    pairwise_rewards,
    pointwise_reward,
    pointwise_rewards,
    reward_answer,
    strip_prompt,
)


@pytest.mark.parametrize("query, prompt, response", [
    ("Q? A", "Q? ", "A"),
    ("Q?", "Q?", ""),                          # an empty response
    ("A", "", "A"),                            # an empty prompt
    ("<|user|>é?<|assistant|>ünï", "<|user|>é?<|assistant|>", "ünï"),  # unicode and chat markup
    ("Q? Q? A", "Q? ", "Q? A"),                # only the prefix goes, not later repeats
    ("Q?\n\nA\n", "Q?\n", "\nA\n"),            # whitespace kept as the policy wrote it
])
def test_strip_prompt(query, prompt, response):
    assert strip_prompt(query, prompt) == response


@pytest.mark.parametrize("query, prompt", [
    ("A", "Q? "),          # the prompt is missing
    ("q? A", "Q? "),       # case differs
    ("Q?A", "Q? "),        # a space differs
    ("", "Q?"),            # an empty query
    ("Q", "Q? "),          # the query is a strict prefix of the prompt
])
def test_strip_prompt_refuses_a_query_without_its_prompt(query, prompt):
    with pytest.raises(RequestError, match="does not start with its prompt"):
        strip_prompt(query, prompt)


@pytest.mark.parametrize("verdicts, reward", [
    (["A", "A"], 1.0),                        # preferred in both orders
    (["B", "B"], 0.0),                        # the reference preferred in both
    (["A", "B"], 0.5),                        # position bias: one order each
    (["A", "invalid"], 0.5),                  # invalid is not a preference
    (["invalid", "invalid"], 0.0),
    (["tie", "tie"], 0.0),                    # nor is a tie
    (["A", "A", "A", "B", "invalid", "tie"], 0.5),  # 3 samples per order: 3 of 6 prefer the response
    (["A"], 1.0),
])
def test_pairwise_reward(verdicts, reward):
    assert pairwise_reward(verdicts) == reward


def test_pairwise_reward_of_nothing_raises():
    with pytest.raises(ValueError, match="no judge samples"):
        pairwise_reward([])


@pytest.mark.parametrize("score, reward", [(10.0, 1.0), (0.0, 0.0), (7.5, 0.75), (None, 0.0)])
def test_pointwise_reward(score, reward):
    assert pointwise_reward(score) == reward


def _sample(verdict: str) -> Sample:
    return Sample(verdict, None, None, "", None if verdict != "invalid" else "no verdict")


def _judgment(ab: list[str], ba: list[str]) -> Judgment:
    """A pair judged with the response as A; per-order verdict = the samples' majority (as j1.judging.judge)."""
    from j1.judging.judge import majority

    orders = [OrderResult(o, majority(vs).value, [_sample(v) for v in vs]) for o, vs in (("AB", ab), ("BA", ba))]
    return Judgment("pav", "A", orders, None)


def test_pairwise_rewards_and_logs():
    judgments = [
        _judgment(["A"], ["A"]),              # 1.0, consistent
        _judgment(["A"], ["B"]),              # 0.5, flipped
        _judgment(["invalid"], ["B"]),        # 0.0, one invalid sample: not counted for flips
        _judgment(["A", "A"], ["A", "B"]),    # 3 of 4 = 0.75; BA's majority is a tie: a flip (A vs tie)
    ]
    got = pairwise_rewards(judgments)
    assert got.rewards == [1.0, 0.5, 0.0, 0.75]
    # 1 invalid of 1+1+1+1+1+1+2+2 = 10 samples; flips: items 2 and 4 of the 3 valid in both orders.
    assert got.logs == {"invalid_rate": 0.1, "flip_rate": pytest.approx(2 / 3), "n": 4}


def test_pointwise_rewards_and_logs():
    results = [
        {"score": 8.0, "samples": [Sample("A", {"A": 8.0}, None, "")]},
        {"score": None, "samples": [_sample("invalid"), _sample("invalid")]},
        {"score": 4.0, "samples": [Sample("A", {"A": 4.0}, None, ""), _sample("invalid")]},
    ]
    got = pointwise_rewards(results)
    assert got.rewards == [0.8, 0.0, 0.4]
    assert got.logs == {"invalid_rate": 3 / 5, "n": 3}  # 3 invalid of 5 samples


@pytest.mark.parametrize("fn", [pairwise_rewards, pointwise_rewards])
def test_rewards_of_nothing_raise(fn):
    with pytest.raises(ValueError, match="no judgments"):
        fn([])


def test_rewards_json_is_openrlhfs_answer_and_pickles():
    r = Rewards([1.0, 0.5], {"invalid_rate": 0.0, "n": 2})
    assert r.to_json() == {"rewards": [1.0, 0.5], "scores": [1.0, 0.5], "extra_logs": {"invalid_rate": 0.0, "n": 2}}
    assert pickle.loads(pickle.dumps(r)) == r


def _rewards(values: list[float], pairwise: bool = True) -> Rewards:
    logs = {"invalid_rate": 0.25, "flip_rate": 0.5} if pairwise else {"invalid_rate": 0.25}
    return Rewards(values, {**logs, "n": len(values)})


@pytest.mark.parametrize("rewards, judged, failed, error_reward, pairwise, truncated, values, logs", [
    # nothing failed: the judged rewards, the judge's rates, n of all items, no errors
    (_rewards([1.0, 0.5]), [0, 1], [], 0.0, True, 0, [1.0, 0.5],
     {"invalid_rate": 0.25, "flip_rate": 0.5, "n": 2, "error_rate": 0.0, "truncated_rate": 0.0}),
    # the middle item failed: it gets the error reward in its place; 1 of 3 failed, 1 of 3 shortened
    (_rewards([1.0, 0.5]), [0, 2], [1], -1.0, True, 1, [1.0, -1.0, 0.5],
     {"invalid_rate": 0.25, "flip_rate": 0.5, "n": 3, "error_rate": 1 / 3, "truncated_rate": 1 / 3}),
    # all failed: no judge rates to report (0.0), every item the error reward
    (None, [], [0, 1], 0.0, True, 0, [0.0, 0.0],
     {"invalid_rate": 0.0, "flip_rate": 0.0, "n": 2, "error_rate": 1.0, "truncated_rate": 0.0}),
    (None, [], [0], 0.25, False, 0, [0.25], {"invalid_rate": 0.0, "n": 1, "error_rate": 1.0, "truncated_rate": 0.0}),
    (_rewards([0.7], pairwise=False), [1], [0], 0.0, False, 0, [0.0, 0.7],
     {"invalid_rate": 0.25, "n": 2, "error_rate": 0.5, "truncated_rate": 0.0}),
])
def test_reward_answer_table(rewards, judged, failed, error_reward, pairwise, truncated, values, logs):
    errors = [ItemError(i, "context_length_exceeded", f"item {i}: too long") for i in reversed(failed)]
    out = reward_answer(rewards, judged, errors, n=len(values), error_reward=error_reward, pairwise=pairwise,
                        truncated=truncated)
    assert out["rewards"] == out["scores"] == values
    assert out["extra_logs"] == pytest.approx(logs)
    assert all(isinstance(v, (int, float)) for v in out["extra_logs"].values())  # OpenRLHF logs numbers
    assert out["errors"] == [{"index": i, "code": "context_length_exceeded", "message": f"item {i}: too long"}
                             for i in failed]  # in item order


@pytest.mark.parametrize("rewards, judged, failed, n, message", [
    (_rewards([1.0]), [0], [0], 1, "do not make 1"),      # an item both judged and failed
    (_rewards([1.0, 1.0]), [0], [1], 2, "2 rewards for 1 judged"),
    (None, [], [], 0, "no items"),
])
def test_reward_answer_refuses_inconsistent_parts(rewards, judged, failed, n, message):
    with pytest.raises(ValueError, match=message):
        reward_answer(rewards, judged, [ItemError(i, "x", "y") for i in failed], n=n, error_reward=0.0,
                      pairwise=True)
