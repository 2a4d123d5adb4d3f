"""The README, docs/ and results/ cannot drift from the tool: every `j1 ...` command they show names a
command that exists, flags that command has and config files that exist; every Python snippet runs; and
the blocks marked `<!-- doc-test: run -->` run as shown (on the shipped judge, offline).

A block is a fenced ```bash or ```python block. Lines of a bash block join at a trailing backslash;
comments go; a line may chain commands (``&&``, ``;``, ``|``, ``&``) and set variables before one
(``OMP_NUM_THREADS=1 j1 ...``); ``.venv/bin/j1`` is ``j1``. A Python block marked `<!-- doc-test: skip -->`
(it needs a GPU or a network) is not run.

results/: each topic's README.md is a reading room whose commands must still reproduce its tables, so
its bash blocks and its inline `j1 ... --flag` commands are checked the same way, every script they
call (``python results/x.py``, ``bash results/x.sh``) exists, its links lead to files that are there, the
`j1` commands inside the shell scripts of results/ are checked too (their ``${VAR:-default}``,
``${VAR:+--flag}`` and array expansions written out), and its literal `j1 train` and `j1 warmup` commands
are parsed, values and YAML included.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RESULTS = sorted((REPO / "results").glob("**/README.md"))
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *RESULTS]
SCRIPTS = sorted((REPO / "results").glob("**/*.sh"))
FENCE = re.compile(r"(?:<!-- doc-test: (?P<mark>\w+) -->\s*\n)?```(?P<lang>\w+)\n(?P<body>.*?)\n```", re.DOTALL)
# An inline `j1 ... --flag ...` command in a results/ README (a bare `j1 synth chat` names a command only).
INLINE = re.compile(r"(?<!`)`(j1 [a-z][^`]*--[^`]*)`(?!`)")
# Commands with subcommands: the parser that holds the flags is `j1 synth math`, `j1 export verl`, ...
NESTED = {"synth", "export"}
ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
SEPARATORS = {";", "&&", "||", "|", "&", "(", ")"}


def blocks(lang: str):
    """(doc, index, mark, body) of every ``lang`` block."""
    for doc in DOCS:
        for k, m in enumerate(FENCE.finditer(doc.read_text(encoding="utf-8"))):
            if m["lang"] == lang:
                yield doc.relative_to(REPO), k, m["mark"], m["body"]


def simple_commands(body: str) -> list[list[str]]:
    """Each simple command of a bash text as an argv list: continuations joined, comments and leading
    variable assignments dropped, chains (``&&``, ``;``, ``|``, ``&``) split, ``.venv/bin/j1``,
    ``$J1`` and ``python -m j1.cli.main`` written ``j1``. Lines that are not commands (``for``, ``done``,
    an assignment alone) give nothing."""
    out = []
    for line in re.sub(r"\\\n\s*", " ", body).splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:  # an unclosed quote: a heredoc or a multi-line string, not a command line
            continue
        argv: list[str] = []
        redirect = False
        for token in [*tokens, ";"]:
            if redirect:  # the file of a redirection (`> out.log`, `2>&1`) is no argument
                redirect = False
                continue
            if token.strip("<>&") == "" and any(c in token for c in "<>"):
                redirect = True
                continue
            if token not in SEPARATORS:
                argv.append(token)
                continue
            while argv and ASSIGNMENT.match(argv[0]):
                argv.pop(0)
            if argv and argv[0] in {"do", "then", "else", "export"}:
                argv = argv[1:] if argv[0] != "export" else []
            if argv and argv[0] in {".venv/bin/j1", "$J1"}:
                argv[0] = "j1"
            if argv[:3] in (["python", "-m", "j1.cli.main"], [".venv/bin/python", "-m", "j1.cli.main"]):
                argv = ["j1", *argv[3:]]
            if argv:
                out.append(argv)
            argv = []
    return out


def commands(body: str) -> list[list[str]]:
    """The `j1` command lines of a bash block as argv lists (``simple_commands`` that run ``j1``)."""
    return [argv for argv in simple_commands(body) if argv[0] == "j1" and len(argv) > 1]


def script_paths(body: str) -> list[str]:
    """The repository scripts and test files a bash text names in its commands (``python FILE.py``,
    ``bash FILE.sh``, ``py-spy record -- bash FILE.sh``, ``pytest tests/x.py``): each word ending in
    ``.py`` or ``.sh`` that is a relative path."""
    return [w for argv in simple_commands(body) for w in argv
            if w.endswith((".py", ".sh")) and not w.startswith(("/", "~", "$", "-"))]


def expand(script: str) -> str:
    """A shell script with what its `j1` lines hide written out: ``"${NAME[@]}"`` as the array
    ``NAME=(...)`` it defines, ``${VAR:+WORDS}`` as WORDS and ``${VAR:-DEFAULT}`` as DEFAULT."""
    arrays = {m[1]: m[2] for m in re.finditer(r"^\s*(\w+)=\(([^()]*)\)", script, re.MULTILINE)}
    script = re.sub(r'"?\$\{(\w+)\[@\]\}"?', lambda m: arrays.get(m[1], m[0]).replace("\n", " "), script)
    script = re.sub(r"\$\{\w+:\+([^{}]*)\}", r"\1", script)
    return re.sub(r"\$\{\w+:-([^{}$]*)\}", r"\1", script)


def shown_commands():
    """(where, argv) of every `j1` command the docs show, and those of results/'s READMEs and scripts."""
    for doc, k, _, body in blocks("bash"):
        for argv in commands(body):
            yield f"{doc}#{k}", argv
    for doc in RESULTS:
        for k, m in enumerate(INLINE.finditer(doc.read_text(encoding="utf-8"))):
            yield f"{doc.relative_to(REPO)}#inline{k}", shlex.split(m[1])
    for script in SCRIPTS:
        for argv in commands(expand(script.read_text(encoding="utf-8"))):
            yield str(script.relative_to(REPO)), argv


