"""The ``j1 serve`` process: its listening socket, its signals and the watchdog that makes a stop finish.

SIGTERM or Ctrl-C stops the server: the listener closes (new connections are refused), the requests in flight
have ``shutdown_timeout`` seconds to be answered, the rest are answered 503, and the process exits, even while
the model is mid-batch (a forward cannot be interrupted from Python, so the process leaves it with ``os._exit``).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time

log = logging.getLogger(__name__)

# After the grace period: time for the 503 answers to go out and the server to stop, before the
# process is ended from the watchdog thread whatever it is doing.
_EXIT_MARGIN_S = 2.0
# Once the command has returned: time for Python's own teardown (1-2 s with a model loaded), after
# which something holding the interpreter (a thread that does not end) is not waited for.
_TEARDOWN_S = 30.0


def listen_socket(host: str, port: int) -> socket.socket:
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


def serve(app, sock: socket.socket, judge, shutdown_timeout: float) -> int:
    """Serve ``app`` on ``sock`` until SIGTERM/SIGINT, then stop within ``shutdown_timeout`` (the module's rule) and
    close ``judge``. Returns 0 when nothing was cut short, 1 when it was."""
    import uvicorn

    # uvicorn's own grace is a backstop: the watchdog answers what still waits when ours ends.
    server = uvicorn.Server(uvicorn.Config(app, log_level="info",
                                           timeout_graceful_shutdown=shutdown_timeout + _EXIT_MARGIN_S / 2))
    batcher = app.state.batcher
    returned, code = threading.Event(), [1]
    threading.Thread(target=_enforce_stop, args=(server, batcher, shutdown_timeout, returned, code),
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
