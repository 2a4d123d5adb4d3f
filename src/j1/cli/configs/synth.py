"""Re-export of ``j1 synth`` under their former ``j1.cli.configs`` names; the specs live in their
domain packages (the CLI only parses flags and YAML into them)."""

from j1.data.spec import MixSpec, SynthChatSpec, SynthMathSpec, SynthMismatchSpec

MixConfig = MixSpec
SynthChatConfig = SynthChatSpec
SynthMathConfig = SynthMathSpec
SynthMismatchConfig = SynthMismatchSpec

__all__ = ["MixConfig", "SynthChatConfig", "SynthMathConfig", "SynthMismatchConfig"]
