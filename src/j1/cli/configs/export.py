"""Re-export of ``j1 export verl`` under their former ``j1.cli.configs`` names; the specs live in their
domain packages (the CLI only parses flags and YAML into them)."""

from j1.integrations.verl_spec import ExportVerlSpec

ExportVerlConfig = ExportVerlSpec

__all__ = ["ExportVerlConfig"]
