"""Re-export of ``j1 consistency`` and ``j1 compare`` under their former ``j1.cli.configs`` names; the specs live in their
domain packages (the CLI only parses flags and YAML into them)."""

from j1.eval.spec import CompareSpec, ConsistencySpec

CompareConfig = CompareSpec
ConsistencyConfig = ConsistencySpec

__all__ = ["CompareConfig", "ConsistencyConfig"]
