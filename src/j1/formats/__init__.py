"""Judge formats: a registry name -> format, each with ``render`` and a total ``parse``.

A floor of the library: it imports only the pair vocabulary (``j1.pairs``), so every layer may import it.
"""

from collections.abc import Collection

from j1.formats.base import JudgeFormat, Messages
from j1.formats.fourway import FourWay
from j1.formats.grammar import choices_text
from j1.formats.pairwise import PairwiseScores, PairwiseScoresVerdict, PairwiseVerdict
from j1.formats.pointwise import PointwiseScore
from j1.formats.templates import TEMPLATES
from j1.pairs import Parsed, Verdict

FORMATS: dict[str, JudgeFormat] = {
    f.name: f for f in (PairwiseVerdict(), PairwiseScores(), PairwiseScoresVerdict(), PointwiseScore(), FourWay())
}


def get_format(name: str, template: str = "full") -> JudgeFormat:
    """The format registered as ``name`` (pav, pas, pavs, pos, fourway), worded with ``template``
    (full or compact, see j1.formats.templates; the output grammar is the same)."""
    try:
        fmt = FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}; choose one of {sorted(FORMATS)}") from None
    return fmt if template == "full" else type(fmt)(template)


def require_arity(name: str, arities: Collection[int], who: str) -> JudgeFormat:
    """The format ``name`` when ``who`` can score prompts of its arity (how many responses one shows);
    ValueError in one line otherwise, naming the formats that fit.

    >>> require_arity("pos", (1, 2), "the J1 rewards").arity
    1
    >>> require_arity("fourway", (1, 2), "the J1 rewards")
    Traceback (most recent call last):
    ...
    ValueError: format 'fourway' shows 4 responses per prompt; the J1 rewards can score only formats that show 1 or 2 (pas, pav, pavs or pos)
    """
    fmt = get_format(name)
    if fmt.arity not in arities:
        counts = " or ".join(map(str, sorted(arities)))
        fits = sorted(n for n, f in FORMATS.items() if f.arity in arities)
        raise ValueError(f"format {name!r} shows {fmt.arity} responses per prompt; {who} can score only formats "
                         f"that show {counts} ({choices_text(fits)})")
    return fmt


__all__ = ["FORMATS", "TEMPLATES", "JudgeFormat", "Messages", "Parsed", "Verdict", "get_format", "require_arity"]
