"""What every command needs: parsing its config, logging, building the backend, and turning bad
input into one line.

Only this package reads environment variables (the API key), per the style guide.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from j1.backends.base import Backend
    from j1.backends.spec import BackendArgs


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's "(default: X)" after each help, except where there is no default: a required flag
    or an unset one whose help says what unset means."""

    def _fill_text(self, text, width, indent):
        # A paragraph of indented lines (a list, such as j1 attack's attacks) keeps one item a line.
        paragraphs = text.split("\n\n")
        return "\n\n".join(indent + p.replace("\n", "\n" + indent) if p.startswith("  ")
                           else super(HelpFormatter, self)._fill_text(p, width, indent) for p in paragraphs)

    def _get_help_string(self, action):
        # A --no_FIELD flag's default is its field's, shown there.
        if action.default is None or action.default is argparse.SUPPRESS or isinstance(action, argparse._StoreFalseAction):
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


# The help of a --no_FIELD flag (argparse adds one per boolean field that defaults to true); the
# field's own help describes turning it on.
NEGATED_HELP = {"progress": "Hide the progress bar(s).",
                "texts": "Keep only the ids of the prompt and responses in results.jsonl (not their texts)."}
CONFIG_HELP = ("A YAML file of option: value (keys are the option names without --); flags given beside it "
               "override it.")
DEBUG_HELP = "On an error, show the traceback instead of the one-line message."


def make_parser(classes: Sequence[type], prog: str, **kwargs) -> argparse.ArgumentParser:
    """TRL's parser of ``classes`` with j1's edges: ``--config`` and ``--debug`` in the help, a
    ``--no_FIELD`` help that says what it does, one-line errors, and ``parse_args_and_config`` that
    names an unknown flag or YAML key in j1's words (with the closest real one)."""
    from trl import TrlParser

    class J1Parser(TrlParser):
        def parse_args_and_config(self, args=None, **_ignored):
            return _parse_checked(self, list(args if args is not None else sys.argv[1:]), prog)

    parser = J1Parser(list(classes), prog=prog, formatter_class=HelpFormatter, **kwargs)
    for action in parser._actions:
        # An optional boolean whose unset value (None) a spec resolves (``--use_reference``: the benchmark's rule)
        # takes a bare flag as true, as a plain boolean does; HfArgumentParser wants a value after it.
        if getattr(action.type, "__name__", "") == "string_to_bool" and action.nargs is None and action.default is None:
            action.nargs, action.const = "?", True
        negated = [o for o in action.option_strings if o.startswith("--no_")]
        if negated and isinstance(action, argparse._StoreFalseAction):
            action.help = NEGATED_HELP.get(action.dest, f"Same as --{action.dest} false.")
    # What a YAML may set: the fields' own names (before the help-only entries below are added).
    parser.j1_keys = {a.dest for a in parser._actions if a.option_strings and a.dest != "help"}
    group = parser.add_argument_group("every command")
    # SUPPRESS: shown in --help, never set on the parsed namespace (TRL pops --config, main.py --debug;
    # TRL's TrainingArguments has a `debug` field of its own, which --debug never reaches).
    taken = {o for a in parser._actions for o in a.option_strings}
    if "--config" not in taken:
        group.add_argument("--config", metavar="FILE.yaml", default=argparse.SUPPRESS, help=CONFIG_HELP)
    if "--debug" not in taken:
        group.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
    return one_line_errors(parser, prog)


def _parse_checked(parser, argv: list[str], prog: str):
    """``TrlParser.parse_args_and_config`` with the config file and the flags checked first: an
    unreadable or non-mapping YAML, an unknown key or an unknown flag raises ValueError in one line."""
    argv, path = _pop_config(argv)
    known = parser.j1_keys
    if path is not None:
        data = _read_yaml_mapping(path)
        env = data.pop("env", None)
        for key in data:
            if key not in known:
                raise ValueError(f"{path}: unknown key {key!r}{_did_you_mean(str(key), sorted(known))}")
        if env is not None:  # TRL's `env:` section, set only once the file checked out
            if not isinstance(env, dict):
                raise ValueError(f"{path}: 'env' must be a mapping of VARIABLE: value")
            for key, value in env.items():
                os.environ[str(key)] = str(value)
        parser.set_defaults_with_config(**data)  # every key is the parser's: none is left over
    _check_flags(parser, argv, prog)
    return parser.parse_args_into_dataclasses(args=argv)


