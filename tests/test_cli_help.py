"""``--help`` of every command (and synth sub-command) prints and exits 0: argparse formats each help
string with %-interpolation, so a stray "%" in a config field's help crashes it."""

from __future__ import annotations

import pytest

from j1.cli.main import COMMANDS, main

INVOCATIONS = [[name] for name in COMMANDS if name != "synth"] + [["synth", sub] for sub in ("math", "chat", "mix")]


@pytest.mark.parametrize("argv", INVOCATIONS, ids=" ".join)
def test_help_prints(argv, capsys):
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "usage:" in out and "--" in out
