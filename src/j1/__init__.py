"""j1: thinking LLM-as-a-judge trained with RL, the J1 way."""

__version__ = "0.1.0"

from j1.api import Judge, load_judge  # noqa: E402 - after __version__, which submodules may read

__all__ = ["Judge", "__version__", "load_judge"]
