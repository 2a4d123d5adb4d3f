"""``j1 serve``: a judge behind HTTP (OpenRLHF's /get_reward, /v1/judge), requests batched together.

The port is bound before the model loads, so a port in use fails at once, in one line. SIGTERM or
Ctrl-C stops the server: the requests in flight have ``--shutdown_timeout`` seconds to be answered, the
rest are answered 503, and the process exits (``j1.serve.process``). It exits 0 when nothing was cut
short, 1 when it was.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

from j1.cli.common import parse, setup_logging
from j1.device import serve_batch
from j1.serve.spec import ServeSpec

log = logging.getLogger(__name__)


def _fail(message: str) -> int:
    sys.stderr.write("j1 serve: error: " + " ".join(message.split()) + "\n")
    return 2


def main(argv: Sequence[str]) -> int:
    cfg = parse(ServeSpec, argv, prog="j1 serve")
    setup_logging()
    try:
        import uvicorn  # noqa: F401 - the serve extra, checked before the judge loads

        from j1.serve.app import ServerSettings, create_app
        from j1.serve.process import listen_socket, serve
    except ImportError as exc:
        return _fail(f"j1 serve needs the serve extra ({exc.name} is missing): pip install 'j1[serve]'")
    from j1.api import load_judge

    # Only the CLI reads environment variables: this server's key and the upstream judge's.
    key = None
    if cfg.api_key_env:
        key = os.environ.get(cfg.api_key_env)
        if not key:
            return _fail(f"--api_key_env {cfg.api_key_env}: that variable is unset or empty; export the key "
                         "clients must send, or leave the flag out to ask for none")
    try:
        sock = listen_socket(cfg.host, cfg.port)
    except OSError as exc:
        return _fail(f"cannot listen on {cfg.host}:{cfg.port}: {exc.strerror or exc}; stop what holds the port "
                     "or choose another --port (the judge was not loaded)")
    port = sock.getsockname()[1]
    try:
        # --judge with --base-url: the served judge keeps its manifest, asked under cfg.model (its served name).
        judge = load_judge(cfg.judge_settings(os.environ.get(cfg.upstream_api_key_env) if cfg.base_url else None))
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
        error_reward=cfg.error_reward, group_opponents=cfg.group_opponents, docs=cfg.docs)
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
    return serve(app, sock, judge, cfg.shutdown_timeout)