@functools.cache
def flags_of(command: tuple[str, ...]) -> frozenset[str]:
    """The flags ``j1 COMMAND --help`` lists (``--help-all`` where a command hides some), dashes as underscores."""
    from j1.cli.main import main

    text = io.StringIO()
    for ask in ("--help", "--help-all"):  # in this process: the commands' imports are paid once, not per command
        with contextlib.redirect_stdout(text), contextlib.redirect_stderr(io.StringIO()):
            try:
                main([*command, ask])
            except SystemExit:
                pass
    return frozenset(f.replace("-", "_") for f in re.findall(r"--[A-Za-z][\w-]*", text.getvalue()))


SHOWN = list(shown_commands())


def test_the_docs_show_commands():
    assert len(SHOWN) >= 10, "the docs' command blocks were not found"
    assert sum(w.startswith("results/") for w, _ in SHOWN) >= 40, "results/'s commands were not found"


@pytest.mark.parametrize("where,argv", SHOWN, ids=[w for w, _ in SHOWN])
def test_a_shown_command_has_its_flags_and_files(where, argv):
    command = tuple(argv[1:3]) if argv[1] in NESTED else (argv[1],)
    known = flags_of(command)
    assert "__help" in known, f"{where}: `j1 {' '.join(command)}` is not a command"
    for i, arg in enumerate(argv):
        if not arg.startswith("--"):
            continue
        flag = arg.split("=", 1)[0].replace("-", "_")
        assert flag in known, f"{where}: `j1 {' '.join(command)}` has no flag {arg}"
        if flag == "__config" and "$" not in argv[i + 1]:
            assert (REPO / argv[i + 1]).is_file(), f"{where}: no config file {argv[i + 1]}"


# The commands whose flag values changed most (retired choices such as `--loss_span to_answer`, YAML keys such
# as `thoughts`): each literal one (no `$VAR`, no `...`) of a results/ block or script is parsed by the
# command's own parser, YAML included (an inline `j1 train --dry_run` names a feature, not a run).
PARSERS = {"train": ("j1.cli.train_cmd", "parse_train"), "warmup": ("j1.cli.warmup_cmd", "parse_warmup")}
PARSED = [(w, argv) for w, argv in SHOWN if w.startswith("results/") and "#inline" not in w and argv[1] in PARSERS
          and not any("$" in a or a == "..." for a in argv)]


def test_results_show_training_commands():
    assert len(PARSED) >= 8, "results/'s j1 train and j1 warmup commands were not found"


@pytest.mark.parametrize("where,argv", PARSED, ids=[w for w, _ in PARSED])
def test_a_results_training_command_parses(where, argv, monkeypatch, capsys):
    """Parsed as `j1 train --dry_run` parses it on a CPU (bf16 off), without training."""
    import importlib

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    module, name = PARSERS[argv[1]]
    cpu = ["--bf16", "false", "--use_cpu", "true"]
    try:
        getattr(importlib.import_module(module), name)([*argv[2:], *cpu])
    except SystemExit:
        pytest.fail(f"{where}: `{' '.join(argv)}` does not parse: {capsys.readouterr().err.strip()}")
    except ValueError as exc:
        pytest.fail(f"{where}: `{' '.join(argv)}` does not parse: {exc}")


CALLED = sorted({(str(doc), path) for doc, _, _, body in blocks("bash") for path in script_paths(body)}
                | {(str(s.relative_to(REPO)), path) for s in SCRIPTS for path in script_paths(s.read_text())})


def test_results_call_scripts():
    assert sum(doc.startswith("results/") for doc, _ in CALLED) >= 10, "results/'s script calls were not found"


@pytest.mark.parametrize("where,path", CALLED, ids=[f"{w}:{p}" for w, p in CALLED])
def test_a_called_script_exists(where, path):
    assert (REPO / path).is_file(), f"{where}: runs {path}, which does not exist"


LINKS = [(str(doc.relative_to(REPO)), m[1]) for doc in RESULTS
         for m in re.finditer(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")) if "://" not in m[1]]


@pytest.mark.parametrize("where,target", LINKS, ids=[f"{w}:{t}" for w, t in LINKS])
def test_a_results_readme_links_to_what_is_there(where, target):
    """A results/ README links only to files it keeps (issue 44 moved the rest to git history)."""
    assert (REPO / where).parent.joinpath(target).exists(), f"{where}: links to {target}, which is not there"


RUN = [(f"{doc}#{k}", body) for doc, k, mark, body in blocks("bash") if mark == "run"]


@pytest.mark.parametrize("where,body", RUN, ids=[w for w, _ in RUN])
def test_a_run_block_runs_as_shown(where, body, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, f"{where}:\n{proc.stderr[-3000:]}"


PYTHON = [(f"{doc}#{k}", body) for doc, k, mark, body in blocks("python") if mark != "skip"]


@pytest.mark.parametrize("where,body", PYTHON, ids=[w for w, _ in PYTHON])
def test_a_python_snippet_runs(where, body, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", body], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, f"{where}:\n{proc.stderr[-3000:]}"
