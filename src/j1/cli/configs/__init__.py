"""One config dataclass per command, by topic: ``common`` (backend and sampling arguments),
``judging`` (judge, eval, score, probe), ``synth`` and ``training`` (reward, train, warmup).

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
