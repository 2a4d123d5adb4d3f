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

A Precise IF item carries the constraint its answers are checked against, where its row has one
(``additional_metadata.constraint``), as criteria; the official evaluation sends none, so it goes to the
judge only with ``--use_reference``.
"""

from __future__ import annotations

from j1.eval.benchmarks.base import Asking, Context, register, str_field
from j1.eval.items import Item

# The placement rules live in rb2_rules, beside the scoring rules that read them too.
from j1.eval.rb2_rules import (
    FOURWAY_SLOT,
    arrangement,
    fourway_names,
    rotation_positions,
    ties_id,
    uses_ratings,
)
from j1.formats import Messages, get_format
from j1.schema import RowError, require

SUBSETS = ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties")
MODES = ("fourway", "ratings")


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
    constraint = None
    extra = row.get("additional_metadata")
    if subset == "Precise IF" and isinstance(extra, dict) and extra.get("constraint") is not None:
        constraint = extra["constraint"]
        if not isinstance(constraint, str):
            raise RowError(f"{where}: field 'additional_metadata.constraint' must be a string, "
                           f"got {type(constraint).__name__}")
    names_c = [f"c{i}" for i in range(len(chosen))]
    names_r = [f"r{j}" for j in range(len(rejected))]
    return [Item(
        id=str(native),
        category=subset,
        prompt=str_field(row, "prompt", where),
        responses=dict(zip(names_c, chosen, strict=True)) | dict(zip(names_r, rejected, strict=True)),
        pairs=[(c, r, "A") for c in names_c for r in names_r],
        meta={"num_correct": num_correct},
        criteria=constraint,
    )]


def prompts(item: Item, asking: Asking) -> list[tuple[str, Messages]]:
    """The judge prompts of one item under the run's ``rb2_mode``, ``rb2_rotations``, ``seed`` and ``template``."""
    template = asking.template or "full"
    if uses_ratings(item.category, asking.rb2_mode):
        pos = get_format("pos", template)
        return [(name, pos.render(item.prompt, text, None, item.guidance)) for name, text in item.responses.items()]
    four = get_format("fourway", template)
    names = fourway_names(item.pairs)
    out = []
    for at in rotation_positions(item.id, asking.seed, asking.rb2_rotations):
        shown = [item.responses[n] for n in arrangement(names, at)]
        out.append((FOURWAY_SLOT + at, four.render(item.prompt, *shown, guidance=item.guidance)))
    return out


def _score(out_dir, run: dict, n_boot: int) -> dict:
    from j1.eval.rb2_scoring import score_rb2_run

    return score_rb2_run(out_dir, run, n_boot=n_boot)


def _view(item: Item, rec, asking: Asking, k: int, thoughts: bool = True):
    from j1.eval.rb2_scoring import rb2_view

    return rb2_view(item, rec, asking, k, thoughts)


register("rewardbench2", hf_split="test", prompts=prompts, score=_score, view=_view)(parse_row)
