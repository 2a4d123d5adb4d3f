"""What every command needs: parsing its config, logging, and building the backend.

Only this package reads environment variables (the API key), per the style guide.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
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
    # transformers' notices of renamed APIs (peft and TRL still call the old names) say nothing to a user.
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"transformers\.")


def build_backend(cfg):
    """The backend a BackendArgs config names, with the API key read from ``cfg.api_key_env``."""
    from j1.backends import build_backend as backend_for

    return backend_for(cfg, api_key=os.environ.get(cfg.api_key_env) if cfg.base_url else None)
