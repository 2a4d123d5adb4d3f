"""Judge formats: a registry name -> format, each with ``render`` and a total ``parse``."""

from j1.formats.base import JudgeFormat, Messages
from j1.formats.grammar import Parsed, Verdict
from j1.formats.pairwise import PairwiseScores, PairwiseScoresVerdict, PairwiseVerdict
from j1.formats.pointwise import PointwiseScore

FORMATS: dict[str, JudgeFormat] = {
    f.name: f for f in (PairwiseVerdict(), PairwiseScores(), PairwiseScoresVerdict(), PointwiseScore())
}


def get_format(name: str) -> JudgeFormat:
    """The format registered as ``name`` (pav, pas, pavs, pos)."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}; choose one of {sorted(FORMATS)}") from None


__all__ = ["FORMATS", "JudgeFormat", "Messages", "Parsed", "Verdict", "get_format"]
