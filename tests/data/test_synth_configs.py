"""Every YAML under configs/synth/ parses into its command's config (unknown keys would fail)."""

from __future__ import annotations

from pathlib import Path

import pytest

from j1.cli.common import parse
from j1.cli.configs import MixConfig, SynthChatConfig, SynthMathConfig

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs" / "synth").rglob("*.yaml"))
CLASSES = {"math": SynthMathConfig, "chat": SynthChatConfig, "mix": MixConfig}


def test_count():
    assert len(CONFIGS) == 5


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_parses(path):
    cls = CLASSES[path.stem.split("_")[0]]
    cfg = parse(cls, ["--config", str(path)], prog="test")
    assert isinstance(cfg, cls)


def test_flags_override_yaml():
    cfg = parse(SynthMathConfig, ["--config", str(CONFIGS[2]), "--samples", "6"], prog="test")
    assert CONFIGS[2].name == "math_gsm8k.yaml" and cfg.samples == 6 and cfg.max_new_tokens == 200
