"""Fixtures for training tests: a tiny random model and a small pair file (see tiny.py)."""

from __future__ import annotations

import pytest
from tiny import build_tiny_model, write_pairs

# TRL flags that every CPU test run needs (no bf16 units here; no logging integrations).
CPU_FLAGS = ["--bf16", "false", "--use_cpu", "true", "--report_to", "none", "--logging_steps", "1",
             "--dataloader_num_workers", "0"]


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture
def pair_file(tmp_path):
    return write_pairs(tmp_path / "pairs.jsonl")
