"""Re-export of the judging commands' specs under their former ``j1.cli.configs`` names; the specs live in their
domain packages (the CLI only parses flags and YAML into them)."""

from j1.eval.spec import EvalSpec, ScoreSpec
from j1.judging.spec import JudgeArgs, JudgeSpec
from j1.probe.spec import ProbeSpec

EvalConfig = EvalSpec
JudgeConfig = JudgeSpec
ProbeConfig = ProbeSpec
ScoreConfig = ScoreSpec

__all__ = ["EvalConfig", "JudgeArgs", "JudgeConfig", "ProbeConfig", "ScoreConfig"]
