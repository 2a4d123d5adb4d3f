"""Shared fixtures: the embedded model (loaded once per session), a tiny random model built locally
(``train/tiny.py``), one torch thread for tiny-model tests, the shared data folder, and the ``gpu``
marker (skipped when no CUDA device is present)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("J1_SHARED_DATA", REPO.parent / "shared" / "data"))


def pytest_collection_modifyitems(config, items):
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if has_gpu:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the checkout (real public data; see its SOURCES.md)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def embedded_backend():
    """The embedded SmolLM2-135M-Instruct as a LocalBackend, loaded once for the whole run."""
    from j1.backends.local import LocalBackend

    return LocalBackend(None)


@pytest.fixture
def fake_openai():
    """A scripted OpenAI-compatible server on loopback; see tests/fake_openai.py."""
    from fake_openai import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="session")
def transformers_server():
    """A real OpenAI-compatible server (``transformers serve``) for the embedded model on loopback.

    Yields ``(base_url, model_name)``. Started once per test session; killed at the end.
    """
    import shutil
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    from j1.models import resolve_model

    exe = shutil.which("transformers", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the transformers CLI is not installed")
    path = resolve_model(None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [exe, "serve", path, "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.time() + 180
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited: {proc.stderr.read()[-2000:]}")
            try:
                urllib.request.urlopen(f"{base_url}/models", timeout=2).read()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
        yield base_url, path
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tests on the tiny model run 3-4x faster on one thread when the machine is shared (spin-waiting
    OpenMP threads); restored afterwards for the other test modules."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A 2-layer random Llama with the embedded model's tokenizer, saved to a folder (``train/tiny.py``)."""
    from train.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))
