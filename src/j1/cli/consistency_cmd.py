"""``j1 consistency``: how consistent a judge is over K responses per prompt, without labels."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

from j1.cli import common
from j1.cli.common import parse, setup_logging
from j1.eval.spec import ConsistencySpec


def main(argv: Sequence[str]) -> int:
    cfg = parse(ConsistencySpec, argv, prog="j1 consistency")
    common.check_hub_inputs(cfg)  # an uncached hub id, offline: one line now, not after a minute of retries
    setup_logging()
    from j1.eval.consistency_run import run_consistency
    from j1.eval.runner import TooManyErrors
    from j1.schema import RowError

    try:
        with common.removed_on_error(cfg.out):  # a failed start leaves no empty run folder
            metrics = run_consistency(cfg, open_backend=lambda: common.build_backend(cfg),
                                      open_sampler=lambda: _sampler(cfg))
    except TooManyErrors as exc:
        sys.stderr.write(f"j1 consistency: {exc}\n")
        return 1
    except (RowError, OSError, ValueError, RuntimeError) as exc:
        # Bad data, a missing file, a run folder in use, an unreachable server: the message says what and where.
        sys.stderr.write(f"j1 consistency: error: {common.error_message(exc)}\n")
        return 2
    json.dump({k: metrics[k] for k in ("benchmark", "format", "model", "n", "responses")}
              | {"overall": metrics["overall"]}, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _sampler(cfg: ConsistencySpec):
    """The --sampler-model backend: on the same server as the judge (with its API key), else local."""
    from j1.backends import make_backend

    key = os.environ.get(cfg.api_key_env) if cfg.base_url else None
    return make_backend(cfg.sampler_model, cfg.base_url, api_key=key, **cfg.backend_kwargs())
