"""Doctests over ``src/j1`` (pyproject's ``--doctest-modules``): a module that imports an optional
extra at its top (``serve``'s fastapi app) is left out of collection where that extra is not installed,
so the default test run works on a bare ``pip install -e .[dev]``; every other module's doctests run.
Outside ``src/j1`` only test files are collected, as before."""

from __future__ import annotations

import ast
import importlib.util
from fnmatch import fnmatch
from pathlib import Path

SRC = Path(__file__).resolve().parent / "src" / "j1"
# Top-level package -> the extra that installs it (pyproject's optional-dependencies).
OPTIONAL = {"fastapi": "serve", "starlette": "serve", "uvicorn": "serve", "prometheus_client": "serve",
            "vllm": "vllm", "verl": "verl", "deepspeed": "deepspeed", "llama_cpp": "llamacpp"}


def _missing_extras(path: Path) -> set[str]:
    """The extras whose packages ``path`` imports at module level and which are not installed."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {OPTIONAL[n] for n in names & OPTIONAL.keys() if importlib.util.find_spec(n) is None}


def pytest_ignore_collect(collection_path: Path, config):
    if collection_path.suffix != ".py":
        return None
    if SRC in collection_path.parents:
        return True if _missing_extras(collection_path) else None
    # Elsewhere (tests/) doctests are not wanted: collect only what pytest collected before --doctest-modules
    # (test files, conftests), not helper modules and scripts (tests/verl_check.py needs verl's omegaconf).
    patterns = [*config.getini("python_files"), "conftest.py"]
    return None if any(fnmatch(collection_path.name, p) for p in patterns) else True
