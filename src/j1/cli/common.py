"""What every command needs: parsing its config, logging, and building the backend.

Only this package reads environment variables (the API key), per the style guide.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence


def parse(config_cls, argv: Sequence[str], prog: str):
    """Parse ``argv`` (and ``--config FILE.yaml``) into one ``config_cls``; exits 2 with the
    message on a bad value, as argparse does."""
    from trl import TrlParser

    parser = TrlParser([config_cls], prog=prog)
    try:
        (config,) = parser.parse_args_and_config(list(argv))
    except ValueError as exc:
        parser.error(str(exc))
    return config


def setup_logging(verbose: bool = False) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("httpx", "httpx2", "urllib3", "openai", "transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def build_backend(cfg):
    """The backend a BackendArgs config names."""
    from j1.backends import make_backend

    api_key = os.environ.get(cfg.api_key_env) if cfg.base_url else None
    return make_backend(cfg.model, cfg.base_url, api_key=api_key, **cfg.backend_kwargs())
