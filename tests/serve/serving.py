"""Test helpers for ``j1 serve``: the app on a real loopback port in a thread, or the command in a
child process, an HTTP client, free ports, a process's memory, and a scripted judge that prefers the
response about Paris."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

_SHOWN = re.compile(r"<response_([AB])-\w+>\n(.*?)\n</response_\1-\w+>", re.S)
_ALONE = re.compile(r"<response-\w+>\n(.*?)\n</response-\w+>", re.S)


def http():
    """httpx2 (openai 3's client), else httpx."""
    try:
        import httpx2 as httpx
    except ImportError:
        import httpx
    return httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prefers_paris(messages: list[dict], index: int, body: dict) -> str:
    """A pav judge that prefers the shown response mentioning Paris; when both or neither do, it says
    A (position bias); a response containing '???' makes it answer without a verdict (invalid)."""
    user = next(m["content"] for m in messages if m["role"] == "user")
    shown = dict(_SHOWN.findall(user))
    if any("???" in r for r in shown.values()):
        return "<think>confused</think> no verdict"
    paris = [pos for pos, r in shown.items() if "Paris" in r]
    pick = paris[0] if len(paris) == 1 else "A"
    return f"<think>scripted</think> <answer>[[{pick}]]</answer>"


def scores_paris(messages: list[dict], index: int, body: dict) -> str:
    """A pos judge: 8 for a response mentioning Paris, 3 otherwise, no score for one containing '???'."""
    user = next(m["content"] for m in messages if m["role"] == "user")
    (response,) = _ALONE.findall(user)
    if "???" in response:
        return "<think>confused</think> no score"
    return f"<think>scripted</think> <score>{8 if 'Paris' in response else 3}</score>"


@contextlib.contextmanager
def running_app(judge, **settings) -> Iterator[tuple[str, object]]:
    """``j1.serve.app`` for ``judge`` on a free loopback port, in a thread; yields (base URL, app)."""
    import uvicorn

    from j1.serve.app import ServerSettings, create_app

    app = create_app(judge, ServerSettings(**settings))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextlib.contextmanager
def serve_process(args: list[str], *, startup_s: float = 120.0) -> Iterator[tuple[str, subprocess.Popen]]:
    """``j1 serve ARGS`` in a child process on a free loopback port (one torch thread); yields (base URL,
    process) once /health answers, and kills the process afterwards if it still runs."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "j1.cli.main", "serve", "--port", str(port), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + startup_s
        with http().Client(timeout=5) as client:
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"j1 serve exited {proc.returncode}: {proc.stderr.read()[-3000:]}")
                try:
                    if client.get(url + "/health").status_code == 200:
                        break
                except http().TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("j1 serve did not start")
                time.sleep(0.1)
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stderr.close()


def rss_bytes(pid: int) -> int:
    """Resident memory of process ``pid`` (Linux /proc)."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")
