"""run.json: what a run directory needs to be reproduced (config, versions, git revision, times)."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from j1.schema import write_json_atomic

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


def write_run_json(path: str | Path, *, command: str, config: Any, started: float, **extra: Any) -> dict:
    """Write ``run.json`` (atomically) and return what was written."""
    info = {
        "command": command,
        "argv": sys.argv,
        "config": config_dict(config),
        "versions": versions(),
        "git": git_revision(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "seconds": round(time.time() - started, 3),
        **extra,
    }
    write_json_atomic(path, info)
    return info
