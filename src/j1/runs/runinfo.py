"""run.json: what a run directory needs to be reproduced (config, versions, git revision, times), and
``RunFolder``: the one home of a run folder's rules (created on start, run.json written atomically and
read back, the settings a ``--resume`` must keep). Every command that writes a run.json goes through it."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import platform
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from j1.runs.atomic import write_json_atomic

_PACKAGES = ("j1", "torch", "transformers", "trl", "peft", "accelerate", "datasets", "math-verify", "openai")


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_revision(cwd: str | Path | None = None) -> dict[str, Any]:
    """HEAD and whether the tree is dirty; ``None`` values outside a git checkout."""
    cwd = cwd or Path(__file__).resolve().parent
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain"], cwd=cwd, capture_output=True, text=True, check=True
            ).stdout.strip()
        )
        return {"revision": rev, "dirty": dirty}
    except (OSError, subprocess.CalledProcessError):
        return {"revision": None, "dirty": None}


def config_dict(config: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(config):
        return dataclasses.asdict(config)
    if hasattr(config, "to_dict"):
        return config.to_dict()
    return dict(config)


def setting_changes(old: Mapping[str, Any], new: Mapping[str, Any], keys: Iterable[str]) -> list[str]:
    """Each of ``keys`` that the recorded config ``old`` holds and ``new`` changes, as flags: the one rule
    for continuing a run. A key ``old`` lacks is not checked (an older j1 did not record it).

    >>> setting_changes({"seed": 0, "limit": 5, "format": "pav"}, {"seed": 1, "limit": 9}, ("seed", "model", "format"))
    ['--seed was 0, now 1', "--format was 'pav', now None"]
    """
    return [f"--{k} was {old[k]!r}, now {new.get(k)!r}" for k in keys if k in old and old[k] != new.get(k)]


class RunFolder:
    """A run's folder: created when this is made, its ``run.json`` written atomically, and the rule
    for continuing a run in it.

    Args:
        path: the folder.
        command: the command run.json records (``eval``, ``attack``, ``j1 train``, ...).
        started: when the run started (``time.time()``); now when None.
        resume_keys: the config fields a ``--resume`` must keep (the rest may change between attempts).
        result: the file whose lines a run appends (``judgments.jsonl``): a folder holding a non-empty
            one is a run, continued only with ``--resume``.
        record: run.json's name; a pair file's run keeps it beside the file (``math.run.json``).

    >>> import tempfile
    >>> folder = RunFolder(tempfile.mkdtemp(), command="eval", resume_keys=("seed",))
    >>> _ = folder.write({"seed": 0, "resume": False}, status="running")
    >>> folder.check_resume({"seed": 1}, resume=True)
    Traceback (most recent call last):
    ...
    ValueError: --resume ...: the run was made with other settings (--seed was 0, now 1); use the same settings or another --out
    """

    def __init__(self, path: str | Path, *, command: str, started: float | None = None,
                 resume_keys: Sequence[str] = (), result: str = "judgments.jsonl", record: str = "run.json"):
        self.path = Path(path)
        self.command = command
        self.started = time.time() if started is None else started
        self.resume_keys = tuple(resume_keys)
        self.result = self.path / result
        self.run_json = self.path / record
        self.path.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def read(path: str | Path, record: str = "run.json") -> dict[str, Any]:
        """The run.json of the folder ``path``, read without opening the folder as a run (scoring a finished
        run, exporting a trained judge): the one reader of run.json.

        Raises:
            FileNotFoundError: the folder has no run.json.
            ValueError: run.json is not valid JSON (naming the file and line).
        """
        run_json = Path(path) / record
        text = run_json.read_text(encoding="utf-8")
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{run_json}: not valid JSON (line {exc.lineno}: {exc.msg})") from None

    def recorded(self) -> dict[str, Any]:
        """run.json's content; empty when the folder has none yet.

        Raises:
            ValueError: run.json is not valid JSON (naming the file and line).
        """
        if not self.run_json.exists():
            return {}
        return self.read(self.path, self.run_json.name)

    def check_resume(self, config: Any, *, resume: bool) -> None:
        """Refuse to mix runs: a folder with results needs ``resume``, and ``resume`` needs the recorded
        ``resume_keys`` unchanged in ``config`` (a dataclass or a mapping).

        Raises:
            FileExistsError: the folder holds a run and ``resume`` is off.
            ValueError: ``resume`` with changed settings, naming each as ``--KEY was OLD, now NEW``.
        """
        if self.result.exists() and self.result.stat().st_size > 0 and not resume:
            raise FileExistsError(f"{self.result} exists: pass --resume to continue that run, or choose another --out")
        if not (resume and self.run_json.exists()):
            return
        new = config if isinstance(config, Mapping) else {k: getattr(config, k) for k in self.resume_keys
                                                           if hasattr(config, k)}
        changes = setting_changes(self.recorded().get("config", {}), new, self.resume_keys)
        if changes:
            raise ValueError(f"--resume {self.path}: the run was made with other settings ({', '.join(changes)}); "
                             "use the same settings or another --out")

    def clear(self, *names: str) -> None:
        """Remove outputs a finished run rewrites (a resumed run's old report would look complete)."""
        for name in names:
            (self.path / name).unlink(missing_ok=True)

    def write(self, config: Any, **extra: Any) -> dict:
        """Write run.json (atomically) with the config, versions, times and ``extra``; returns it. A run
        that goes on rewrites it whole (``status`` running, then done or interrupted)."""
        info = {
            "command": self.command,
            "argv": sys.argv,
            "config": config_dict(config),
            "versions": versions(),
            "git": git_revision(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(self.started)),
            "seconds": round(time.time() - self.started, 3),
            **extra,
        }
        manifest = getattr(config, "manifest", None)
        if manifest is not None and hasattr(manifest, "to_json") and "judge_manifest" not in info:
            info["judge_manifest"] = manifest.to_json()  # how the judge was asked, wherever it ran
        write_json_atomic(self.run_json, info)
        return info
