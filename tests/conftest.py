"""Shared fixtures: the embedded model (loaded once per session), a tiny random model built locally
(``train/tiny.py``), one torch thread for tiny-model tests, the shared data folder, the ``gpu``
marker (skipped when no CUDA device is present) and the ``device`` those tests run on.

``J1_TEST_DEVICE=cpu`` runs on the CPU the ``gpu`` tests that take the ``device`` fixture (written for
either device: tests/gpu/), so the GPU suite is proven on a machine without one
(``J1_TEST_DEVICE=cpu pytest -m gpu``); CUDA is then hidden from the whole session, so that the commands'
own choice (cuda when present) is the CPU too. A ``gpu`` test without ``device`` needs CUDA itself (a
bf16 recipe that TRL refuses on a CPU) and stays skipped."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("J1_SHARED_DATA", REPO.parent / "shared" / "data"))


DEVICES = ("cuda", "cpu")


def _test_device() -> str:
    """Where ``gpu`` tests run: ``J1_TEST_DEVICE`` (cuda or cpu), cuda when unset."""
    device = os.environ.get("J1_TEST_DEVICE") or "cuda"
    if device not in DEVICES:
        raise pytest.UsageError(f"J1_TEST_DEVICE={device!r}: choose cuda or cpu (or leave it unset for cuda)")
    return device


def worker_threads(workers: int, cores: int) -> int:
    """Torch/OpenMP threads for one of ``workers`` parallel test processes on ``cores`` cores: its share,
    at least one (threads beyond the cores spin-wait against each other and slow every worker).

    >>> worker_threads(2, 2), worker_threads(2, 16), worker_threads(4, 2)
    (1, 8, 1)
    """
    return max(1, cores // workers)


def pytest_configure(config):
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")  # set in each pytest-xdist worker
    if workers:
        threads = str(worker_threads(int(workers), len(os.sched_getaffinity(0))))
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = threads  # the CLI subprocesses too
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(int(threads))
    if _test_device() == "cpu":
        # Before torch is imported: the CLI's commands pick cuda when they see one, and they must not.
        os.environ["CUDA_VISIBLE_DEVICES"] = ""


def pytest_collection_modifyitems(config, items):
    on_cpu = _test_device() == "cpu"
    if not on_cpu:
        try:
            import torch

            if torch.cuda.is_available():
                return
        except ImportError:
            pass
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords and not (on_cpu and "device" in getattr(item, "fixturenames", ())):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def device() -> str:
    """The device of the ``gpu`` tests: "cuda", or "cpu" under ``J1_TEST_DEVICE=cpu``."""
    return _test_device()


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


@pytest.fixture(scope="session")
def embedded_fp32(embedded_backend):
    """The embedded model in float32, whatever the machine's default: where decoding paths must give the
    same tokens (bf16 rounds differently as a batch's shape changes, and j1 judges in bf16 on CPUs that
    compute it natively: ``j1.device.local_dtype``)."""
    from j1.backends.local import LocalBackend

    if embedded_backend.dtype == "float32":
        return embedded_backend
    return LocalBackend(None, dtype="float32")


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


@pytest.fixture
def no_model_no_hub(monkeypatch):
    """Loading a model or asking the hub fails the test: bad input must be caught before either."""
    import datasets
    import transformers

    def refuse(*args, **kwargs):
        raise AssertionError("bad input reached a model load or a hub request")

    monkeypatch.setattr(datasets, "load_dataset", refuse)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)


@pytest.fixture
def hub_offline(monkeypatch):
    """No network for the Hugging Face libraries in this process: the variables, and the constants that
    ``huggingface_hub`` and ``datasets`` read from them at import (setting only the variables after the
    import leaves them trying the hub until its connection times out)."""
    import datasets.config
    import huggingface_hub.constants

    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
