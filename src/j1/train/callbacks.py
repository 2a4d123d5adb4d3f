"""Trainer callbacks: every log line also goes to ``OUTPUT_DIR/log.jsonl``; a manifest in every checkpoint;
a training clock that survives resumes. When a run stops and saves (signals, time box, timed saves) is
``j1.train.stopping``."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from pathlib import Path

from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState

from j1.runs.atomic import JsonlAppender, write_json_atomic, write_jsonl_atomic
from j1.schema import iter_jsonl
from j1.train.resume import CLOCK, PROGRESS_FILE, state_seconds

log = logging.getLogger(__name__)


class JsonlLogCallback(TrainerCallback):
    """Append each ``on_log`` dict (with ``step`` and ``epoch``) to a JSONL file on the main process.

    On a resumed run, lines logged after the checkpoint's step are dropped first, so a crash and a
    resume never duplicate steps in the file.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._out: JsonlAppender | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        # a line is logged at the step it describes: those of later steps are redone after the checkpoint
        self._out = reopen_for_resume(self.path, state.global_step, lambda row: row.get("step", 0) <= state.global_step)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self._out is None or not logs:
            return
        row = {"step": state.global_step, "epoch": state.epoch}
        for key, value in logs.items():
            if isinstance(value, float) and not math.isfinite(value):
                value = None  # JSON has no NaN
            row[key] = value
        self._out.write(row)

    def on_train_end(self, args, state, control, **kwargs):
        if self._out is not None:
            self._out.close()
            self._out = None


def reopen_for_resume(path: Path, global_step: int, keep) -> JsonlAppender:
    """Open a per-step JSONL of a run for appending. A run resumed at ``global_step`` > 0 keeps only
    the rows ``keep(row)`` accepts (what was written up to its checkpoint: the rest is redone, and
    kept it would appear twice); a fresh run (step 0) starts the file anew."""
    if path.exists() and global_step > 0:
        write_jsonl_atomic(path, [obj for _, obj in iter_jsonl(path, allow_torn_tail=True) if keep(obj)])
    elif path.exists():
        path.unlink()
    return JsonlAppender(path, fsync=False)


class CheckpointManifestCallback(TrainerCallback):
    """Write a judge manifest (``judge.json``) into every checkpoint folder, so that a checkpoint is a
    judge ``--model`` takes as it is, like ``final``. ``manifest(folder)`` builds it for a folder."""

    def __init__(self, manifest: Callable[[Path], object]):
        self.manifest = manifest

    def on_save(self, args, state, control, **kwargs):
        from j1.judging.judges import write_manifest

        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if state.is_world_process_zero and folder.is_dir():
            write_manifest(folder, self.manifest(folder))


class TrainClockCallback(TrainerCallback, ExportableState):
    """The training wall time a run holds, across resumes: kept in every checkpoint (trainer_state.json's
    ``stateful_callbacks``) and, after every step, in ``OUTPUT_DIR/progress.json`` (``global_step``,
    ``trained_seconds``, ``finished``). What a kill loses is the difference (``j1.train.resume``)."""

    def __init__(self, output_dir: str | Path | None = None, trained_seconds: float = 0.0):
        self.output_dir = None if output_dir is None else Path(output_dir)
        self.trained_seconds = trained_seconds
        self._start: float | None = None
        self._base = 0.0

    def seconds(self) -> float:
        """Training seconds so far: the checkpoint's, plus this run's."""
        return self.trained_seconds if self._start is None else self._base + time.monotonic() - self._start

    def on_train_begin(self, args, state, control, **kwargs):
        # the state is the checkpoint's on a resume (the trainer loads it before this call)
        saved = {"global_step": state.global_step, "log_history": state.log_history,
                 "stateful_callbacks": state.stateful_callbacks}
        self._base = state_seconds(saved) if state.global_step > 0 else 0.0
        # a checkpoint saved without this callback has no entry, and the trainer's save expects one
        state.stateful_callbacks.setdefault(CLOCK, self.state())
        self._start = time.monotonic()
        self._write(state, finished=False)

    def on_step_end(self, args, state, control, **kwargs):
        self._write(state, finished=False)

    def on_train_end(self, args, state, control, **kwargs):
        self._write(state, finished=True)
        self.trained_seconds, self._start = self.seconds(), None

    def _write(self, state, finished: bool) -> None:
        if self.output_dir is not None and state.is_world_process_zero:
            write_json_atomic(self.output_dir / PROGRESS_FILE, {
                "global_step": state.global_step, "trained_seconds": round(self.seconds(), 3), "finished": finished})

    def state(self) -> dict:
        return {"args": {}, "attributes": {"trained_seconds": round(self.seconds(), 3)}}


COLLAPSE_STEPS = 3  # logged steps in a row: one odd batch is noise, three are a judge that stopped reading the pair


def collapse_message(history: list[tuple[int, float]], threshold: float, steps: int = COLLAPSE_STEPS) -> str | None:
    """The line that names a collapse of sampled thoughts, or None: the last ``steps`` logged values of
    ``j1/thought_shared`` (``(step, share)``, the share of rollouts whose thought another prompt also got) all at
    or over ``threshold``.

    >>> collapse_message([(38, 0.95), (39, 0.91), (40, 0.92)], 0.9)
    'thoughts collapsed: 92% identical at step 40 (at least 90% for 3 logged steps; j1/thought_shared)'
    >>> collapse_message([(38, 0.5), (39, 0.91), (40, 0.92)], 0.9) is None, collapse_message([(1, 1.0)], 0.9) is None
    (True, True)
    """
    last = history[-steps:]
    if len(last) < steps or any(share < threshold for _, share in last):
        return None
    step, share = last[-1]
    return (f"thoughts collapsed: {share:.0%} identical at step {step} (at least {threshold:.0%} for {steps} "
            f"logged steps; j1/thought_shared)")


class ThoughtCollapseCallback(TrainerCallback):
    """Stops a run whose sampled thoughts collapsed (``collapse_message``), saying so, instead of training on
    silently: the trainer saves and ends at that step, and ``collapsed`` holds the line (run.json records it).
    ``spread`` keeps each logged step's thought length and spread for run.json."""

    KEYS = ("j1/thought_median_words", "j1/thought_distinct", "j1/thought_shared")

    def __init__(self, threshold: float):
        self.threshold = threshold
        self.history: list[tuple[int, float]] = []
        self.spread: list[dict] = []
        self.collapsed: str | None = None

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or "j1/thought_shared" not in logs:
            return
        self.spread.append({"step": state.global_step, **{k.removeprefix("j1/"): logs.get(k) for k in self.KEYS}})
        self.history.append((state.global_step, float(logs["j1/thought_shared"])))
        message = collapse_message(self.history, self.threshold)
        if message is not None and self.collapsed is None:
            self.collapsed = message
            log.error("%s: stopping; the judge no longer writes a thought about the pair", message)
            control.should_training_stop = True
            control.should_save = True
