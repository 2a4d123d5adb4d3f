"""``j1 consistency``: how consistent a judge is over K responses per prompt, without labels."""

from __future__ import annotations

import os
from collections.abc import Sequence

from j1.cli import common
from j1.cli.common import parse, setup_logging
from j1.eval.spec import ConsistencySpec


def main(argv: Sequence[str]) -> int:
    cfg = parse(ConsistencySpec, argv, prog="j1 consistency")
    common.check_hub_inputs(cfg)  # an uncached hub id, offline: one line now, not after a minute of retries
    setup_logging()
    from j1.eval.consistency_run import run_consistency

    return common.run_command(
        "j1 consistency", cfg.out,
        lambda: run_consistency(cfg, open_backend=lambda: common.build_backend(cfg), open_sampler=lambda: _sampler(cfg)),
        lambda metrics: {k: metrics[k] for k in ("benchmark", "format", "model", "n", "responses")}
        | {"overall": metrics["overall"]})


def _sampler(cfg: ConsistencySpec):
    """The --sampler-model backend: on the same server as the judge (with its API key), else local."""
    from j1.backends import make_backend

    key = os.environ.get(cfg.api_key_env) if cfg.base_url else None
    return make_backend(cfg.sampler_model, cfg.base_url, api_key=key, **cfg.backend_kwargs())
