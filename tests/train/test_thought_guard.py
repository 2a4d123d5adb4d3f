"""Sampled thoughts watched while J1 GRPO trains: their spread per batch (hand-worked tables), the guard that
names a collapse and stops the run, and the recipe that runs the guard only where thoughts are sampled."""

from __future__ import annotations

import json

import pytest
from conftest import CPU_FLAGS
from transformers import TrainerControl, TrainerState

from j1.cli.main import main
from j1.formats.thoughts import thought_spread
from j1.train.callbacks import COLLAPSE_STEPS, ThoughtCollapseCallback, collapse_message


@pytest.mark.parametrize("thoughts, expected", [
    # one sentence for every prompt: all shared, one distinct of four
    ([("p1", "I compare."), ("p1", "I compare."), ("p2", "I compare."), ("p3", "I compare.")],
     {"thought_median_words": 2.0, "thought_distinct": 0.25, "thought_shared": 1.0}),
    # a thought per prompt, the same for its rollouts: nothing shared, distinct = prompts / rollouts
    ([("p1", "a b c"), ("p1", "a b c"), ("p2", "d e"), ("p2", "d e")],
     {"thought_median_words": 2.5, "thought_distinct": 0.5, "thought_shared": 0.0}),
    # spacing does not make a thought new; median of 1, 3, 5 is 3
    ([("p1", "x"), ("p2", "y  y y"), ("p3", "y y y"), ("p4", "z z z z z")],
     {"thought_median_words": 3.0, "thought_distinct": 0.75, "thought_shared": 0.5}),
    ([("p1", "café ☕ déjà")], {"thought_median_words": 3.0, "thought_distinct": 1.0, "thought_shared": 0.0}),
])
def test_thought_spread_hand_worked(thoughts, expected):
    assert thought_spread(thoughts) == expected


def test_thought_spread_empty_raises():
    with pytest.raises(ValueError, match="no thoughts"):
        thought_spread([])


@pytest.mark.parametrize("history, expected", [
    ([], None),
    ([(38, 0.95), (39, 0.91)], None),  # fewer logged steps than the guard waits for
    ([(38, 0.95), (39, 0.89), (40, 0.92)], None),  # one step under the threshold resets it
    ([(38, 0.90), (39, 0.90), (40, 0.90)], "thoughts collapsed: 90% identical at step 40 (at least 90% for 3 logged "
                                           "steps; j1/thought_shared)"),  # at the threshold counts
    ([(1, 0.1), (38, 0.95), (39, 0.91), (40, 0.92)], "thoughts collapsed: 92% identical at step 40 (at least 90% for "
                                                     "3 logged steps; j1/thought_shared)"),
])
def test_collapse_message(history, expected):
    assert collapse_message(history, 0.9) == expected


def test_guard_stops_and_saves_at_the_collapse_and_keeps_the_spread(caplog):
    guard, state, control = ThoughtCollapseCallback(0.9), TrainerState(), TrainerControl()
    for step, shared in enumerate([0.0, 0.95, 0.95, 0.5, 0.95, 0.97, 0.99], start=1):
        state.global_step = step
        guard.on_log(None, state, control, logs={"j1/thought_median_words": 20.0, "j1/thought_distinct": 0.4,
                                                 "j1/thought_shared": shared, "loss": 1.0})
        assert control.should_training_stop is (step >= 7)
    assert guard.collapsed == ("thoughts collapsed: 99% identical at step 7 (at least 90% for 3 logged steps; "
                               "j1/thought_shared)")
    assert control.should_save and "thoughts collapsed: 99% identical at step 7" in caplog.text
    assert len(guard.spread) == 7 and guard.spread[0] == {"step": 1, "thought_median_words": 20.0,
                                                           "thought_distinct": 0.4, "thought_shared": 0.0}
    guard.on_log(None, state, control, logs={"loss": 1.0})  # a log without thoughts changes nothing
    assert len(guard.spread) == 7 and COLLAPSE_STEPS == 3


def _train(tiny_model, pair_file, out, *extra):
    return main(["train", "--train_file", str(pair_file), "--model_name_or_path", str(tiny_model), "--output_dir",
                 str(out), "--num_generations", "2", "--per_device_train_batch_size", "4", "--max_completion_length",
                 "8", "--max_steps", "1", "--save_strategy", "no", *CPU_FLAGS, *extra])


def test_the_guard_runs_only_where_thoughts_are_sampled(tiny_model, pair_file, tmp_path):
    assert _train(tiny_model, pair_file, tmp_path / "open", "--assistant_prefill", "<think>") == 0
    run = json.loads((tmp_path / "open" / "run.json").read_text())
    assert run["thoughts"]["collapsed"] is None and isinstance(run["thoughts"]["per_step"], list)
    fixed = "<think>I compare both responses with the request.</think>\n<answer>[["
    assert _train(tiny_model, pair_file, tmp_path / "fixed", "--assistant_prefill", fixed) == 0
    assert "thoughts" not in json.loads((tmp_path / "fixed" / "run.json").read_text())
    assert _train(tiny_model, pair_file, tmp_path / "off", "--assistant_prefill", "<think>", "--collapse_guard",
                  "none") == 0
    assert "thoughts" not in json.loads((tmp_path / "off" / "run.json").read_text())
