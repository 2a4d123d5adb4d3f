"""Honest accounting on resume (issue 46): a resumed run counts as trained only what its checkpoint
holds, and each interruption's lost work (the steps and minutes trained after the checkpoint, redone
now) is recorded, not charged to a time budget.

Two records feed it: the checkpoint's ``trainer_state.json`` (the training clock
``TrainClockCallback`` saves in it) and ``OUTPUT_DIR/progress.json`` (where training had got to,
written after every step by the same callback).
"""

from __future__ import annotations

import json
from pathlib import Path

# The clock's name in trainer_state.json's stateful_callbacks (its class name, as transformers keys it).
CLOCK = "TrainClockCallback"
# OUTPUT_DIR/PROGRESS_FILE: where training got to, written after every step.
PROGRESS_FILE = "progress.json"


def whole_json(path: Path) -> bool:
    """Whether ``path`` holds a whole JSON document (a kill while writing it tears it)."""
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return False
    return True


def state_seconds(state: dict) -> float:
    """Training seconds a trainer state (``trainer_state.json``) holds: the clock ``TrainClockCallback``
    keeps there, else (a checkpoint saved without it) the logged ``step_time`` up to its step.

    >>> state_seconds({"stateful_callbacks": {CLOCK: {"args": {}, "attributes": {"trained_seconds": 90.5}}}})
    90.5
    >>> state_seconds({"global_step": 2, "log_history": [{"step": 1, "step_time": 3.0}, {"step": 2, "step_time": 4.0},
    ...                                                   {"step": 2, "train_runtime": 9.0}]})
    7.0
    """
    clock = (state.get("stateful_callbacks") or {}).get(CLOCK)
    if isinstance(clock, list):  # transformers keeps a list when a callback class appears twice
        clock = clock[-1] if clock else None
    if isinstance(clock, dict) and "trained_seconds" in clock.get("attributes", {}):
        return float(clock["attributes"]["trained_seconds"])
    step = state.get("global_step", 0)
    return float(sum(row.get("step_time") or 0.0 for row in state.get("log_history", []) if row.get("step", 0) <= step))


def checkpoint_progress(folder: str | Path | None) -> dict:
    """``{"global_step", "trained_seconds"}`` of a checkpoint folder; zeros for None (a fresh start)."""
    if folder is None:
        return {"global_step": 0, "trained_seconds": 0.0}
    path = Path(folder) / "trainer_state.json"
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg}); resume from another checkpoint") \
            from None
    return {"global_step": int(state.get("global_step", 0)), "trained_seconds": state_seconds(state)}


def read_progress(output_dir: str | Path) -> dict | None:
    """``OUTPUT_DIR/progress.json`` (where the last run's training got to), None if there is none."""
    path = Path(output_dir) / PROGRESS_FILE
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:  # written atomically, so only a hand edit gets here
        raise ValueError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg}); delete it") from None


def interruptions(previous: list[dict], progress: dict | None, checkpoint: dict) -> list[dict]:
    """The interruptions of a run after this start: ``previous`` (the last start's list) plus, when the
    last run was cut short (``progress`` not ``finished``), what it lost: the steps and minutes trained
    past ``checkpoint`` (what this start resumes from; step 0 = from scratch). A start that continues
    nothing (no checkpoint, the last run finished or never ran) begins a new list.

    >>> cut = {"global_step": 12, "trained_seconds": 162.0, "finished": False}  # killed 2.7 min in
    >>> interruptions([], cut, {"global_step": 0, "trained_seconds": 0.0})
    [{'reached_step': 12, 'resumed_from_step': 0, 'lost_steps': 12, 'lost_minutes': 2.7}]
    >>> interruptions([], cut, {"global_step": 10, "trained_seconds": 135.0})[0]["lost_minutes"]  # (162 - 135) / 60
    0.45
    >>> interruptions([{"lost_steps": 1}], {**cut, "finished": True}, {"global_step": 0, "trained_seconds": 0.0})
    []
    """
    continued = checkpoint["global_step"] > 0
    if progress is None or progress.get("finished", True):
        return list(previous) if continued else []
    lost_steps = max(0, int(progress["global_step"]) - checkpoint["global_step"])
    lost_seconds = max(0.0, float(progress["trained_seconds"]) - checkpoint["trained_seconds"])
    if lost_steps == 0 and lost_seconds < 1.0:  # stopped before a step was done: nothing lost
        return list(previous)
    return [*previous, {"reached_step": int(progress["global_step"]), "resumed_from_step": checkpoint["global_step"],
                        "lost_steps": lost_steps, "lost_minutes": round(lost_seconds / 60, 3)}]