def _pop_config(argv: list[str]) -> tuple[list[str], str | None]:
    """``argv`` without ``--config PATH`` (or ``--config=PATH``), and PATH."""
    for i, arg in enumerate(argv):
        if arg == "--config":
            if i + 1 == len(argv):
                raise ValueError("--config needs a FILE.yaml")
            return argv[:i] + argv[i + 2:], argv[i + 1]
        if arg.startswith("--config="):
            return argv[:i] + argv[i + 1:], arg.split("=", 1)[1]
    return argv, None


def _read_yaml_mapping(path: str) -> dict:
    import yaml

    with open(path, encoding="utf-8") as fh:  # OSError names the file
        data = yaml.safe_load(fh)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: must hold a YAML mapping of option: value, got {type(data).__name__}")
    return data


def _check_flags(parser: argparse.ArgumentParser, argv: list[str], prog: str) -> None:
    """Exit 2 with one line naming the first flag the parser does not know (argparse's own matching,
    abbreviations included), or a stray value."""
    _, rest = argparse.ArgumentParser.parse_known_args(parser, argv)
    if not rest:
        return
    flag = next((a.split("=", 1)[0] for a in rest if a.startswith("-")), None)
    if flag is None:
        exit_with(prog, f"unexpected value {rest[0]!r} ({prog} --help lists the options)")
    options = sorted(o for a in parser._actions for o in a.option_strings if o.startswith("--"))
    hint = _did_you_mean(flag, options)
    exit_with(prog, f"unknown option {flag}" + (hint or f" ({prog} --help lists the options)"))


def _did_you_mean(name: str, choices: Sequence[str]) -> str:
    """`` (did you mean X?)`` for the closest of ``choices`` (difflib), or ''.

    >>> _did_you_mean("--smaples", ["--samples", "--seed"])
    ' (did you mean --samples?)'
    """
    import difflib

    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def parse(config_cls, argv: Sequence[str], prog: str, **kwargs):
    """Parse ``argv`` (and ``--config FILE.yaml``) into one ``config_cls``; a bad value, an unknown
    flag or key, or an unreadable config file exits 2 with one line. ``kwargs`` go to the parser (``epilog``)."""
    parser = make_parser([config_cls], prog, **kwargs)
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
    (BackendError, after its retries), a package to install (MissingPackage: the line names the command).
    ``j1`` prints these as one line."""
    from j1.backends.base import BackendError
    from j1.models import MissingPackage

    return (OSError, ValueError, BackendError, MissingPackage, *yaml_errors())


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


def run_command(prog: str, out: str | None, body: Callable[[], Any], summary: Callable[[Any], dict]) -> int:
    """The body every command that judges into a run folder shares (eval, consistency, label, attack): run
    ``body`` (a failed start leaves no empty folder at ``out``), then print ``summary(result)`` as JSON.

    Returns:
        0; 1 when more judgments failed than the run allows (``TooManyErrors``: the line says how many);
        2 for bad data, a missing file, a run folder in use or an unreachable server, in one line that says
        what and where (RowError is a ValueError; a traceback would only bury it).
    """
    from j1.eval.runner import TooManyErrors

    try:
        with removed_on_error(out):
            result = body()
    except TooManyErrors as exc:
        sys.stderr.write(f"{prog}: {exc}\n")
        return 1
    except (OSError, ValueError, RuntimeError) as exc:
        sys.stderr.write(f"{prog}: error: {error_message(exc)}\n")
        return 2
    json.dump(summary(result), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


# Files a run writes before its first result: a folder that holds only these (or empty files) did no work.
START_FILES = ("run.json",)


@contextlib.contextmanager
def removed_on_error(*folders: str | os.PathLike | None) -> Iterator[None]:
    """On an exception, remove each of ``folders`` that did not exist before and holds no result yet:
    nothing but empty files and ``START_FILES`` (``run.json``), so a failed start leaves nothing that
    looks like a run. A folder with a result in it (judgments, a checkpoint) stays, to be resumed."""
    new = [_first_missing(Path(f)) for f in folders if f is not None and not Path(f).exists()]
    try:
        yield
    except BaseException:
        for folder in new:
            if folder.is_dir() and not any(_is_result(p) for p in folder.rglob("*")):
                shutil.rmtree(folder, ignore_errors=True)
        raise


def _is_result(path: Path) -> bool:
    if path.is_symlink():
        return True
    if not path.is_file():
        return False
    return path.stat().st_size > 0 and not path.name.endswith(START_FILES)


def _first_missing(folder: Path) -> Path:
    """The outermost folder of ``folder``'s path that does not exist yet (what ``mkdir(parents=True)`` makes)."""
    while not folder.parent.exists() and folder.parent != folder:
        folder = folder.parent
    return folder


