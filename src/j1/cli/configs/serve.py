"""Re-export of ``j1 serve`` under their former ``j1.cli.configs`` names; the specs live in their
domain packages (the CLI only parses flags and YAML into them)."""

from j1.serve.spec import ServeSpec

ServeConfig = ServeSpec

__all__ = ["ServeConfig"]
