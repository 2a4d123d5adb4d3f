"""``--help`` of every command (and synth sub-command) prints and exits 0: argparse formats each help
string with %-interpolation, so a stray "%" in a config field's help crashes it."""

from __future__ import annotations

import pytest

from j1.cli.main import COMMANDS, main

INVOCATIONS = [[name] for name in COMMANDS if name not in ("synth", "export")] + [["synth", sub] for sub in ("math", "chat", "mismatch", "mix")] + [["export", "verl"]]


@pytest.mark.parametrize("argv", INVOCATIONS, ids=" ".join)
def test_help_prints(argv, capsys):
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "usage:" in out and "--" in out


@pytest.mark.parametrize("command", ["train", "warmup"])
def test_short_help_shows_the_j1_options_first(command, capsys):
    # `--help` is one screenful or two: the J1 section, then the TRL keys a recipe sets; `--help-all`
    # is TRL's full list.
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    short = capsys.readouterr().out
    assert len(short.splitlines()) <= 150
    assert short.index("J1 options:") < short.index("--formulation") < short.index("TRL options (common):")
    assert "--learning_rate" in short and "--adam_beta1" not in short and "--help-all" in short
    with pytest.raises(SystemExit) as done:
        main([command, "--help-all"])
    assert done.value.code == 0
    full = capsys.readouterr().out
    assert "--adam_beta1" in full and len(full.splitlines()) > 500
