"""Training rows for the J1 judge: every pair becomes a *unit* of two adjacent rows judged together.

Pairwise formulations (pav, pas, pavs): the pair in order AB, then BA. Pointwise (pos): response A
alone, then response B alone. MultiTask: a pas unit and a pos unit per pair. The pair sampler
(``j1.train.sampler``) keeps each unit, with all its rollouts, in one reward call.

Input: the rows of ``j1 synth mix`` (both orders of each pair, with ``pair_id``) or any pair file
``j1.data.pairs_io`` reads (plain prompt/chosen/rejected, TRL's preference form, j1's pair rows), whose
chosen response is then placed first or second by the mix's seeded coin (``pair_seed`` and the pair id).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from j1.chat import render, with_prefill
from j1.formats import get_format
from j1.pairs import render_both
from j1.schema import PlacedPair, RowError, both_orders, placed_pairs, read_json_rows, read_train_rows

log = logging.getLogger(__name__)

UNIT = 2  # rows per unit: (AB, BA) or (A, B)


# The placed view of the one pair record (``j1.schema``); probe, export and the tests import it from here.
Pair = PlacedPair


def load_pairs(path: str | os.PathLike, *, pair_seed: int = 0) -> list[Pair]:
    """Read pairs from a ``j1 synth mix`` file (rows with ``order``, read and validated by
    ``j1.schema.read_train_rows``) or a chosen/rejected pair file in any form
    ``j1.data.pairs_io.read_pair_file`` reads (placed in AB with ``j1.schema.both_orders``, the same
    seeded coin the mix uses).

    Raises:
        RowError: a malformed row, naming ``path:line`` and the field; a pair with one order only.
    """
    from j1.data.pairs_io import read_pair_file

    first = next((obj for _, obj in read_json_rows(path)), None)
    if first is None:
        raise RowError(f"{path}: no pairs")
    if "order" in first:
        rows = read_train_rows(path)
    else:  # the lines the mix would write, so a pair file and its mix train alike (and fail alike)
        rows = [r for rec in read_pair_file(path) for r in both_orders(rec, pair_seed)]
    return placed_pairs(rows, str(path))


def formulation_formats(formulation: str) -> tuple[str, ...]:
    """The judge formats a formulation trains: MultiTask mixes ``pas`` and ``pos``, the others are one format.

    >>> formulation_formats("multitask"), formulation_formats("pav")
    (('pas', 'pos'), ('pav',))
    """
    return ("pas", "pos") if formulation == "multitask" else (formulation,)


def unit_rows(pair: Pair, formulation: str, template: str = "full", prefill: str | None = None) -> list[dict]:
    """The judge prompts of one pair as dataset rows, in units of two (see the module docstring).

    Each row: ``prompt`` (chat messages, ending with the partial assistant message ``prefill`` if
    given: ``j1.chat``), ``pair_id``, ``order`` (AB/BA, or A/B for pos), ``label`` and
    ``judge_format`` — the columns the J1 reward functions read.
    """
    rows: list[dict] = []
    for name in formulation_formats(formulation):
        fmt = get_format(name, template)
        for order, messages in render_both(fmt, pair.prompt, pair.response_a, pair.response_b):
            rows.append({"prompt": with_prefill(messages, prefill), "pair_id": pair.pair_id, "order": order,
                         "label": pair.label, "judge_format": name})
    return rows


def prompt_tokens(tokenizer, messages: list[dict]) -> int:
    """Length in tokens of a chat prompt as the trainer feeds it (template + generation prompt, or
    the open prefill: ``j1.chat.render``)."""
    return len(tokenizer(render(tokenizer, messages), add_special_tokens=False).input_ids)


def build_rows(
    pairs: Sequence[Pair],
    formulation: str,
    *,
    tokenizer=None,
    max_prompt_tokens: int | None = None,
    template: str = "full",
    prefill: str | None = None,
) -> tuple[list[dict], dict[str, int]]:
    """All rows of ``pairs`` (units kept adjacent), dropping whole units whose longest prompt
    exceeds ``max_prompt_tokens`` (counted with the chat template of ``tokenizer``); prompts are
    worded with the judge ``template`` (j1.formats.templates) and end with ``prefill`` if given.

    Returns:
        (rows, counts) with counts ``pairs``, ``units``, ``dropped_long_units``.
    """
    rows: list[dict] = []
    dropped = 0
    for pair in pairs:
        unit = unit_rows(pair, formulation, template, prefill)
        for k in range(0, len(unit), UNIT):
            part = unit[k : k + UNIT]
            if max_prompt_tokens is not None:
                if tokenizer is None:
                    raise ValueError("max_prompt_tokens needs a tokenizer")
                longest = max(prompt_tokens(tokenizer, r["prompt"]) for r in part)
                if longest > max_prompt_tokens:
                    dropped += 1
                    continue
            rows.extend(part)
    counts = {"pairs": len(pairs), "units": len(rows) // UNIT, "dropped_long_units": dropped}
    if not rows:
        raise ValueError(f"no training rows left: {counts} (raise --max_prompt_tokens?)")
    return rows, counts
