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

from j1.formats import get_format
from j1.judging.chat import render, with_prefill
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


def unit_rows(pair: Pair, formulation: str, template: str = "full", prefill: str | None = None,
              inputs: Sequence[str] = ()) -> list[dict]:
    """The judge prompts of one pair as dataset rows, in units of two (see the module docstring).

    Each row: ``prompt`` (chat messages, ending with the partial assistant message ``prefill`` if
    given: ``j1.judging.chat``), ``pair_id``, ``order`` (AB/BA, or A/B for pos), ``label`` and
    ``judge_format`` — the columns the J1 reward functions read — and, for a pair with thoughts
    (``j1 synth thoughts``) in a pairwise format, ``thought``: that order's thought, where the prompt shows
    every input it quotes. The prompt shows the pair's
    criteria and reference named in ``inputs`` (``--judge_inputs``) where the pair has them.
    """
    rows: list[dict] = []
    guide = pair.guidance.keep(inputs)
    for name in formulation_formats(formulation):
        fmt = get_format(name, template)
        for order, messages in render_both(fmt, pair.prompt, pair.response_a, pair.response_b, guide):
            row = {"prompt": with_prefill(messages, prefill), "pair_id": pair.pair_id, "order": order,
                   "label": pair.label, "judge_format": name}
            # a thought that quotes an input the judge is not shown (a reference) is no thought for this prompt
            if pair.thoughts is not None and fmt.pairwise and pair.unseen_input(guide.inputs) is None:
                row["thought"] = pair.thought(order, guide.inputs)
            rows.append(row)
    return rows


def prompt_tokens(tokenizer, messages: list[dict]) -> int:
    """Length in tokens of a chat prompt as the trainer feeds it (template + generation prompt, or
    the open prefill: ``j1.judging.chat.render``)."""
    return len(tokenizer(render(tokenizer, messages), add_special_tokens=False).input_ids)


def engine_context(use_vllm: bool, vllm_max_model_length: int | None, model_context: int | None
                   ) -> tuple[int | None, str | None]:
    """The context the rollouts are generated in, and what sets it: ``vllm_max_model_length`` under vLLM
    (colocated it sizes the engine; in server mode j1 reads it as the server's ``--max_model_len``),
    else the model's own (``j1.judging.limits.config_context``, which vLLM also falls back on).

    >>> engine_context(True, 8192, 131072), engine_context(False, 8192, 131072), engine_context(True, None, None)
    ((8192, 'vllm_max_model_length'), (131072, "the model's max_position_embeddings"), (None, None))
    """
    if use_vllm and vllm_max_model_length:
        return vllm_max_model_length, "vllm_max_model_length"
    if model_context:
        return model_context, "the model's max_position_embeddings"
    return None, None


def prompt_cap(max_prompt_tokens: int | None, context: int | None, context_from: str | None,
               max_completion_length: int) -> tuple[int | None, str | None]:
    """The most tokens a training prompt may have, and what sets it: ``max_prompt_tokens``, or the
    engine's context less ``max_completion_length`` (a longer prompt would leave its rollouts less than
    their budget: vLLM fails a server batch on it, and colocated it cuts the rollout short, an invalid
    verdict trained as reward 0), whichever is lower; (None, None) when neither is known.

    >>> prompt_cap(None, 8192, "vllm_max_model_length", 4096)
    (4096, 'vllm_max_model_length 8192 - max_completion_length 4096')
    >>> prompt_cap(3000, 8192, "vllm_max_model_length", 4096), prompt_cap(None, None, None, 64)
    ((3000, 'max_prompt_tokens 3000'), (None, None))
    >>> prompt_cap(None, 2048, "the model's max_position_embeddings", 4096)
    Traceback (most recent call last):
    ...
    ValueError: max_completion_length 4096 leaves no room for a prompt in the model's max_position_embeddings 2048; lower --max_completion_length
    """
    caps = []
    if max_prompt_tokens is not None:
        caps.append((max_prompt_tokens, f"max_prompt_tokens {max_prompt_tokens}"))
    if context is not None:
        if max_completion_length >= context:
            raise ValueError(f"max_completion_length {max_completion_length} leaves no room for a prompt in "
                             f"{context_from} {context}; lower --max_completion_length")
        caps.append((context - max_completion_length,
                     f"{context_from} {context} - max_completion_length {max_completion_length}"))
    return min(caps) if caps else (None, None)


