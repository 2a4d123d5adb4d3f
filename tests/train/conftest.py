"""Fixtures for training tests: one torch thread and a small pair file (the tiny model is in tests/conftest.py)."""

from __future__ import annotations

import pytest
from tiny import write_pairs

# TRL flags that every CPU test run needs (no bf16 units here; no logging integrations).
CPU_FLAGS = ["--bf16", "false", "--use_cpu", "true", "--report_to", "none", "--logging_steps", "1",
             "--dataloader_num_workers", "0"]


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_torch_thread):
    """Every training test runs on one torch thread (``one_torch_thread`` in tests/conftest.py)."""
    yield


@pytest.fixture
def pair_file(tmp_path):
    return write_pairs(tmp_path / "pairs.jsonl")
