"""Command-line interface: ``j1 judge|eval|score|synth|train|warmup|reward``."""
