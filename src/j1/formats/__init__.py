"""Judge formats: a registry name -> format, each with ``render`` and a total ``parse``."""

from j1.formats.base import JudgeFormat, Messages
from j1.formats.fourway import FourWay
from j1.formats.pairwise import PairwiseScores, PairwiseScoresVerdict, PairwiseVerdict
from j1.formats.pointwise import PointwiseScore
from j1.formats.templates import TEMPLATES
from j1.pairs import Parsed, Verdict

FORMATS: dict[str, JudgeFormat] = {
    f.name: f for f in (PairwiseVerdict(), PairwiseScores(), PairwiseScoresVerdict(), PointwiseScore(), FourWay())
}


def get_format(name: str, template: str = "full") -> JudgeFormat:
    """The format registered as ``name`` (pav, pas, pavs, pos), worded with ``template``
    (full or compact, see j1.formats.templates; the output grammar is the same)."""
    try:
        fmt = FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}; choose one of {sorted(FORMATS)}") from None
    return fmt if template == "full" else type(fmt)(template)


__all__ = ["FORMATS", "TEMPLATES", "JudgeFormat", "Messages", "Parsed", "Verdict", "get_format"]
