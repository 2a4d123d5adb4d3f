"""When a training run stops and saves: on SIGTERM or SIGINT, at ``--max_minutes``, every
``--save_minutes``; decided alike on every process (issue 52).

Each decision is reduced over the processes at every step boundary (``j1.train.ranks``): a signal or a
deadline that one process sees stops or saves all of them at the same boundary, since a ZeRO-3 save is
a collective that hangs when one process does not come.

A signal leaves a grace period before the kill that follows it: torchrun SIGKILLs its workers
``TORCH_ELASTIC_SHUTDOWN_TIMEOUT`` seconds (30 by default) after forwarding a SIGTERM, a scheduler
after its own kill wait. A paper-scale optimizer step takes minutes, so waiting for its end can lose
the checkpoint. With a grace period, the run finishes the step when the rest of the step and a save fit
inside it, and otherwise stops at the next micro-step boundary: the optimizer steps done so far are
saved (the partial step is redone on resume). Without one (a plain process), it stops at the end of the
step. A second signal stops at once.
"""

from __future__ import annotations

import logging
import signal
import statistics
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from transformers import TrainerCallback

from j1.train.ranks import from_main, max_over_processes

log = logging.getLogger(__name__)


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped on SIGTERM or SIGINT; ``checkpoint``: whether a checkpoint holds the step it reached
    (none does when it stopped before its first optimizer step)."""

    def __init__(self, signum: int, step: int, checkpoint: bool = True):
        super().__init__(f"stopped by {signal.Signals(signum).name} at step {step}")
        self.signum, self.step, self.checkpoint = signum, step, checkpoint

    @property
    def advice(self) -> str:
        """What the run left to continue from, for the command's last line."""
        if self.checkpoint:
            return "checkpoint saved; continue with --resume_from_checkpoint latest"
        return "before its first optimizer step: no checkpoint (start it again)"


def step_seconds_left(done: int, per_step: int, this_step: Sequence[float], last_step: Sequence[float]) -> float:
    """Seconds the rest of an optimizer step of ``per_step`` micro-steps will take once ``done`` are done:
    as those micro-steps took in the last whole step, else at this step's pace so far (the median of its
    micro-steps after the first, which also generated the rollouts).

    >>> step_seconds_left(2, 4, [90.0, 2.0], [80.0, 2.0, 3.0, 3.0])   # the last step's 3 + 3
    6.0
    >>> step_seconds_left(3, 8, [90.0, 2.0, 4.0], [])                  # 5 more at the median of 2 and 4
    15.0
    >>> step_seconds_left(4, 4, [1.0] * 4, [])
    0.0
    """
    rest = max(per_step - done, 0)
    if len(last_step) == per_step:
        return float(sum(last_step[done:]))
    pace = statistics.median(this_step[1:]) if len(this_step) > 1 else (this_step[0] if this_step else 0.0)
    return rest * pace


def must_stop_now(now: float, deadline: float, step_left: float, save_seconds: float) -> bool:
    """Whether a signalled run must stop at this micro-step boundary: the rest of the step and a save
    after it would not end before ``deadline`` (the kill).

    >>> must_stop_now(100.0, 130.0, 20.0, 5.0), must_stop_now(100.0, 130.0, 20.0, 15.0)
    (False, True)
    """
    return now + step_left + save_seconds > deadline


def complete_checkpoint(output_dir: str | Path, step: int) -> bool:
    """Whether ``output_dir/checkpoint-step`` holds a whole ``trainer_state.json`` (saved to the end)."""
    from j1.train.resume import whole_json

    return whole_json(Path(output_dir) / f"checkpoint-{step}" / "trainer_state.json")