def setup_threads(env: MutableMapping[str, str]) -> str | None:
    """Choose torch's CPU threads before torch loads: the OpenMP variables in ``env`` (``os.environ``).

    Unless ``OMP_NUM_THREADS`` is set already (the user's choice, kept): one thread per physical core that
    other processes leave free (``j1.device.cpu_threads``), and ``OMP_WAIT_POLICY=PASSIVE``, so a thread
    waiting for the others sleeps instead of spinning on a core that another process needs. On an idle
    machine that is torch's own default; beside busy processes it keeps a judgment at about its fair share
    of the cores instead of 3-20x slower (results/bench/README.md, "Threads on a shared machine").
    Nothing is set once torch is loaded (a caller in Python chose already).

    Returns:
        The warning to show when other processes keep the machine busy (naming the variable that helps),
        else None.
    """
    if "torch" in sys.modules:
        return None
    from j1.device import BUSY_CORES, busy_cores, cpu_threads, physical_cores

    busy, physical = busy_cores(), physical_cores()
    chosen = cpu_threads(physical, busy)
    given = env.get("OMP_NUM_THREADS")
    if given is None:
        env["OMP_NUM_THREADS"] = str(chosen)
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if busy is None or busy < BUSY_CORES:
        return None
    if given is None:
        return (f"other processes keep {busy:.1f} of this machine's {physical} cores busy: torch runs {chosen} "
                f"thread(s) (OMP_NUM_THREADS={chosen}), and this will be slower than on an idle machine")
    if given.isdigit() and int(given) > chosen:
        return (f"other processes keep {busy:.1f} of this machine's {physical} cores busy, and OMP_NUM_THREADS={given} "
                f"makes torch's threads wait on each other for them: OMP_NUM_THREADS={chosen} is faster here")
    return None


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


def build_backend(cfg: BackendArgs) -> Backend:
    """The backend a config names (a judging config's keeps a served judge's manifest, ``JudgeArgs.open_backend``),
    with the API key read from ``cfg.api_key_env``."""
    return cfg.open_backend(os.environ.get(cfg.api_key_env) if cfg.base_url else None)


def check_hub_inputs(*configs) -> None:
    """Before anything loads or a folder is made: every Hugging Face id the ``configs`` name can be had
    (``j1.hub.check_hub_inputs``), with transformers' offline switch read here, where environment variables
    are read.

    Raises:
        ValueError: in one line, naming the flag, the id and the fix.
    """
    from j1.hub import check_hub_inputs as check

    offline = os.environ.get("TRANSFORMERS_OFFLINE", "").upper() in {"1", "ON", "YES", "TRUE"}
    check(*configs, transformers_offline=offline)
