"""``j1 serve``: a judge behind HTTP (OpenRLHF's /get_reward, /v1/judge), requests batched together.

The port is bound before the model loads, so a port in use fails at once, in one line. SIGTERM or
Ctrl-C stops the server: the listener closes (new connections are refused), the requests in flight
have ``--shutdown_timeout`` seconds to be answered, the rest are answered 503, and the process
exits, even while the model is mid-batch (a forward cannot be interrupted from Python, so the
process leaves it with ``os._exit``). It exits 0 when nothing was cut short, 1 when it was.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence

from j1.cli.common import parse, setup_logging
from j1.device import serve_batch
from j1.serve.spec import ServeSpec

log = logging.getLogger(__name__)

# After the grace period: time for the 503 answers to go out and the server to stop, before the
# process is ended from the watchdog thread whatever it is doing.
_EXIT_MARGIN_S = 2.0
# Once the command has returned: time for Python's own teardown (1-2 s with a model loaded), after
# which something holding the interpreter (a thread that does not end) is not waited for.
_TEARDOWN_S = 30.0


def _fail(message: str) -> int:
    sys.stderr.write("j1 serve: error: " + " ".join(message.split()) + "\n")
    return 2


def _listen_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (uvicorn listens on it once the judge has loaded).

    Raises:
        OSError: the address is in use, or not this machine's.
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    # As uvicorn binds: a port left in TIME_WAIT by a previous run is free, one another server listens on is not.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def _exit_now(code: int) -> None:
    """End the process at once (no thread joins), after flushing what has been logged."""
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _enforce_stop(server, batcher, grace: float, returned: threading.Event, code: list[int]) -> None:
    """Watchdog (a daemon thread): once the server starts to stop, give the waiting requests
    ``grace`` seconds, answer the rest 503, and end the process if it still runs shortly after.
    ``returned`` is set when the command has returned ``code[0]`` and Python is tearing down."""
    while not server.should_exit:
        time.sleep(0.05)
    log.info("stopping: the requests in flight have %g s to be answered (--shutdown_timeout)", grace)
    deadline = time.monotonic() + grace
    while batcher.waiting and time.monotonic() < deadline:
        time.sleep(0.05)
    if batcher.waiting:
        log.warning("%d request(s) not answered within --shutdown_timeout %g s: answering them 503",
                    batcher.waiting, grace)
        batcher.abandon("the server is stopping and this request was not judged within --shutdown_timeout")
    if returned.wait(_EXIT_MARGIN_S):
        time.sleep(_TEARDOWN_S)
        log.error("j1 serve returned %g s ago and the process still runs; exiting now", _TEARDOWN_S)
        _exit_now(code[0])
    log.error("still running %g s after the stop began; exiting now", grace + _EXIT_MARGIN_S)
    _exit_now(1)


def main(argv: Sequence[str]) -> int:
    cfg = parse(ServeSpec, argv, prog="j1 serve")
    setup_logging()
    try:
        import uvicorn

        from j1.serve.app import ServerSettings, create_app
    except ImportError as exc:
        return _fail(f"j1 serve needs the serve extra ({exc.name} is missing): pip install 'j1[serve]'")
    from j1.api import JUDGING_KEYS, load_judge

    # Only the CLI reads environment variables: this server's key and the upstream judge's.
    key = None
    if cfg.api_key_env:
        key = os.environ.get(cfg.api_key_env)
        if not key:
            return _fail(f"--api_key_env {cfg.api_key_env}: that variable is unset or empty; export the key "
                         "clients must send, or leave the flag out to ask for none")
    try:
        sock = _listen_socket(cfg.host, cfg.port)
    except OSError as exc:
        return _fail(f"cannot listen on {cfg.host}:{cfg.port}: {exc.strerror or exc}; stop what holds the port "
                     "or choose another --port (the judge was not loaded)")
    port = sock.getsockname()[1]
    try:
        # --judge with --base-url: the served judge keeps its manifest, asked under cfg.model (its served name).
        judge = load_judge(
            cfg.judge or cfg.model, base_url=cfg.base_url, served_name=cfg.model if cfg.judge and cfg.base_url else None,
            api_key=os.environ.get(cfg.upstream_api_key_env) if cfg.base_url else None,
            **{k: getattr(cfg, k) for k in JUDGING_KEYS}, top_p=cfg.top_p, seed=cfg.seed, **cfg.backend_kwargs(),
        )
    except (OSError, ValueError, RuntimeError) as exc:
        # A missing judge folder, an unreachable upstream (BackendError), a bad manifest: say which.
        sock.close()
        return _fail(str(exc))
    # A local judge's device sets the default batch (j1.device); an upstream judge's is its server's.
    device = getattr(getattr(judge, "backend", None), "device", "cpu")
    settings = ServerSettings(
        max_batch=serve_batch(cfg.max_batch, device), max_queue=cfg.max_queue, batch_wait_s=cfg.batch_wait_ms / 1000,
        max_body_bytes=cfg.max_body_bytes, api_key=key, request_timeout_s=cfg.request_timeout,
        shutdown_timeout_s=cfg.shutdown_timeout, truncate=cfg.truncate,
        error_reward=cfg.error_reward, group_opponents=cfg.group_opponents)
    try:
        app = create_app(judge, settings)
    except ValueError as exc:  # --max_new_tokens leaves no room in the model's context
        judge.close()
        sock.close()
        return _fail(str(exc))
    limit = app.state.limit
    log.info("serving %r (%s, %d sample(s)) on http://%s:%d%s; context %s tokens (%s), --truncate %s",
             judge.name, judge.format.name, judge.params.n, cfg.host, port, "" if key else " without an API key",
             limit.context if limit.context is not None else "unchecked", limit.source, limit.truncate)
    if not key and cfg.host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("listening on %s without --api_key_env: anyone who can reach it can use the judge", cfg.host)
    # uvicorn's own grace is a backstop: the watchdog answers what still waits when ours ends.
    server = uvicorn.Server(uvicorn.Config(app, log_level="info",
                                           timeout_graceful_shutdown=cfg.shutdown_timeout + _EXIT_MARGIN_S / 2))
    batcher = app.state.batcher
    returned, code = threading.Event(), [1]
    threading.Thread(target=_enforce_stop, args=(server, batcher, cfg.shutdown_timeout, returned, code),
                     name="j1-stop", daemon=True).start()
    # uvicorn shuts down on SIGTERM/SIGINT, then re-raises the signal to the handler it found: a
    # recording one lets the command close the judge and exit, not die by signal or print a
    # KeyboardInterrupt traceback.
    stopped_by: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: stopped_by.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if batcher.busy:
            # The model is mid-batch in a thread Python cannot stop; waiting would hold the process.
            log.warning("the judge is still running a batch; exiting without waiting for it")
            _exit_now(1)
        judge.close()
    if stopped_by:
        log.info("stopped by %s", signal.Signals(stopped_by[0]).name)
    code[0] = 0 if server.started and not batcher.abandoned else 1
    returned.set()
    return code[0]
