"""``j1 score DIR``: lives with ``j1 eval`` in eval_cmd.py; this module is its COMMANDS entry."""

from j1.cli.eval_cmd import score_main as main

__all__ = ["main"]
