"""``j1 demo``: the pure helpers (budget, table), then the whole loop on the tiny model (seconds each):
the quick demo (M = 0), a demo that trains one step (M > 0), resuming, and bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from j1.cli.main import main
from j1.demo.budget import (
    FP32_MINUTES,
    MIN_TRAIN_MINUTES,
    OVERHEAD_MINUTES,
    budget_warning,
    plan_minutes,
    reserve_minutes,
    train_budget,
)
from j1.demo.report import curve_points, example_line, group_table, markdown_table, reading_line, table_rows
from j1.demo.runner import config_change, heldout_split
from j1.train.recipe import latest_checkpoint

# TRL flags every CPU test run needs (as tests/train/conftest.py CPU_FLAGS).
CPU_FLAGS = "--bf16 false --use_cpu true --report_to none --logging_steps 1 --dataloader_num_workers 0"
PREFILL = "<think>x</think>\n<answer>[["


# --- pure helpers -----------------------------------------------------------------------------

@pytest.mark.parametrize("total, spent, reserve, trained, want", [
    (10.0, 1.5, 2.75, 0.0, 5.75),  # 10 - 1.5 - 2.75
    (10.0, 1.5, 2.75, 4.0, 1.75),  # a resumed run already trained 4 of its minutes
    (3.0, 1.5, 2.75, 0.0, MIN_TRAIN_MINUTES),  # nothing left: the floor, the demo overruns
    (4.75, 1.5, 2.75, 0.0, MIN_TRAIN_MINUTES),  # exactly 0 left: the floor
    (60.0, 0.0, 0.0, 0.0, 60.0),
])
def test_train_budget(total, spent, reserve, trained, want):
    assert train_budget(total, spent, reserve, trained) == pytest.approx(want)


@pytest.mark.parametrize("minutes, bf16, warned", [
    (90, False, True),  # the default on a CPU without native bf16: ~140 fp32 steps, the judge needs ~200+
    (FP32_MINUTES - 1, False, True),
    (FP32_MINUTES, False, False),
    (90, True, False),  # bf16 learns in 110-160 steps, which 90 minutes buys
    (0, False, False),  # the quick demo trains nothing
])
def test_budget_warning(minutes, bf16, warned):
    warning = budget_warning(minutes, bf16)
    assert (warning is not None) is warned
    if warned:
        assert f"{minutes:g} min" in warning and f"--minutes {FP32_MINUTES}" in warning


@pytest.mark.parametrize("eval_before, example_before, want", [
    (2.0, 0.25, 2.0 + 0.25 + OVERHEAD_MINUTES),  # eval-after and example-after mirror the before ones
    (0.0, 0.0, OVERHEAD_MINUTES),
])
def test_reserve_minutes(eval_before, example_before, want):
    assert reserve_minutes(eval_before, example_before) == pytest.approx(want)


def test_table_rows_hand_worked():
    before = {"consistent_accuracy": 0.25, "consistent_accuracy_ci": [0.1, 0.4], "accuracy": 0.5,
              "accuracy_ci": [0.375, 0.625], "flip_rate": 0.5, "invalid_rate": 0.125}
    after = {"consistent_accuracy": 0.75, "consistent_accuracy_ci": [0.6, 0.9], "accuracy": 0.8125,
             "accuracy_ci": [0.7, 0.9], "flip_rate": 0.0625, "invalid_rate": 0.0}
    rows = table_rows(before, after)
    assert [r["metric"] for r in rows] == ["consistent accuracy", "accuracy", "flip rate", "invalid rate"]
    # change in points = (after - before) * 100: 50, 31.25, -43.75, -12.5
    assert [r["change_points"] for r in rows] == pytest.approx([50.0, 31.25, -43.75, -12.5])
    assert rows[0]["before_ci"] == [0.1, 0.4] and rows[2]["before_ci"] is None  # rates have no interval
    md = markdown_table(rows).splitlines()
    assert md[2] == "| consistent accuracy | 25.0 [10.0, 40.0] | 75.0 [60.0, 90.0] | +50.0 |"
    assert md[4] == "| flip rate | 50.0 | 6.2 | -43.8 |"
    assert md[5] == "| invalid rate | 12.5 | 0.0 | -12.5 |"


def test_group_table_hand_worked():
    before = {"consistent_accuracy": 0.0, "consistent_accuracy_ci": [0.0, 0.0], "accuracy": 0.5, "invalid_rate": 0.0}
    same = {"consistent_accuracy": 0.25, "consistent_accuracy_ci": [0.15, 0.367], "accuracy": 0.617,
            "accuracy_ci": [0.566, 0.675], "invalid_rate": 0.0}
    other = {"consistent_accuracy": 0.1, "accuracy": 0.45, "accuracy_ci": [0.4, 0.5], "invalid_rate": 0.05}
    md = group_table({"same source": {"pairs": 60, "table": table_rows(before, same)},
                      "other sources": {"pairs": 60, "table": table_rows(before, other)}}).splitlines()
    assert md[2] == "| same source | 60 | 0.0 [0.0, 0.0] | 25.0 [15.0, 36.7] | +25.0 | 61.7 [56.6, 67.5] | 0.0 |"
    assert md[3] == "| other sources | 60 | 0.0 [0.0, 0.0] | 10.0 | +10.0 | 45.0 [40.0, 50.0] | 5.0 |"


def test_table_rows_missing_values():
    # a pointwise judge has no flip rate: n/a, and no change
    rows = table_rows({"flip_rate": None, "accuracy": 0.5}, {"flip_rate": None, "accuracy": 0.5})
    assert rows[2]["change_points"] is None and rows[1]["change_points"] == 0.0
    assert "| flip rate | n/a | n/a | n/a |" in markdown_table(rows)


@pytest.mark.parametrize("old, new, want", [
    ({"minutes": 0, "seed": 0}, {"minutes": 0, "seed": 0}, None),
    ({"minutes": 0, "seed": 0}, {"minutes": 5, "seed": 0}, "--minutes was 0, now 5"),
    ({"progress": True}, {"progress": False}, None),  # progress bars may change between attempts
    ({}, {"minutes": 1}, None),
])
def test_config_change(old, new, want):
    assert config_change(old, new) == want


def test_resume_skips_a_checkpoint_cut_short(tmp_path):
    assert latest_checkpoint(tmp_path) is None
    for step, complete in ((2, True), (10, True), (12, False)):  # checkpoint-12: killed while saving
        (tmp_path / f"checkpoint-{step}").mkdir()
        if complete:
            (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    # by step number, not by name (checkpoint-10 sorts before checkpoint-2 as text)
    assert latest_checkpoint(tmp_path) == str(tmp_path / "checkpoint-10")


@pytest.mark.parametrize("after, start", [
    ({"accuracy": 0.625, "accuracy_ci": [0.55, 0.70]},
     "The judge after reads the pairs: its accuracy, 62.5% [55.0, 70.0]"),
    ({"accuracy": 0.508, "accuracy_ci": [0.458, 0.558]}, "These pairs do not show that the judge after reads them: "
                                                         "its accuracy, 50.8% [45.8, 55.8]"),
    ({"accuracy": 0.45, "accuracy_ci": [0.40, 0.49]}, "These pairs do not show"),  # below chance
    ({"accuracy": 0.52, "accuracy_ci": [0.50, 0.54]}, "These pairs do not show"),  # 50% inside
    ({"accuracy": 0.6}, None),  # no interval: nothing said
    ({}, None),
])
def test_reading_line(after, start):
    line = reading_line(after)
    assert line == start if start is None else line.startswith(start)


@pytest.mark.parametrize("n, want", [
    (120, (60, 60)),  # the default: all 60 same-source pairs and 60 of the other sources' 120
    (40, (20, 20)),  # make demo
    (5, (3, 2)),  # odd: the extra pair from the same source
    (1, (1, 0)),
    (150, (60, 90)),  # the same source runs out first
    (180, (60, 120)),
])
def test_heldout_split(n, want):
    assert heldout_split(n, 60, 120) == want


def test_example_line_and_curve_points():
    result = {"verdict": "invalid", "orders": {"AB": {"verdict": "B"}, "BA": {"verdict": "invalid"}}}
    assert example_line(result, "A") == "order AB -> B (wrong), order BA -> invalid; verdict invalid"
    rows = [{"step": 1, "reward": 0.25}, {"step": 2}, {"step": 3, "reward": 0.5}, {"train_runtime": 3.0}]
    assert curve_points(rows, "reward") == ([1, 3], [0.25, 0.5])


# --- end to end on the tiny model -------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_judge(tiny_model, tmp_path_factory, one_torch_thread):
    """The tiny model plus a judge.json: a ready judge for the quick demo."""
    from j1.judging.judges import Manifest, write_manifest

    folder = tmp_path_factory.mktemp("tiny-judge") / "judge"
    shutil.copytree(tiny_model, folder)
    write_manifest(folder, Manifest(format="pav", template="compact", assistant_prefill=PREFILL, max_new_tokens=4))
    return folder


def _demo(out: Path, tiny_model, *extra: str) -> int:
    return main(["demo", "--out", str(out), "--base_model", str(tiny_model), "--heldout_pairs", "4",
                 "--progress", "false", *extra])


def _stages(out: Path) -> dict:
    return json.loads((out / "stages.json").read_text())["stages"]


def test_quick_demo(tiny_model, tiny_judge, tmp_path, capsys):
    out = tmp_path / "demo"
    assert _demo(out, tiny_model, "--minutes", "0", "--judge", str(tiny_judge)) == 0
    stages = _stages(out)
    assert list(stages) == ["example-before", "data", "eval-before", "eval-after", "example-after", "report"]
    assert all(s["status"] == "done" and s["seconds"] >= 0 for s in stages.values())
    # both models asked the judge's way (its manifest), greedily
    for when, model in (("before", tiny_model), ("after", tiny_judge)):
        config = json.loads((out / f"eval-{when}" / "run.json").read_text())["config"]
        assert config["model"] == str(model)
        assert (config["template"], config["assistant_prefill"], config["max_new_tokens"]) == ("compact", PREFILL, 4)
        assert (config["temperature"], config["samples"]) == (0.0, 1)
        assert json.loads((out / f"eval-{when}" / "metrics.json").read_text())["n"] == 4
    heldout = [json.loads(line) for line in (out / "data" / "heldout.jsonl").read_text().splitlines()]
    # half from unseen GSM8K test questions (the training source), half from the other sources
    assert [(r["category"], r["source"].split(".")[0]) for r in heldout] == [
        ("same source", "gsm8k_test"), ("same source", "gsm8k_test"),
        ("other sources", "math_train"), ("other sources", "alpaca_en_demo_llamafactory")]
    categories = json.loads((out / "eval-after" / "metrics.json").read_text())["categories"]
    assert {name: c["n"] for name, c in categories.items()} == {"same source": 2, "other sources": 2}
    assert len((out / "data" / "train.jsonl").read_text().splitlines()) == 2 * 460  # both orders
    assert "Apache-2.0" in (out / "data" / "SOURCES.md").read_text()
    examples = json.loads((out / "examples.json").read_text())
    assert set(examples["before"]["orders"]) == {"AB", "BA"} and examples["after"]["model"] == str(tiny_judge)
    report = (out / "report.md").read_text()
    for row in ("| consistent accuracy |", "| accuracy |", "| flip rate |", "| invalid rate |"):
        assert row in report
    assert "## The example pair" in report and "## Training" not in report
    report_json = json.loads((out / "report.json").read_text())
    assert report_json["train"] is None
    assert {name: g["pairs"] for name, g in report_json["groups"].items()} == {"same source": 2, "other sources": 2}
    assert "### By source" in report and "| same source | 2 |" in report and "| other sources | 2 |" in report
    printed = capsys.readouterr().out
    assert "example, before" in printed and "example, after" in printed
    assert "| consistent accuracy |" in printed and f"report: {out / 'report.md'}" in printed
    assert "| same source | 2 |" in printed


def test_rerun_skips_finished_stages(tiny_model, tiny_judge, tmp_path):
    out = tmp_path / "demo"
    assert _demo(out, tiny_model, "--minutes", "0", "--judge", str(tiny_judge)) == 0
    first = _stages(out)
    data = json.loads((out / "stages.json").read_text())
    del data["stages"]["report"]
    (out / "stages.json").write_text(json.dumps(data))
    (out / "report.md").unlink()
    assert _demo(out, tiny_model, "--minutes", "0", "--judge", str(tiny_judge)) == 0
    again = _stages(out)
    for name in ("eval-before", "eval-after", "example-before"):
        assert again[name] == first[name]  # not redone: same times
    assert again["report"]["status"] == "done" and (out / "report.md").exists()


def test_demo_that_trains(tiny_model, tmp_path):
    out = tmp_path / "demo"
    train_args = ("--max_steps 1 --num_generations 2 --per_device_train_batch_size 4 --max_completion_length 4 "
                  f"--max_pairs 4 --lora_last_layers 1 --lora_r 4 {CPU_FLAGS}")
    assert _demo(out, tiny_model, "--minutes", "5", "--train_args", train_args) == 0
    stages = _stages(out)
    assert "train" in stages and stages["train"]["status"] == "done" and stages["train"]["budget_minutes"] > 0
    assert (out / "train" / "final" / "adapter_config.json").exists()
    after = json.loads((out / "eval-after" / "run.json").read_text())["config"]
    before = json.loads((out / "eval-before" / "run.json").read_text())["config"]
    assert after["model"] == str(out / "train" / "final") and before["model"] == str(tiny_model)
    # asked as the recipe trains: its template and prefill, the --train_args length
    asked = ("format", "template", "assistant_prefill", "max_new_tokens")
    assert [before[k] for k in asked] == [after[k] for k in asked]
    assert (after["template"], after["max_new_tokens"]) == ("digest", 4)
    assert (out / "reward.png").stat().st_size > 0 and (out / "accuracy.png").stat().st_size > 0
    report = json.loads((out / "report.json").read_text())
    assert report["train"]["steps"] == 1 and report["train"]["curves"] == ["reward.png", "accuracy.png"]
    assert "![reward.png](reward.png)" in (out / "report.md").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("busy", [0, 2], ids=["idle", "two busy processes"])
def test_the_plan_is_within_2x_of_the_stages_it_plans(tmp_path, busy):
    """Issue 56: the plan times a warm batch of held-out prompts (not the example's cold call), so on the
    embedded model it is within 2x of the evaluations' real times and of the stages around training, on an
    idle machine and beside two processes that keep the cores busy (started here)."""
    import subprocess
    import sys

    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    train_args = ("--max_steps 1 --num_generations 2 --per_device_train_batch_size 4 --max_completion_length 8 "
                  f"--max_pairs 2 --lora_last_layers 1 --lora_r 4 {CPU_FLAGS}")
    out = tmp_path / "demo"
    try:
        assert _demo(out, "smollm2-135m", "--minutes", "8", "--train_args", train_args) == 0
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    stages = _stages(out)
    plan, warm = stages["train"]["plan"], stages["train"]["warm_batch"]
    assert warm["prompts"] == 8 and plan["train"] > 0
    for when in ("before", "after"):
        real = stages[f"eval-{when}"]["seconds"] / 60
        assert 0.5 <= plan["eval"] / real <= 2, (when, plan, real)
    # around training: both evaluations and examples, and the trainer's set-up and save (the train stage's
    # time outside the steps' budget), against the plan's evaluations, examples and overhead
    trained = stages["train"]["trained_minutes"] or 0.0
    around = sum(stages[n]["seconds"] for n in ("example-before", "eval-before", "eval-after", "example-after")) / 60
    around += max(0.0, stages["train"]["seconds"] / 60 - trained)
    assert 0.5 <= plan["around"] / around <= 2, (plan, around)


def test_plan_minutes_refuses_a_budget_that_trains_nothing():
    # 4 prompts at 30 s each: 2 min an evaluation; 2 x 2 + 2 x 0.5 + 0.5 = 5.5 min around training
    assert plan_minutes(10, 30.0, 4, 0.5) == {"eval": 2.0, "around": 5.5, "train": 4.5}
    with pytest.raises(ValueError, match=r"--minutes 5.9 leaves no time to train: .* about 5.5 min here; give --minutes 6"):
        plan_minutes(5.9, 30.0, 4, 0.5)


def test_a_budget_that_trains_nothing_is_said_up_front(tiny_model, tmp_path, capsys, monkeypatch):
    # the example's judging is made to look slow (20 s a prompt): 4 pairs x 2 orders x 20 s = 2.7 min an eval
    import j1.demo.runner as demo

    real = demo.plan_minutes
    monkeypatch.setattr(demo, "plan_minutes", lambda minutes, _s, prompts, example: real(minutes, 20.0, prompts, example))
    out = tmp_path / "demo"
    assert _demo(out, tiny_model, "--minutes", "3") == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("j1 demo: error:")]
    assert len(err) == 1 and "--minutes 3 leaves no time to train" in err[0]
    assert not out.exists()  # nothing half-made: the same folder takes another budget


def test_demo_killed_between_checkpoints_loses_at_most_save_minutes(tiny_model, tmp_path):
    """Issue 46: SIGKILL a training demo where no step-based checkpoint is near (--save_steps 1000); the
    time-based ones keep the loss to --save_minutes (plus the step that crosses it), the rerun redoes
    it without charging it to the budget (only what the checkpoint holds counts), and the report says so."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from j1.train.resume import checkpoint_progress

    save_minutes, steps = 0.05, 50
    out = tmp_path / "demo"
    train_args = (f"--max_steps {steps} --save_steps 1000 --save_minutes {save_minutes} --num_generations 2 "
                  "--per_device_train_batch_size 4 --max_completion_length 4 --max_pairs 4 --lora_last_layers 1 "
                  f"--lora_r 4 {CPU_FLAGS}")
    argv = ["demo", "--out", str(out), "--base_model", str(tiny_model), "--heldout_pairs", "4", "--progress", "false",
            "--minutes", "30", "--train_args", train_args]
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(repo / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "j1.cli.main", *argv], cwd=repo, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    progress_file = out / "train" / "progress.json"
    try:
        deadline = time.time() + 600
        while True:  # a time-based checkpoint, then two more steps: killed between checkpoints
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.time() < deadline, "the demo made no progress"
            checkpoint = latest_checkpoint(out / "train")
            if checkpoint and progress_file.exists():
                if json.loads(progress_file.read_text())["global_step"] >= checkpoint_progress(checkpoint)["global_step"] + 2:
                    break
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
    assert not (out / "train" / "final").exists(), "the kill came after training ended"
    first = _stages(out)["train"]
    reached = json.loads(progress_file.read_text())
    held = checkpoint_progress(latest_checkpoint(out / "train"))
    assert first["status"] == "running" and reached["global_step"] > held["global_step"] > 0

    assert main(argv) == 0
    train = _stages(out)["train"]
    (lost,) = train["interruptions"]
    assert (lost["reached_step"], lost["resumed_from_step"]) == (reached["global_step"], held["global_step"])
    assert lost["lost_steps"] == reached["global_step"] - held["global_step"] >= 2
    rows = [json.loads(line) for line in (out / "train" / "log.jsonl").read_text().splitlines()]
    step_minutes = max(r["step_time"] for r in rows if "step_time" in r) / 60
    assert 0 < lost["lost_minutes"] <= save_minutes + step_minutes  # at most --save_minutes (and the step crossing it)
    # charged only what the checkpoint holds: the same stages before, less the checkpoint's minutes
    assert train["trained_before_minutes"] == pytest.approx(held["trained_seconds"] / 60, abs=1e-3)
    assert train["budget_minutes"] == pytest.approx(first["budget_minutes"] - held["trained_seconds"] / 60, abs=2e-3)
    assert train["budget_minutes"] > first["budget_minutes"] - reached["trained_seconds"] / 60  # lost: not charged
    assert [r["step"] for r in rows if "loss" in r] == list(range(1, steps + 1))  # redone once, not twice
    assert (train["lost_steps"], train["lost_minutes"]) == (lost["lost_steps"], lost["lost_minutes"])
    assert json.loads((out / "report.json").read_text())["train"]["interruptions"] == [lost]
    assert "Interrupted 1 time:" in (out / "report.md").read_text()


@pytest.mark.parametrize("argv, message", [
    (["--minutes", "-1"], "--minutes -1.0: must be >= 0"),
    (["--heldout_pairs", "0"], "--heldout_pairs 0: must be in 1..180"),  # 60 same-source + 120 other pairs
    (["--heldout_pairs", "181"], "--heldout_pairs 181: must be in 1..180"),
    (["--minutes", "1", "--train_args", "--output_dir x"], "--train_args sets --output_dir"),
    (["--minutes", "0", "--train_args", "--max_steps 1"], "--train_args needs --minutes > 0"),
    (["--minutes", "0", "--judge", "no-such-judge"], "--judge 'no-such-judge': not a shipped judge"),
    (["--bf16", "maybe"], "--bf16: invalid choice: 'maybe'"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as done:
        main(["demo", *argv])
    assert done.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("bf16, want", [("true", ["--bf16", "true"]), ("false", [])])
def test_bf16_goes_to_train_before_train_args(bf16, want, tmp_path):
    from j1.cli.demo_cmd import train_argv
    from j1.demo.spec import DemoSpec

    cfg = DemoSpec(minutes=5, out=str(tmp_path / "d"), bf16=bf16, train_args="--bf16 false --max_steps 1")
    argv = train_argv(cfg, tmp_path / "d")
    tail = ["--bf16", "false", "--max_steps", "1"]  # --train_args come after it: the user's flag wins
    assert argv[-len(tail) - len(want):] == want + tail


def test_bf16_auto_follows_the_machine(monkeypatch, tmp_path):
    from j1.demo.spec import DemoSpec

    for native in (True, False):
        monkeypatch.setattr("j1.device.native_bf16", lambda native=native: native)
        assert DemoSpec(minutes=5, out=str(tmp_path / "d")).train_bf16 is native


def test_out_must_be_a_folder(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    with pytest.raises(SystemExit) as done:
        main(["demo", "--out", str(tmp_path / "file"), "--minutes", "1"])
    assert done.value.code == 2 and "is a file" in capsys.readouterr().err


def test_rerun_with_other_options_is_refused(tiny_model, tiny_judge, tmp_path, capsys):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "stages.json").write_text(json.dumps({"config": {"seed": 1}, "stages": {}}))
    assert _demo(out, tiny_model, "--minutes", "0", "--judge", str(tiny_judge)) == 2
    assert "--seed was 1, now 0" in capsys.readouterr().err


def test_make_demo_runs_a_valid_quick_demo():
    """The README's main command: the Makefile's demo line parses as a quick demo of the shipped judge."""
    import shlex

    from j1.cli.common import parse
    from j1.demo.spec import DemoSpec
    from j1.judging.judges import DEFAULT_JUDGE

    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    (line,) = [ln for ln in makefile.splitlines() if "/j1 demo" in ln]
    cfg = parse(DemoSpec, shlex.split(line.split("/j1 demo", 1)[1]), prog="j1 demo")
    assert (cfg.minutes, cfg.judge) == (0, DEFAULT_JUDGE) and cfg.heldout_pairs <= 40
