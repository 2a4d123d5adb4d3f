"""j1: thinking LLM-as-a-judge trained with RL, the J1 way."""

__version__ = "0.1.0"
