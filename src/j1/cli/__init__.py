"""Command-line interface: ``j1 judge|eval|score|synth|train|warmup|reward``.

The top floor: it may import every package, and nothing imports it. It only parses flags, reads the
environment (API keys) and prints; each command's work lives in its domain package.
"""
