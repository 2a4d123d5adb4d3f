"""RewardBench 2 (allenai/reward-bench-2, split "test"): ``id``, ``prompt``, ``chosen`` (list),
``rejected`` (list), ``num_correct``, ``num_incorrect``, ``total_completions``, ``models``, ``subset``,
``additional_metadata``.

Subsets Factuality, Precise IF, Math, Safety and Focus hold one chosen and three rejected answers;
Ties holds several correct answers ("tied:N") or one ("ref:N") beside incorrect ones. An item keeps
its answers as responses c0.. (chosen) and r0.. (rejected), pairs (c_i, r_j) labelled "A" so the
run file says which is which; how they are judged is the mode's (``prompts``), how they are scored
is ``j1.eval.rb2_scoring``'s:

- ``--rb2-mode fourway`` (the official default): one prompt per rotation showing c0 and the first
  three rejected in four positions A–D. Rotation 1 puts the chosen answer at a position drawn from
  the seed and the item id (the official code draws it unseeded), swapping it with the answer there
  as the official code does; rotation r moves it r - 1 positions on. Slot ``4way:C`` = chosen at C.
- ``--rb2-mode ratings``, and Ties always: each response rated alone with the pointwise format;
  slot = the response's name.
"""

from __future__ import annotations

import hashlib

from j1.eval.benchmarks.base import Benchmark, Context, str_field
from j1.eval.items import Item
from j1.eval.rb2_rules import ties_id
from j1.formats import Messages, get_format
from j1.formats.fourway import POSITIONS
from j1.schema import RowError, require

SUBSETS = ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties")
MODES = ("fourway", "ratings")
FOURWAY_SLOT = "4way:"


def _texts(row, key: str, where: str) -> list[str]:
    values = require(row, key, list, where)
    if not values or not all(isinstance(v, str) for v in values):
        raise RowError(f"{where}: field {key!r} must be a non-empty list of strings")
    return values


def parse_row(row, where: str, ctx: Context) -> list[Item]:
    subset = str_field(row, "subset", where)
    if subset not in SUBSETS:
        raise RowError(f"{where}: field 'subset' is {subset!r}; expected one of {list(SUBSETS)}")
    native = require(row, "id", (str, int), where)
    chosen, rejected = _texts(row, "chosen", where), _texts(row, "rejected", where)
    num_correct = require(row, "num_correct", int, where)
    if num_correct != len(chosen):
        raise RowError(f"{where}: field 'num_correct' is {num_correct} but 'chosen' holds {len(chosen)} answers")
    if "num_incorrect" in row and row["num_incorrect"] != len(rejected):
        raise RowError(f"{where}: field 'num_incorrect' is {row['num_incorrect']!r} but 'rejected' holds "
                       f"{len(rejected)} answers")
    if subset == "Ties":
        try:
            kind, _ = ties_id(str(native))
        except ValueError:
            raise RowError(f"{where}: field 'id' is {native!r}; Ties ids are 'ref:N' or 'tied:N'") from None
        if kind == "tied" and num_correct < 2:
            raise RowError(f"{where}: field 'chosen' holds {num_correct} answer; a 'tied' prompt has at least 2")
    elif num_correct != 1 or len(rejected) < 3:
        raise RowError(f"{where}: a {subset} item has 1 chosen and at least 3 rejected answers; got "
                       f"{num_correct} and {len(rejected)} (fields 'chosen', 'rejected')")
    names_c = [f"c{i}" for i in range(len(chosen))]
    names_r = [f"r{j}" for j in range(len(rejected))]
    return [Item(
        id=str(native),
        category=subset,
        prompt=str_field(row, "prompt", where),
        responses=dict(zip(names_c, chosen, strict=True)) | dict(zip(names_r, rejected, strict=True)),
        pairs=[(c, r, "A") for c in names_c for r in names_r],
        meta={"num_correct": num_correct},
    )]


def rotation_positions(item_id: str, seed: int, rotations: int) -> list[str]:
    """The chosen answer's position in each rotation: the first from a hash of seed and id, then on
    by one position per rotation.

    >>> rotation_positions("17", 0, 4)
    ['B', 'C', 'D', 'A']
    >>> len(set(rotation_positions("17", 0, 2)))
    2
    """
    if not 1 <= rotations <= len(POSITIONS):
        raise ValueError(f"--rb2-rotations {rotations}: must be in [1, {len(POSITIONS)}]")
    first = int.from_bytes(hashlib.sha256(f"{seed}\x00{item_id}".encode()).digest()[:4], "little") % len(POSITIONS)
    return [POSITIONS[(first + r) % len(POSITIONS)] for r in range(rotations)]


def arrangement(names: list[str], chosen_at: str) -> list[str]:
    """The four names in shown order: ``names`` (chosen first) with the chosen swapped into
    ``chosen_at``, the answer there moving to position A (the official shuffle).

    >>> arrangement(["c0", "r0", "r1", "r2"], "C")
    ['r1', 'r0', 'c0', 'r2']
    """
    shown = list(names)
    k = POSITIONS.index(chosen_at)
    shown[0], shown[k] = shown[k], shown[0]
    return shown


def fourway_names(item_pairs) -> list[str]:
    """c0 and the first three rejected answers, the four a four-way prompt shows."""
    rejected = [r for c, r, _ in item_pairs if c == "c0"]
    return ["c0", *rejected[:3]]


def uses_ratings(category: str, mode: str) -> bool:
    """Ties is always rated; the other subsets as the mode says."""
    return category == "Ties" or mode == "ratings"


def prompts(item: Item, cfg) -> list[tuple[str, Messages]]:
    """The judge prompts of one item under the run's ``rb2_mode``, ``rb2_rotations``, ``seed`` and ``template``."""
    template = getattr(cfg, "template", None) or "full"
    if uses_ratings(item.category, cfg.rb2_mode):
        pos = get_format("pos", template)
        return [(name, pos.render(item.prompt, text)) for name, text in item.responses.items()]
    four = get_format("fourway", template)
    names = fourway_names(item.pairs)
    out = []
    for at in rotation_positions(item.id, cfg.seed, cfg.rb2_rotations):
        shown = [item.responses[n] for n in arrangement(names, at)]
        out.append((FOURWAY_SLOT + at, four.render(item.prompt, *shown)))
    return out


def _score(out_dir, run: dict, n_boot: int) -> dict:
    from j1.eval.rb2_scoring import score_rb2_run

    return score_rb2_run(out_dir, run, n_boot=n_boot)


BENCHMARK = Benchmark("rewardbench2", parse_row, hf_split="test", prompts=prompts, score=_score)
