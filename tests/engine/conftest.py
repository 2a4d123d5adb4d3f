"""A real engine for the served paths: j1-135m exported as GGUF (``j1 export judge --gguf``) and served by
llama.cpp's OpenAI-compatible server (the ``llamacpp`` extra; ``make test-engine`` builds it once). Every
test here is marked ``engine`` and runs only when asked (``pytest -m engine``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SERVED_NAME = "j1-135m"  # the shipped judge's name: --judge j1-135m asks the engine for it
CONTEXT = 2048  # the server's context: the held-out prompts fit, a padded one does not


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/engine/" in str(item.fspath):
            item.add_marker(pytest.mark.engine)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def judge_gguf(tmp_path_factory) -> Path:
    from j1.cli.main import main

    out = tmp_path_factory.mktemp("gguf") / "j1-135m.gguf"
    assert main(["export", "judge", "j1-135m", "--gguf", str(out)]) == 0
    return out


@pytest.fixture(scope="session")
def engine_url(judge_gguf, tmp_path_factory):
    """llama.cpp's server on loopback, serving the exported judge as ``j1-135m``; its log in the tmp folder."""
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError:
        pytest.fail("the engine tests need llama.cpp's server: make test-engine (pip install 'j1[llamacpp]')")
    port = _free_port()
    log = tmp_path_factory.mktemp("engine") / "server.log"
    threads = str(max(1, min(2, os.cpu_count() or 1)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(judge_gguf), "--model_alias", SERVED_NAME,
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(CONTEXT), "--n_threads", threads,
         "--n_batch", "512", "--seed", "0"],
        stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + 120
    while True:
        try:
            urllib.request.urlopen(f"{url}/models", timeout=2).read()
            break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                pytest.fail(f"llama.cpp's server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
