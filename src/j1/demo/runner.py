"""``j1 demo``: the whole J1 loop on data that ships with j1, as one resumable run folder.

Stages, in order; each is recorded in DIR/stages.json (atomically) with its wall time once done, so a
rerun of the same command skips the finished ones and continues the one that was running (the evals
with ``--resume``, training from its newest checkpoint: the recipe saves every 2 minutes and on SIGTERM or
SIGINT, and what a kill lost after the checkpoint is redone, recorded, and not charged to the budget):

1. ``example-before``: the example pair judged in both orders by the base model (DIR/examples.json).
2. ``data``: DIR/data/train.jsonl (the shipped GSM8K train mismatch pairs, both orders, as ``j1 synth mix``
   writes them) and DIR/data/heldout.jsonl (``--heldout_pairs`` shipped pairs in two groups, each row's
   ``category``: half from GSM8K *test* questions, the source trained on but questions it never sees, and
   half from MATH and Alpaca, sources the demo does not train on), with DIR/data/SOURCES.md.
3. ``eval-before``: ``j1 eval`` of the base model on the held-out pairs (DIR/eval-before).
4. ``train`` (``--minutes`` > 0 only): ``j1 train`` with the shipped recipe for the time left (DIR/train).
5. ``eval-after``: the judge after (DIR/train/final, or ``--judge`` with ``--minutes 0``), DIR/eval-after.
6. ``example-after``: the example pair judged by the judge after.
7. ``report``: DIR/report.md and DIR/report.json (the table, the example, stage times, curves).

Both models are asked exactly as the judge after is (its format, wording, prefill and length, greedy),
so the before/after table isolates what training changed.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import shutil
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from j1.demo.budget import budget_warning, plan_minutes, reserve_minutes, train_budget
from j1.demo.shipped import HELDOUT_PAIRS, SAME_SOURCE_PAIRS, TRAIN_PAIRS, heldout_available
from j1.judging.judges import Manifest
from j1.runs.atomic import write_json_atomic, write_text_atomic
from j1.runs.runinfo import setting_changes
from j1.schema import iter_jsonl

if TYPE_CHECKING:
    from j1.backends.base import Backend
    from j1.demo.spec import DemoSpec
    from j1.eval.spec import EvalSpec
    from j1.train.spec import TrainRun

log = logging.getLogger(__name__)

# The held-out groups, as each row's category (j1 eval reports each): whether the judge learned the task
# on its own source, and whether that carries over to sources it never saw.
SAME_SOURCE, OTHER_SOURCES = "same source", "other sources"
EXAMPLE = {"prompt": "What is the capital of Australia?", "A": "The capital of Australia is Canberra.",
           "B": "The capital of Australia is Sydney.", "better": "A"}
# The source files named in the shipped pairs' "source" field: where they come from and their licence.
SOURCES = {
    "gsm8k_train.jsonl": ("GSM8K train (openai/grade-school-math, grade_school_math/data/train.jsonl)", "MIT"),
    "gsm8k_test.jsonl": ("GSM8K test (openai/grade-school-math, grade_school_math/data/test.jsonl)", "MIT"),
    "math_train.jsonl": ("MATH train (Hendrycks et al., via aiwaves-cn/agents)", "MIT"),
    "alpaca_en_demo_llamafactory.json": ("LLaMA-Factory data/alpaca_en_demo.json (hiyouga/LLaMA-Factory)",
                                         "Apache-2.0"),
}
# The pairs of the warm batch the plan times (both orders: 8 prompts, about a CPU batch of a 135M judge's prompts).
WARM_PAIRS = 4
# The config fields a rerun must share with the run it continues (progress may change).
RESUME_FIELDS = ("minutes", "judge", "base_model", "heldout_pairs", "seed", "train_args", "bf16")


def stage_names(minutes: float) -> list[str]:
    """The stages of a demo; ``train`` only with a time budget.

    >>> stage_names(0)
    ['example-before', 'data', 'eval-before', 'eval-after', 'example-after', 'report']
    """
    train = ["train"] if minutes > 0 else []
    return ["example-before", "data", "eval-before", *train, "eval-after", "example-after", "report"]


def heldout_split(n: int, same_available: int, other_available: int) -> tuple[int, int]:
    """How many of ``n`` held-out pairs come from the same source and from the other sources: half
    (rounded up) from the same source, as many as it has, and the rest from the others.

    >>> heldout_split(120, 60, 120), heldout_split(40, 60, 120), heldout_split(1, 60, 120), heldout_split(180, 60, 120)
    ((60, 60), (20, 20), (1, 0), (60, 120))
    """
    same = min((n + 1) // 2, same_available)
    return same, min(n - same, other_available)


def heldout_groups(n: int) -> list[tuple[str, list]]:
    """The first ``n`` shipped held-out pairs as the demo judges them (``heldout_split``), by group:
    [(SAME_SOURCE, pairs), (OTHER_SOURCES, pairs)]."""
    from j1.schema import read_pairs

    n_same, n_other = heldout_split(n, *heldout_available())
    return [(SAME_SOURCE, read_pairs(SAME_SOURCE_PAIRS)[:n_same]), (OTHER_SOURCES, read_pairs(HELDOUT_PAIRS)[:n_other])]


def heldout_rows(n: int) -> list[dict]:
    """The demo's held-out file: ``heldout_groups`` as rows, each with its group as ``category`` (j1 eval
    reports each). The GPU check judges the same rows (bench/gpu_check.py).

    >>> [r["category"] for r in heldout_rows(3)]
    ['same source', 'same source', 'other sources']
    """
    return [{**dataclasses.asdict(p), "category": group} for group, pairs in heldout_groups(n) for p in pairs]


def config_change(old: dict, new: dict) -> str | None:
    """The first ``RESUME_FIELDS`` difference between a recorded config and this one, as flags; None if none.

    >>> config_change({"minutes": 0, "seed": 0}, {"minutes": 5, "seed": 0})
    '--minutes was 0, now 5'
    """
    changes = setting_changes(old, new, RESUME_FIELDS)
    return changes[0] if changes else None


class StageLog:
    """DIR/stages.json: the config and, per stage, its status (running or done), times and extras."""

    def __init__(self, out: Path, config: dict):
        self.path = out / "stages.json"
        self.data = {"schema_version": 1, "config": config, "stages": {}}
        if self.path.exists():
            try:
                old = json.loads(self.path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{self.path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
            change = config_change(old.get("config", {}), config)
            if change:
                raise ValueError(f"{self.path}: this demo was run with other options ({change}); "
                                 "rerun it with the same ones or choose another --out")
            self.data["stages"] = old.get("stages", {})

    def done(self, name: str) -> bool:
        return self.data["stages"].get(name, {}).get("status") == "done"

    def seconds(self, name: str) -> float:
        return self.data["stages"].get(name, {}).get("seconds", 0.0) if self.done(name) else 0.0

    def update(self, name: str, **fields) -> None:
        self.data["stages"][name] = {**self.data["stages"].get(name, {}), **fields}
        write_json_atomic(self.path, self.data)


class _Models:
    """One loaded model at a time: the example and the eval of one model share it."""

    def __init__(self):
        self.name: str | None = None
        self.backend = None

    def get(self, ecfg: EvalSpec) -> Backend:
        if self.name != ecfg.model:
            self.close()
            self.backend, self.name = ecfg.open_backend(), ecfg.model
        return self.backend

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()
        self.backend = self.name = None


@dataclasses.dataclass
class DemoRun:
    """What the stages share: the spec, the run folder, how models are asked, the stage log, and the
    training run (``--minutes`` > 0: the recipe with ``--train_args``, as ``j1 train`` parses it)."""

    cfg: DemoSpec
    out: Path
    stages: StageLog
    asked: dict  # the Manifest.DEFAULTS fields both models are asked with
    before_model: str
    say: Callable[[str], None]
    models: _Models = dataclasses.field(default_factory=_Models)
    train: TrainRun | None = None

    @property
    def after_model(self) -> str:
        return str(self.out / "train" / "final") if self.cfg.minutes > 0 else self.cfg.judge

    def eval_config(self, model: str, out_name: str) -> EvalSpec:
        from j1.eval.spec import EvalSpec

        return EvalSpec(model=model, benchmark="generic", data=str(self.out / "data" / "heldout.jsonl"),
                          out=str(self.out / out_name), resume=True, progress=self.cfg.progress, seed=self.cfg.seed,
                          **self.asked)


def how_asked(cfg: DemoSpec, out: Path, train: TrainRun | None) -> tuple[dict, str]:
    """(the judging settings both models get, the model before): as ``j1 train`` will write the
    trained judge's manifest (M > 0, ``train`` the training run), else as the ready judge's manifest
    says; greedy either way."""
    if cfg.minutes > 0:
        from j1.judging.judges import trained_manifest

        if train is None:
            raise ValueError(f"--minutes {cfg.minutes}: training needs the training run (the recipe's specs)")
        j1cfg, grpo, model_args = train
        m = trained_manifest(formulation=j1cfg.formulation, template=j1cfg.template, prefill=j1cfg.assistant_prefill,
                             max_new_tokens=grpo.max_completion_length, base_model=None,
                             judge_dir=out / "train" / "final", trained_by="j1 train")
        asked, before = {k: getattr(m, k) for k in Manifest.DEFAULTS}, model_args.model_name_or_path
    else:
        from j1.eval.spec import EvalSpec

        # The judge's EvalSpec fills its settings from its manifest (else j1's plain defaults).
        probe = EvalSpec(model=cfg.judge, benchmark="generic", data="-", out="-")
        asked, before = {k: getattr(probe, k) for k in Manifest.DEFAULTS}, cfg.base_model
    return asked | {"temperature": 0.0, "samples": 1}, before


def stage_example(run: DemoRun, when: str) -> dict:
    from j1.demo.report import example_line
    from j1.formats import get_format
    from j1.judging.judge import judge_pairs

    model = run.before_model if when == "before" else run.after_model
    if when == "before":
        run.say(f"example: {EXAMPLE['prompt']!r}  A: {EXAMPLE['A']!r}  B: {EXAMPLE['B']!r}  (A is right)")
    ecfg = run.eval_config(model, f"eval-{when}")
    backend = run.models.get(ecfg)
    t0 = time.monotonic()  # the judging alone, without the model's load (a cold call: the plan times a warm batch)
    judgment = judge_pairs(backend, get_format(ecfg.format, ecfg.template),
                           [(EXAMPLE["prompt"], EXAMPLE["A"], EXAMPLE["B"])], ecfg.sampling_params(),
                           ecfg.assistant_prefill)[0]
    judge_seconds = time.monotonic() - t0
    result = {"model": model, "verdict": str(judgment.verdict),
              "orders": {str(o.order): {"verdict": str(o.verdict), "text": o.samples[0].text} for o in judgment.orders}}
    path = run.out / "examples.json"
    examples = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"pair": EXAMPLE}
    write_json_atomic(path, {**examples, when: result})
    run.say(f"example, {when} ({model}): {example_line(result, EXAMPLE['better'])}")
    return {"judge_seconds": round(judge_seconds, 3), "prompts": 2 * len(judgment.orders[0].samples)}


def stage_data(run: DemoRun) -> None:
    from j1.data.mix import both_orders, mix
    from j1.runs.atomic import write_jsonl_atomic

    data = run.out / "data"
    # j1 synth mix's own draw and A/B placement; nothing held out (the held-out pairs come from elsewhere).
    train, _, _ = mix([str(TRAIN_PAIRS)], heldout_fraction=0.0, seed=run.cfg.seed)
    n_rows = write_jsonl_atomic(data / "train.jsonl", [r for p in train for r in both_orders(p, run.cfg.seed)])
    heldout = [p for _, pairs in heldout_groups(run.cfg.heldout_pairs) for p in pairs]
    write_jsonl_atomic(data / "heldout.jsonl", heldout_rows(run.cfg.heldout_pairs))
    lines = ["# Data of this demo", "", "| file | pairs | kinds | from | licence |", "|---|---|---|---|---|"]
    for name, pairs, extra in (("train.jsonl", train, f", {n_rows} rows (both orders)"), ("heldout.jsonl", heldout, "")):
        for source, n in sorted(Counter(p.source for p in pairs).items()):
            origin, licence = SOURCES.get(source, (source, "see the source"))
            kinds = ", ".join(sorted({p.kind for p in pairs if p.source == source}))
            lines.append(f"| {name} | {n}{extra} | {kinds} | {origin} | {licence} |")
    lines += ["", f"Shipped with j1 (j1/assets/data/{TRAIN_PAIRS.name}, {SAME_SOURCE_PAIRS.name}, {HELDOUT_PAIRS.name}): "
              "mismatch pairs, a question's gold answer vs another question's. Held out: GSM8K test questions "
              f"({SAME_SOURCE!r}: the demo's training source, questions it never sees) and MATH and Alpaca "
              f"({OTHER_SOURCES!r}: sources not in the demo's training data). The shipped judge j1-135m also "
              "trained on Alpaca items (not these): for it, only MATH is a source it never saw (its MODEL_CARD.md)."]
    write_text_atomic(data / "SOURCES.md", "\n".join(lines) + "\n")


def stage_eval(run: DemoRun, when: str) -> None:
    from j1.eval.runner import run_eval

    ecfg = run.eval_config(run.before_model if when == "before" else run.after_model, f"eval-{when}")
    run_eval(ecfg, backend=run.models.get(ecfg))


def stage_train(run: DemoRun) -> dict:
    # In this process, not a subprocess: errors surface with their message, the progress bars are the
    # trainer's own, and tests run in seconds. Interrupts are safe without a second process: the
    # trainer checkpoints (by steps, by time, and on SIGTERM/SIGINT), this stage stays "running", and a
    # rerun resumes from the newest checkpoint.
    from j1.train.recipe import latest_checkpoint, run_train
    from j1.train.resume import checkpoint_progress

    run.models.close()  # free the base model's memory for training
    names = stage_names(run.cfg.minutes)
    spent = sum(run.stages.seconds(n) for n in names[: names.index("train")]) / 60
    reserve = reserve_minutes(run.stages.seconds("eval-before") / 60, run.stages.seconds("example-before") / 60)
    train_dir = run.out / "train"
    resume = latest_checkpoint(train_dir)
    # Only what the checkpoint holds counts as trained: the steps a kill lost after it are redone, and
    # their minutes are not charged to the budget (issue 46; train/run.json's interruptions list them).
    trained = checkpoint_progress(resume)["trained_seconds"] / 60
    minutes = train_budget(run.cfg.minutes, spent, reserve, trained)
    # recorded now, so that an attempt that is killed leaves its budget too
    run.stages.update("train", budget_minutes=minutes, trained_before_minutes=round(trained, 3))
    log.info("train: %.1f min of %.1f (%.1f spent, %.1f kept for after, %.1f trained before)%s",
             minutes, run.cfg.minutes, spent, reserve, trained, f"; resuming from {resume}" if resume else "")
    j1cfg, grpo, model_args = run.train
    grpo = copy.copy(grpo)  # the parsed run stays as given; this try resumes from the newest checkpoint
    grpo.resume_from_checkpoint = resume
    done = run_train(dataclasses.replace(j1cfg, max_minutes=float(f"{minutes:.4g}")), grpo, model_args)
    lost = done.get("interruptions") or []
    return {"budget_minutes": minutes, "bf16": run.cfg.train_bf16, "trained_before_minutes": round(trained, 3),
            "trained_minutes": done.get("trained_minutes"), "interruptions": lost,
            "lost_steps": sum(i["lost_steps"] for i in lost), "lost_minutes": round(sum(i["lost_minutes"] for i in lost), 3)}


def train_summary(out: Path, stage: dict) -> dict:
    """Steps, first and last mean reward, and the curve PNGs (written to ``out``) of DIR/train/log.jsonl,
    with the budget and precision the train stage recorded (``stage``)."""
    from j1.demo.report import curve_points, plot_curves

    rows = [row for _, row in iter_jsonl(out / "train" / "log.jsonl", allow_torn_tail=True)]
    steps, rewards = curve_points(rows, "reward")
    curves = plot_curves(rows, out)
    return {"steps": steps[-1] if steps else 0, "budget_minutes": stage.get("budget_minutes", 0.0),
            "bf16": stage.get("bf16", False), "interruptions": stage.get("interruptions", []),
            "reward_first": rewards[0] if rewards else None, "reward_last": rewards[-1] if rewards else None,
            "curves": [p.name for p in curves]}


def stage_report(run: DemoRun) -> None:
    from j1.demo.report import reading_line, render_report, table_rows

    metrics = {w: json.loads((run.out / f"eval-{w}" / "metrics.json").read_text(encoding="utf-8"))
               for w in ("before", "after")}
    before, after = metrics["before"]["categories"], metrics["after"]["categories"]
    heldout = [row for _, row in iter_jsonl(run.out / "data" / "heldout.jsonl")]
    report = {
        "models": {"before": run.before_model, "after": run.after_model},
        "asked": run.asked,
        "heldout": {"pairs": len(heldout), "kinds": dict(Counter(r["kind"] for r in heldout))},
        "table": table_rows(metrics["before"]["overall"], metrics["after"]["overall"]),
        "overall": {w: m["overall"] for w, m in metrics.items()},
        "reading": reading_line(metrics["after"]["overall"]),
        "groups": {group: {"pairs": after[group]["n"], "table": table_rows(before[group], after[group]),
                           "reading": reading_line(after[group], explain=False)}
                   for group in (SAME_SOURCE, OTHER_SOURCES) if group in after},
        "examples": json.loads((run.out / "examples.json").read_text(encoding="utf-8")),
        "stage_seconds": {n: run.stages.seconds(n) for n in stage_names(run.cfg.minutes) if run.stages.done(n)},
        "train": None,
    }
    if run.cfg.minutes > 0:
        report["train"] = train_summary(run.out, run.stages.data["stages"]["train"])
    write_json_atomic(run.out / "report.json", report)
    write_text_atomic(run.out / "report.md", render_report(report))


def warm_batch(run: DemoRun) -> dict:
    """The evaluations' judging speed, timed on a warm batch: the first ``WARM_PAIRS`` held-out pairs in both
    orders, judged by the model before as eval-before will judge them, after the example has warmed it up.
    The example's own judging is no measure: it pays the first call's set-up (46.8 s for 2 prompts on a
    busy machine, where a batch of 8 then took about 10 s: issue 56)."""
    from j1.formats import get_format
    from j1.judging.judge import judge_pairs

    ecfg = run.eval_config(run.before_model, "eval-before")
    backend = run.models.get(ecfg)
    pairs = [p for _, group in heldout_groups(min(WARM_PAIRS, run.cfg.heldout_pairs)) for p in group]
    t0 = time.monotonic()
    judge_pairs(backend, get_format(ecfg.format, ecfg.template), [(p.prompt, p.chosen, p.rejected) for p in pairs],
                ecfg.sampling_params(), ecfg.assistant_prefill)
    return {"seconds": round(time.monotonic() - t0, 3), "prompts": 2 * len(pairs)}


def plan_training(run: DemoRun, fresh: bool) -> None:
    """Say up front what the budget buys (``plan_minutes``, from a warm batch's speed), or stop before any
    stage after the first when it buys no training: a fresh run's folder is removed then, so the same folder
    takes another budget."""
    example = run.stages.data["stages"]["example-before"]
    prompts = 2 * run.cfg.heldout_pairs  # both orders, greedy
    warm = run.stages.data["stages"].get("train", {}).get("warm_batch") or warm_batch(run)
    try:
        plan = plan_minutes(run.cfg.minutes, warm["seconds"] / warm["prompts"], prompts, example["seconds"] / 60)
    except ValueError:
        run.models.close()
        if fresh:
            shutil.rmtree(run.out, ignore_errors=True)
        raise
    run.stages.update("train", planned_minutes=plan["train"], plan=plan, warm_batch=warm)
    log.info("plan for %g min: about %.1f min per evaluation (a warm batch: %d prompts in %.1f s), %.1f min around "
             "training, %.1f min to train", run.cfg.minutes, plan["eval"], warm["prompts"], warm["seconds"],
             plan["around"], plan["train"])


def run_demo(cfg: DemoSpec, train: TrainRun | None = None, say: Callable[[str], None] = print) -> dict:
    """Run (or continue) the demo of ``cfg``; returns report.json's content.

    ``train`` is the training run of ``--minutes`` > 0 (``j1 train``'s specs of the shipped recipe with
    ``--train_args``, its data DIR/data/train.jsonl and folder DIR/train); the train stage sets its time
    limit and the checkpoint to resume from. ``say`` shows results as they come (the example verdicts);
    stage starts and ends are logged.
    """
    from j1.runs.runinfo import RunFolder

    folder = RunFolder(cfg.out, command="j1 demo")
    out = folder.path
    stages = StageLog(out, {k: getattr(cfg, k) for k in (*RESUME_FIELDS, "progress")})
    asked, before = how_asked(cfg, out, train)
    run = DemoRun(cfg, out, stages, asked, before, say, train=train)
    folder.write(cfg, status="running")
    steps: dict[str, Callable[[], dict | None]] = {
        "example-before": lambda: stage_example(run, "before"), "data": lambda: stage_data(run),
        "eval-before": lambda: stage_eval(run, "before"), "train": lambda: stage_train(run),
        "eval-after": lambda: stage_eval(run, "after"), "example-after": lambda: stage_example(run, "after"),
        "report": lambda: stage_report(run),
    }
    fresh = not stages.done("example-before")
    names = stage_names(cfg.minutes)
    if warning := budget_warning(cfg.minutes, cfg.train_bf16):
        log.warning(warning)
    try:
        for i, name in enumerate(names, 1):
            if stages.done(name):
                log.info("stage %d/%d %s: done before (%.1f s), skipped", i, len(names), name, stages.seconds(name))
                continue
            log.info("stage %d/%d %s: start", i, len(names), name)
            stages.update(name, status="running", started=time.time())
            t0 = time.monotonic()
            extra = steps[name]() or {}
            stages.update(name, status="done", seconds=round(time.monotonic() - t0, 3), finished=time.time(), **extra)
            log.info("stage %d/%d %s: done in %.1f s", i, len(names), name, stages.seconds(name))
            if name == "example-before" and cfg.minutes > 0 and not stages.done("train"):
                plan_training(run, fresh)
    finally:
        run.models.close()
    folder.write(cfg, status="done")
    return json.loads((out / "report.json").read_text(encoding="utf-8"))
