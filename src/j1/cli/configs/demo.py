"""Re-export of ``j1 demo`` under their former ``j1.cli.configs`` names; the specs live in their
domain packages (the CLI only parses flags and YAML into them)."""

from j1.demo.spec import BF16_CHOICES, DEMO_TRAIN_FLAGS, DemoSpec

DemoConfig = DemoSpec

__all__ = ["BF16_CHOICES", "DEMO_TRAIN_FLAGS", "DemoConfig"]
