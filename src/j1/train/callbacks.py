"""Trainer callbacks: every log line also goes to ``OUTPUT_DIR/log.jsonl``; a time box; a manifest in
every checkpoint."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from pathlib import Path

from transformers import TrainerCallback

from j1.schema import JsonlAppender, iter_jsonl, write_jsonl_atomic

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


class TimeLimitCallback(TrainerCallback):
    """Stop (and save) after the step that crosses ``minutes`` of training wall time: a time box for
    shared machines. The run can be continued with ``--resume_from_checkpoint latest``."""

    def __init__(self, minutes: float):
        self.seconds = minutes * 60.0
        self._start: float | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self._start = time.monotonic()

    def on_step_end(self, args, state, control, **kwargs):
        if self._start is not None and time.monotonic() - self._start > self.seconds:
            log.warning("time limit of %.1f min reached at step %d: stopping", self.seconds / 60, state.global_step)
            control.should_training_stop = True
            control.should_save = True
        return control


class CheckpointManifestCallback(TrainerCallback):
    """Write a judge manifest (``judge.json``) into every checkpoint folder, so that a checkpoint is a
    judge ``--model`` takes as it is, like ``final``. ``manifest(folder)`` builds it for a folder."""

    def __init__(self, manifest: Callable[[Path], object]):
        self.manifest = manifest

    def on_save(self, args, state, control, **kwargs):
        from j1.judges import write_manifest

        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if state.is_world_process_zero and folder.is_dir():
            write_manifest(folder, self.manifest(folder))
