"""``j1 serve``: a judge behind HTTP (OpenRLHF's /get_reward, /v1/judge), requests batched together.

SIGTERM or Ctrl-C shuts down gracefully (uvicorn's): the listener closes, so new requests are refused,
and the requests in flight are answered before the process exits.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Sequence

from j1.cli.common import parse, setup_logging
from j1.cli.configs import ServeConfig

log = logging.getLogger(__name__)


def _fail(message: str) -> int:
    sys.stderr.write("j1 serve: error: " + " ".join(message.split()) + "\n")
    return 2


def main(argv: Sequence[str]) -> int:
    cfg = parse(ServeConfig, argv, prog="j1 serve")
    setup_logging()
    try:
        import uvicorn

        from j1.serve.app import ServerSettings, create_app
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
        judge = load_judge(
            cfg.model, base_url=cfg.base_url,
            api_key=os.environ.get(cfg.upstream_api_key_env) if cfg.base_url else None,
            format=cfg.format, template=cfg.template, assistant_prefill=cfg.assistant_prefill,
            max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, samples=cfg.samples,
            top_p=cfg.top_p, seed=cfg.seed, **cfg.backend_kwargs(),
        )
    except (OSError, ValueError, RuntimeError) as exc:
        # A missing judge folder, an unreachable upstream (BackendError), a bad manifest: say which.
        return _fail(str(exc))
    settings = ServerSettings(max_batch=cfg.max_batch, max_queue=cfg.max_queue,
                              batch_wait_s=cfg.batch_wait_ms / 1000, max_body_bytes=cfg.max_body_bytes, api_key=key)
    log.info("serving %r (%s, %d sample(s)) on http://%s:%d%s", judge.name, judge.format.name, judge.params.n,
             cfg.host, cfg.port, "" if key else " without an API key")
    if not key and cfg.host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("listening on %s without --api_key_env: anyone who can reach it can use the judge", cfg.host)
    server = uvicorn.Server(uvicorn.Config(create_app(judge, settings), host=cfg.host, port=cfg.port,
                                           log_level="info"))
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then re-raises the signal to the handler it found:
    # a recording one lets the command close the judge and exit 0, not die by signal or print a
    # KeyboardInterrupt traceback.
    stopped_by: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: stopped_by.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        judge.close()
    if stopped_by:
        log.info("stopped by %s after answering the requests in flight", signal.Signals(stopped_by[0]).name)
    return 0 if server.started else 1
