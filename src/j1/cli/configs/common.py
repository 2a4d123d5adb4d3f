"""Re-export of backend and sampling arguments, the judge format and template checks under their former ``j1.cli.configs`` names; the specs live in their
domain packages (the CLI only parses flags and YAML into them)."""

from j1.backends.spec import BackendArgs, SamplingArgs
from j1.formats.spec import (
    FORMAT_NAMES,
    PREFILL_HELP,
    TEMPLATE_CHOICES,
    TEMPLATE_HELP,
    check_format,
    check_template,
    template_field,
)

__all__ = ["BackendArgs", "FORMAT_NAMES", "PREFILL_HELP", "SamplingArgs", "TEMPLATE_CHOICES", "TEMPLATE_HELP", "check_format", "check_template", "template_field"]