class StopAndSaveCallback(TrainerCallback):
    """Stops and saves on a signal (SIGTERM, SIGINT), at ``max_minutes`` of training, and saves every
    ``save_minutes`` besides the trainer's step-based saves; see the module docstring.

    Args:
        max_minutes: stop (and save) after the step that crosses this much training time; None: no box.
        save_minutes: also checkpoint at the end of the first step this long after the last save (a
            kill loses at most that much); the saves are the trainer's own, so ``save_total_limit``
            prunes them too.
        grace_seconds: seconds between a signal and the kill that follows it; None: stop at the end
            of the step.

    ``stopped_by`` is the signal that stopped the run, the same on every process (None if none did);
    ``close()`` puts the previous signal handlers back.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self, *, max_minutes: float | None = None, save_minutes: float | None = None,
                 grace_seconds: float | None = None):
        self.limit = None if max_minutes is None else max_minutes * 60.0
        self.every = None if save_minutes is None else save_minutes * 60.0
        self.grace = grace_seconds
        self.received: int | None = None  # this process's signal
        self.received_at: float | None = None
        self.stopped_by: int | None = None
        self.saved_at_stop = True
        self._previous: dict[int, object] = {}
        self._start = self._last_save = self._boundary = None
        self._this_step: list[float] = []
        self._last_step: list[float] = []
        self._save_began: float | None = None
        self._save_took: float | None = None

    # --- signals ---
    def _handle(self, signum, frame):
        if self.received is not None:
            self.close()
            raise KeyboardInterrupt
        self.received, self.received_at = signum, time.monotonic()
        when = "at the end of this step" if self.grace is None else \
            f"within its {self.grace:g} s grace (at the end of this step if that fits, else at the next micro-step)"
        log.warning("%s: saving a checkpoint %s, then stopping (again to stop at once)", signal.Signals(signum).name,
                    when)

    def close(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}

    def on_train_begin(self, args, state, control, **kwargs):
        if threading.current_thread() is threading.main_thread():  # signal handlers live in the main thread
            self._previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        self._start = self._last_save = self._boundary = time.monotonic()

    def on_train_end(self, args, state, control, **kwargs):
        self.close()

    # --- boundaries ---
    def _tick(self) -> float:
        now = time.monotonic()
        self._this_step.append(now - self._boundary)
        self._boundary = now
        return now

    def on_substep_end(self, args, state, control, **kwargs):
        now = self._tick()
        urgent = False
        if self.received is not None and self.grace is not None:
            left = step_seconds_left(len(self._this_step), args.gradient_accumulation_steps, self._this_step,
                                     self._last_step)
            save = self._save_took if self._save_took is not None else self.grace / 2  # untimed: keep half
            urgent = must_stop_now(now, self.received_at + self.grace, left, save)
        signum, urgent = max_over_processes([self.received or 0, urgent], args.device)
        if urgent:
            # The optimizer steps done are saved; the partial step is redone on resume. A checkpoint of
            # this very step already there (a step-based save) is kept as it is, and the time saved.
            step = state.global_step
            self.saved_at_stop = step > 0
            need = from_main(lambda: step > 0 and not complete_checkpoint(args.output_dir, step))
            log.warning("%s: stopping mid-step (the rest of the step and a save would not fit the %g s grace); "
                        "%s", signal.Signals(int(signum)).name, self.grace,
                        f"saving step {step}" if need else f"checkpoint-{step} already holds step {step}"
                        if step else "no optimizer step to save yet")
            control.should_training_stop = True
            control.should_save = bool(need)
            self.stopped_by = int(signum)
            self._save_began = now if need else None
        return control

    def on_step_end(self, args, state, control, **kwargs):
        now = self._tick()
        self._last_step, self._this_step = self._this_step, []
        time_up = self.limit is not None and now - self._start > self.limit
        save_due = self.every is not None and now - self._last_save >= self.every
        signum, time_up, save_due = max_over_processes([self.received or 0, time_up, save_due], args.device)
        if time_up and not signum:
            log.warning("time limit of %.1f min reached at step %d: stopping", self.limit / 60, state.global_step)
        if signum or time_up:
            control.should_training_stop = True
            control.should_save = True
        if save_due:
            control.should_save = True
        if signum:
            self.stopped_by = int(signum)
        if control.should_save:
            self._save_began = now
        return control

    def on_save(self, args, state, control, **kwargs):
        now = time.monotonic()
        if self._save_began is not None:
            self._save_took = now - self._save_began
        self._save_began = None
        self._last_save = now
