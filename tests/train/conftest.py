"""Fixtures for training tests: a tiny random model and a small pair file (see tiny.py)."""

from __future__ import annotations

import pytest
from tiny import build_tiny_model, write_pairs

# TRL flags that every CPU test run needs (no bf16 units here; no logging integrations).
CPU_FLAGS = ["--bf16", "false", "--use_cpu", "true", "--report_to", "none", "--logging_steps", "1",
             "--dataloader_num_workers", "0"]


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Training tests on the tiny model run 3-4x faster on one thread when the machine is shared
    (spin-waiting OpenMP threads); restored afterwards for the other test packages."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture
def pair_file(tmp_path):
    return write_pairs(tmp_path / "pairs.jsonl")