def build_rows(
    pairs: Sequence[Pair],
    formulation: str,
    *,
    tokenizer=None,
    max_prompt_tokens: int | None = None,
    cap_from: str | None = None,
    template: str = "full",
    prefill: str | None = None,
    inputs: Sequence[str] = (),
) -> tuple[list[dict], dict]:
    """All rows of ``pairs`` (units kept adjacent), dropping whole units whose longest prompt
    exceeds ``max_prompt_tokens`` (counted with the chat template of ``tokenizer``; ``cap_from`` says
    what sets it, from ``prompt_cap``); prompts are worded with the judge ``template``
    (j1.formats.templates), show the pair's ``inputs`` (criteria, reference) where it has them, and end with
    ``prefill`` if given.

    Returns:
        (rows, counts) with counts ``pairs``, ``units``, ``dropped_long_units``, ``inputs`` (each input
        shown: the pairs that have it), and with a cap ``prompt_token_limit``, ``prompt_limit_from``,
        ``longest_prompt_tokens`` (of the rows kept) and ``longest_dropped`` (``pair_id``, ``order``,
        ``tokens`` of the longest prompt dropped; None when none was).

    Raises:
        ValueError: an input of ``inputs`` that no pair has (the judge would be said to read what it never saw),
            or no rows left.
    """
    shown = {name: sum(name in p.guidance.inputs for p in pairs) for name in inputs}
    missing = [name for name, n in shown.items() if n == 0]
    if missing:
        raise ValueError(f"--judge_inputs {missing[0]}: no training pair has a {missing[0]} (a pair file's "
                         f"'{missing[0]}' field; j1 synth keeps the source's gold answer as 'reference')")
    rows: list[dict] = []
    dropped = kept_longest = 0
    longest: dict | None = None
    if max_prompt_tokens is not None and tokenizer is None:
        raise ValueError("max_prompt_tokens needs a tokenizer")
    for pair in pairs:
        unit = unit_rows(pair, formulation, template, prefill, inputs)
        for k in range(0, len(unit), UNIT):
            part = unit[k : k + UNIT]
            if max_prompt_tokens is not None:
                n, row = max((prompt_tokens(tokenizer, r["prompt"]), r["order"]) for r in part)
                if n > max_prompt_tokens:
                    dropped += 1
                    if longest is None or n > longest["tokens"]:
                        longest = {"pair_id": pair.pair_id, "order": row, "tokens": n}
                    continue
                kept_longest = max(kept_longest, n)
            rows.extend(part)
    counts: dict = {"pairs": len(pairs), "units": len(rows) // UNIT, "dropped_long_units": dropped}
    if shown:
        counts["inputs"] = shown
    if max_prompt_tokens is not None:
        counts.update(prompt_token_limit=max_prompt_tokens, prompt_limit_from=cap_from or
                      f"max_prompt_tokens {max_prompt_tokens}", longest_prompt_tokens=kept_longest,
                      longest_dropped=longest)
    if not rows:
        raise ValueError(f"no training rows left: {counts} (every prompt is over {counts.get('prompt_limit_from')})")
    return rows, counts


def dropped_message(counts: dict) -> str | None:
    """The line ``j1 train`` logs (and ``--dry_run`` prints) for prompts dropped as too long; None if none were.

    >>> dropped_message({"units": 9, "dropped_long_units": 1, "prompt_token_limit": 4096,
    ...                  "prompt_limit_from": "vllm_max_model_length 8192 - max_completion_length 4096",
    ...                  "longest_dropped": {"pair_id": "p7", "order": "BA", "tokens": 5012}})
    '1 of 10 pair units dropped: a prompt over 4096 tokens (vllm_max_model_length 8192 - max_completion_length 4096); the longest, pair p7 in order BA, has 5012'
    """
    n = counts.get("dropped_long_units", 0)
    if not n:
        return None
    worst = counts["longest_dropped"]
    return (f"{n} of {n + counts['units']} pair units dropped: a prompt over {counts['prompt_token_limit']} tokens "
            f"({counts['prompt_limit_from']}); the longest, pair {worst['pair_id']} in order {worst['order']}, "
            f"has {worst['tokens']}")
