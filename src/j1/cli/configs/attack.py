"""Re-export of ``j1 attack`` under their former ``j1.cli.configs`` names; the specs live in their
domain packages (the CLI only parses flags and YAML into them)."""

from j1.attack.spec import AttackSpec

AttackConfig = AttackSpec

__all__ = ["AttackConfig"]
