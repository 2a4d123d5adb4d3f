"""What every command needs: parsing its config, logging, building the backend, and turning bad
input into one line.

Only this package reads environment variables (the API key), per the style guide.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's "(default: X)" after each help, except where there is no default: a required flag
    or an unset one whose help says what unset means."""

    def _get_help_string(self, action):
        if action.default is None or action.default is argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


def one_line_errors(parser: argparse.ArgumentParser, prog: str) -> argparse.ArgumentParser:
    """Make ``parser.error`` print one line (not the whole usage, some 200 lines for TRL's keys) and exit 2."""
    parser.error = lambda message: exit_with(prog, f"{message} ({prog} --help lists the options)")  # type: ignore
    return parser


def exit_with(prog: str, message: str):
    """Print ``PROG: error: MESSAGE`` on one line and exit 2, as argparse does for a bad flag."""
    sys.stderr.write(f"{prog}: error: {' '.join(message.split())}\n")
    sys.exit(2)


def parse(config_cls, argv: Sequence[str], prog: str):
    """Parse ``argv`` (and ``--config FILE.yaml``) into one ``config_cls``; a bad value, an unknown
    flag or an unreadable config file exits 2 with one line."""
    from trl import TrlParser

    parser = one_line_errors(TrlParser([config_cls], prog=prog, formatter_class=HelpFormatter), prog)
    try:
        (config,) = parser.parse_args_and_config(list(argv))
    except (ValueError, OSError, *yaml_errors()) as exc:
        exit_with(prog, error_message(exc))
    return config


def yaml_errors() -> tuple[type[Exception], ...]:
    import yaml

    return (yaml.YAMLError,)


def user_errors() -> tuple[type[Exception], ...]:
    """What bad input raises: a missing or unreadable file (OSError), a malformed row or a bad value
    (ValueError; RowError names file:line and field), a malformed YAML, a server that cannot be reached
    (BackendError, after its retries). ``j1`` prints these as one line."""
    from j1.backends.base import BackendError

    return (OSError, ValueError, BackendError, *yaml_errors())


def error_message(exc: BaseException) -> str:
    """``exc`` as one line; an OSError from ``open`` names its file first."""
    if isinstance(exc, FileNotFoundError) and exc.filename and exc.strerror:
        text = f"{exc.filename}: no such file or folder"
    elif isinstance(exc, OSError) and exc.filename and exc.strerror:
        text = f"{exc.filename}: {exc.strerror.lower()}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def run_reporting_errors(prog: str, command: Callable[[], int], *, debug: bool = False) -> int:
    """Run ``command``; bad input (``user_errors``) becomes ``PROG: error: MESSAGE`` and exit 2, with no
    traceback (``debug`` re-raises, so the traceback shows)."""
    try:
        return command()
    except user_errors() as exc:
        if debug:
            raise
        sys.stderr.write(f"{prog}: error: {error_message(exc)}\n")
        return 2


@contextlib.contextmanager
def removed_on_error(*folders: str | os.PathLike | None) -> Iterator[None]:
    """On an exception, remove each of ``folders`` that did not exist before and still holds no file
    (only empty folders), so a failed start leaves nothing that looks like a run."""
    new = [_first_missing(Path(f)) for f in folders if f is not None and not Path(f).exists()]
    try:
        yield
    except BaseException:
        for folder in new:
            if folder.is_dir() and not any(p.is_file() or p.is_symlink() for p in folder.rglob("*")):
                shutil.rmtree(folder, ignore_errors=True)
        raise


def _first_missing(folder: Path) -> Path:
    """The outermost folder of ``folder``'s path that does not exist yet (what ``mkdir(parents=True)`` makes)."""
    while not folder.parent.exists() and folder.parent != folder:
        folder = folder.parent
    return folder


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
