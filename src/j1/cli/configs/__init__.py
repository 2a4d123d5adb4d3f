"""One config dataclass per command, re-exported under its ``*Config`` name: the specs live in their
domains (``j1.eval.spec.EvalSpec``, ``j1.train.spec.TrainSpec``, ``j1.data.spec``, ``j1.serve.spec``,
``j1.attack.spec``, ``j1.judging.spec``, ``j1.probe.spec``, ``j1.demo.spec``, ``j1.rewards.spec``,
``j1.integrations.verl_spec``; shared arguments in ``j1.backends.spec`` and ``j1.formats.spec``), and
the library's doors take them (``run_eval(spec)``); the CLI only parses flags and YAML into them.

Fields carry ``metadata={"help": ...}`` so ``--help`` shows them; ``__post_init__`` checks name the
field, its value and the fix. Parsed with TrlParser, so every command also takes ``--config
FILE.yaml`` (YAML keys are field names; CLI flags override)."""

from j1.cli.configs.common import (
    FORMAT_NAMES,
    PREFILL_HELP,
    TEMPLATE_HELP,
    BackendArgs,
    SamplingArgs,
    check_format,
    check_template,
    template_field,
)
from j1.cli.configs.demo import DemoConfig as DemoConfig
from j1.cli.configs.judging import EvalConfig, JudgeConfig, ProbeConfig, ScoreConfig
from j1.cli.configs.serve import ServeConfig as ServeConfig
from j1.cli.configs.synth import MixConfig, SynthChatConfig, SynthMathConfig, SynthMismatchConfig
from j1.cli.configs.training import CONSISTENCY_MODES, FORMULATIONS, RewardConfig, TrainConfig, WarmupConfig

__all__ = [
    "CONSISTENCY_MODES", "FORMAT_NAMES", "FORMULATIONS", "PREFILL_HELP", "TEMPLATE_HELP", "BackendArgs",
    "EvalConfig", "JudgeConfig", "MixConfig", "ProbeConfig", "RewardConfig", "SamplingArgs", "ScoreConfig",
    "SynthChatConfig", "SynthMathConfig", "SynthMismatchConfig", "TrainConfig", "WarmupConfig", "check_format",
    "check_template", "template_field",
]
