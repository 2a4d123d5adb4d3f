"""``j1.integrations.trl.JudgeReward``: a judge as a GRPOTrainer reward (TRL 1.16's call), against a
scripted upstream, a ``j1 serve`` on loopback and the tiny model; picklable; a 2-step GRPO run."""

from __future__ import annotations

import pickle

import pytest
from fake_openai import FakeOpenAIServer
from serve.serving import prefers_paris, running_app, scores_paris

from j1 import load_judge
from j1.integrations.trl import JudgeReward, prompt_text

PROMPTS = ["Capital of France?"] * 3
COMPLETIONS = ["It is Paris.", "Lyon.", "Marseille."]
REFERENCES = ["Lyon.", "Paris.", "Lyon."]


class Metrics:
    """Stands in for TRL's ``log_metric``."""

    def __init__(self):
        self.logged: dict[str, float] = {}

    def __call__(self, name: str, value: float) -> None:
        self.logged[name] = value


@pytest.mark.parametrize("prompt, text", [
    ("plain", "plain"),
    ([{"role": "user", "content": "Hi?"}], "Hi?"),
    ([{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi?"}], "Hi?"),
    ([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}],
     "user: a\n\nassistant: b\n\nuser: c"),
    ([{"role": "user", "content": None}], ""),
    ([], ""),
])
def test_prompt_text(prompt, text):
    assert prompt_text(prompt) == text


def test_pairwise_against_the_reference_column_in_both_orders():
    metrics = Metrics()
    with FakeOpenAIServer(prefers_paris) as upstream:
        reward = JudgeReward(base_url=upstream.base_url, reference_column="answer")
        # TRL's call: every dataset column, plus its own keywords (ignored)
        got = reward(prompts=PROMPTS, completions=[[{"role": "assistant", "content": c}] for c in COMPLETIONS],
                     completion_ids=[[1]] * 3, answer=REFERENCES, trainer_state=None, log_extra=print,
                     log_metric=metrics)
        reward.close()
    # As j1 serve's hand-worked case: preferred in both orders, in neither, in one (a flip).
    assert got == [1.0, 0.0, 0.5]
    assert metrics.logged == {"judge/invalid_rate": 0.0, "judge/flip_rate": pytest.approx(1 / 3)}
    assert reward.last_logs["n"] == 3


def test_pointwise_scores_over_ten_and_keeps_the_logs_without_log_metric():
    with FakeOpenAIServer(scores_paris) as upstream:
        reward = JudgeReward(mode="pointwise", base_url=upstream.base_url, name="pos_judge")
        got = reward(PROMPTS, ["Paris.", "Lyon.", "???"])
    assert got == [0.8, 0.3, 0.0]
    assert reward.last_logs == {"invalid_rate": pytest.approx(1 / 3), "n": 3}
    assert reward.__name__ == "pos_judge"


def test_through_j1_serve():
    with FakeOpenAIServer(prefers_paris) as upstream, load_judge(base_url=upstream.base_url) as judge, \
            running_app(judge, api_key="k") as (url, _):
        reward = JudgeReward(serve_url=url + "/", api_key="k")
        metrics = Metrics()
        assert reward(PROMPTS, COMPLETIONS, reference=REFERENCES, log_metric=metrics) == [1.0, 0.0, 0.5]
        assert metrics.logged["judge/flip_rate"] == pytest.approx(1 / 3)
        copy = pickle.loads(pickle.dumps(reward))  # an open HTTP pool stays behind
        assert copy._client is None and copy(PROMPTS[:1], COMPLETIONS[:1], reference=REFERENCES[:1]) == [1.0]
        with pytest.raises(ValueError, match="judges with format 'pav'; use mode='pairwise'"):
            JudgeReward(mode="pointwise", serve_url=url, api_key="k")(PROMPTS, COMPLETIONS)
        with pytest.raises(RuntimeError, match="HTTP 401"):
            JudgeReward(serve_url=url, api_key="wrong", max_retries=0)(PROMPTS, COMPLETIONS, reference=REFERENCES)


def test_a_local_judge_loads_on_first_call_and_pickles_without_it(tiny_model, one_torch_thread):
    reward = JudgeReward(str(tiny_model), max_new_tokens=4)
    before = pickle.dumps(reward)
    assert len(before) < 2000 and reward._judge is None
    got = reward(PROMPTS[:2], COMPLETIONS[:2], reference=REFERENCES[:2])
    assert len(got) == 2 and all(0.0 <= r <= 1.0 for r in got) and reward._judge is not None
    copy = pickle.loads(pickle.dumps(reward))
    assert copy._judge is None and copy.overrides == {"max_new_tokens": 4}
    assert copy(PROMPTS[:2], COMPLETIONS[:2], reference=REFERENCES[:2]) == got  # greedy: the same rewards
    reward.close()


@pytest.mark.parametrize("kwargs, message", [
    (dict(mode="listwise"), "mode 'listwise': choose one of"),
    (dict(base_url="http://a/v1", serve_url="http://b"), "keep one"),
    (dict(judge="j1-135m", serve_url="http://b"), "the server's judge and settings apply"),
    (dict(serve_url="http://b", samples=3), "the server's judge and settings apply"),
])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        JudgeReward(**kwargs)


def test_a_missing_reference_column_or_a_wrong_format_is_named():
    with FakeOpenAIServer(prefers_paris) as upstream:
        with pytest.raises(KeyError, match="dataset column 'reference'"):
            JudgeReward(base_url=upstream.base_url)(PROMPTS, COMPLETIONS, answer=REFERENCES)
        with pytest.raises(ValueError, match="column 'reference' has no reference answer in rows \\[1\\]"):
            JudgeReward(base_url=upstream.base_url)(PROMPTS[:2], COMPLETIONS[:2], reference=["Lyon.", None])
        with pytest.raises(ValueError, match="with a 'pos' judge: use mode='pointwise'"):
            JudgeReward(base_url=upstream.base_url, format="pos")(PROMPTS, COMPLETIONS, reference=REFERENCES)


def _two_grpo_steps(tiny_model, reward, data, out) -> list[dict]:
    """Two steps of TRL's GRPOTrainer on the tiny policy with ``reward``: the logged rows of the steps."""
    from trl import GRPOConfig, GRPOTrainer

    from j1.models import load_tokenizer

    args = GRPOConfig(output_dir=str(out), max_steps=2, per_device_train_batch_size=4, num_generations=2,
                      max_completion_length=4, bf16=False, use_cpu=True, report_to="none", logging_steps=1,
                      dataloader_num_workers=0, save_strategy="no", seed=0)
    trainer = GRPOTrainer(model=str(tiny_model), reward_funcs=[reward], args=args, train_dataset=data,
                          processing_class=load_tokenizer(str(tiny_model)))
    trainer.train()
    return [row for row in trainer.state.log_history if "loss" in row]


def test_two_grpo_steps_with_the_judge_as_reward(tiny_model, one_torch_thread, tmp_path):
    """TRL 1.16's GRPOTrainer calls the reward with the dataset's columns and log_metric; the tiny model is
    the policy, the scripted judge says [[A]] whatever it sees (always the first shown response)."""
    from datasets import Dataset

    data = Dataset.from_list([{"prompt": f"Question {i}?", "reference": f"Answer {i}."} for i in range(4)])
    with FakeOpenAIServer() as upstream:
        reward = JudgeReward(base_url=upstream.base_url)
        pickle.loads(pickle.dumps(reward))
        steps = _two_grpo_steps(tiny_model, reward, data, tmp_path)
    assert len(steps) == 2
    for row in steps:
        # A in both orders: the completion wins AB, the reference BA: 1 of 2 for every completion, all flips
        assert row["rewards/judge/mean"] == 0.5
        assert row["judge/flip_rate"] == 1.0 and row["judge/invalid_rate"] == 0.0
    assert len(upstream.requests) == 2 * 4 * 2  # steps x completions x orders


GROUP_PROMPTS = ["Capital of France?"] * 3 + ["Capital of Italy?"] * 2
GROUP_COMPLETIONS = ["It is Paris.", "Lyon.", "???", "Rome.", "Berlin."]


def _expected_group(got, logs):
    # France: Paris beats Lyon in both orders (2/2 and 0/2); '???' makes every pair with it invalid, so it
    # has no valid vote (0.5). Italy: no Paris, the scripted judge says A in both orders: a flip, 1 of 2 each.
    assert got == [1.0, 0.0, 0.5, 0.5, 0.5]
    assert logs["invalid_rate"] == pytest.approx(4 / 8) and logs["flip_rate"] == 0.5
    assert logs["no_contest_rate"] == pytest.approx(1 / 5) and logs["comparisons"] == 4


def test_group_mode_win_rates_without_a_reference():
    metrics = Metrics()
    with FakeOpenAIServer(prefers_paris) as upstream:
        reward = JudgeReward(base_url=upstream.base_url, mode="group")
        got = reward(prompts=GROUP_PROMPTS, completions=GROUP_COMPLETIONS, log_metric=metrics)
        assert len(upstream.requests) == 4 * 2  # 3 + 1 pairs, both orders
        reward.close()
    _expected_group(got, reward.last_logs)
    assert metrics.logged["judge/no_contest_rate"] == pytest.approx(1 / 5)
    with FakeOpenAIServer(prefers_paris) as upstream:
        # one random opponent each in a group of 3: 2 or 3 distinct pairs, not all 3 every time
        JudgeReward(base_url=upstream.base_url, mode="group", opponents=1)(GROUP_PROMPTS[:3], GROUP_COMPLETIONS[:3])
        assert len(upstream.requests) in (4, 6)


def test_group_mode_through_j1_serve_without_labels():
    with FakeOpenAIServer(prefers_paris) as upstream, load_judge(base_url=upstream.base_url) as judge, \
            running_app(judge) as (url, _):
        reward = JudgeReward(serve_url=url, mode="group")
        got = reward(GROUP_PROMPTS, GROUP_COMPLETIONS)
    _expected_group(got, reward.last_logs)
    assert reward.last_logs["pair_error_rate"] == 0.0
    # the server's --group_opponents: one random opponent each among 3 -> 2 or 3 pairs, 2 orders each
    with FakeOpenAIServer(prefers_paris) as upstream, load_judge(base_url=upstream.base_url) as judge, \
            running_app(judge, group_opponents=1) as (url, _):
        JudgeReward(serve_url=url, mode="group")(GROUP_PROMPTS[:3], GROUP_COMPLETIONS[:3])
        assert len(upstream.requests) in (4, 6)


@pytest.mark.parametrize("kwargs, message", [
    (dict(mode="group", opponents=0), "opponents 0: an integer >= 1"),
    (dict(opponents=2), "opponents applies to mode='group' only"),
    (dict(mode="group", opponents=2, serve_url="http://b"), "--group_opponents applies"),
])
def test_bad_group_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        JudgeReward(**kwargs)


def test_two_grpo_steps_with_the_group_reward(tiny_model, one_torch_thread, tmp_path):
    """mode='group' in GRPO: each of a prompt's 2 generations meets the other in both orders; the scripted
    judge says [[A]] whatever it sees, so every pair is a flip and every reward 0.5."""
    from datasets import Dataset

    data = Dataset.from_list([{"prompt": f"Question {i}?"} for i in range(4)])
    with FakeOpenAIServer() as upstream:
        reward = JudgeReward(base_url=upstream.base_url, mode="group")
        steps = _two_grpo_steps(tiny_model, reward, data, tmp_path)
    assert len(steps) == 2
    for row in steps:
        assert row["rewards/judge/mean"] == 0.5 and row["judge/flip_rate"] == 1.0
    assert len(upstream.requests) == 2 * 2 * 2  # steps x groups (4 completions, 2 per prompt) x orders


def test_two_online_dpo_steps_with_the_group_reward(tiny_model, one_torch_thread, tmp_path, monkeypatch):
    """TRL 1.16's experimental OnlineDPOTrainer takes reward functions (no judge argument): it generates two
    completions per prompt (rows i and i + B of the reward call) and keeps the higher reward as chosen, so
    mode='group' compares exactly that pair, in both orders."""
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from trl.experimental.online_dpo import OnlineDPOConfig, OnlineDPOTrainer

    from j1.models import load_tokenizer

    data = Dataset.from_list([{"prompt": f"Question {i}?"} for i in range(2)])
    with FakeOpenAIServer(prefers_paris) as upstream:
        reward = JudgeReward(base_url=upstream.base_url, mode="group")
        args = OnlineDPOConfig(output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=2,
                               max_new_tokens=4, bf16=False, use_cpu=True, report_to="none", logging_steps=1,
                               dataloader_num_workers=0, save_strategy="no", seed=0)
        trainer = OnlineDPOTrainer(model=str(tiny_model), reward_funcs=[reward], args=args, train_dataset=data,
                                   processing_class=load_tokenizer(str(tiny_model)))
        trainer.train()
    steps = [row for row in trainer.state.log_history if "loss" in row]
    assert len(steps) == 2
    assert len(upstream.requests) == 2 * 2 * 2  # steps x prompts (one pair each) x orders
    assert reward.last_logs["comparisons"] == 2 and reward.last_logs["n"] == 4
