"""Verified math pairs (J1's recipe for verifiable prompts).

For each problem, sample N solutions, check each one's last ``\\boxed{}`` against the gold answer
with math-verify (:mod:`j1.data.mathcheck`), and emit a pair when at least one sample is right and
one is wrong.

How chosen/rejected are picked: uniformly at random among the right samples and among the wrong
ones, with ``random.Random(f"{seed}:{id}")`` (so the choice depends only on the run seed and the
problem id, not on batch order or on resuming). We do not prefer the shortest sample: length would
then separate chosen from rejected systematically and the judge could learn "shorter wins".
Samples without a boxed answer (``no_answer``, often truncated) are never used: they are neither
known-right nor a fair wrong answer. Each pair keeps the gold answer as its ``reference`` (what a judge
trained with ``--judge_inputs reference`` reads). Problems with no right sample (``no_right_sample``) or no
wrong one (``no_wrong_sample``) give no pair; they are written to the dropped file and counted.
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Sequence

from tqdm import tqdm

from j1.backends import Backend, Messages, SamplingParams
from j1.data.mathcheck import NO_ANSWER, RIGHT, WRONG, check_answer, parse_gold
from j1.data.rationales import beside
from j1.data.sources import Problem
from j1.data.store import PairStore
from j1.schema import Dropped, PairRecord

log = logging.getLogger(__name__)

KIND = "math"
NO_RIGHT, NO_WRONG, BAD_GOLD = "no_right_sample", "no_wrong_sample", "gold_unparseable"

# Our own wording. It asks for \boxed{} because only a boxed answer is checked (see mathcheck).
# The instruction names no placeholder to box ("\boxed{N}" was copied literally in a trial);
# an empty box copied from it is no_answer.
MATH_INSTRUCTION = (
    "Solve the following problem. Reason step by step, then end with the sentence "
    "\"The answer is \\boxed{{}}.\" with the final answer inside the braces.\n\nProblem: {problem}"
)
# A worked example (our own made-up problem), sent as an earlier turn of the conversation. With the
# instruction alone SmolLM2-135M never wrote a box (0 of 164 samples on GSM8K, results/synth);
# shown one solution that ends "The answer is \boxed{27}." it mostly does.
MATH_EXAMPLE = (
    "A library has 3 shelves with 14 books on each shelf. It lends out 15 books. "
    "How many books are still on the shelves?",
    "The shelves hold 3 * 14 = 42 books.\nAfter lending out 15, 42 - 15 = 27 books are left.\n"
    "The answer is \\boxed{27}.",
)


def math_messages(problem: str, example: tuple[str, str] | None = MATH_EXAMPLE) -> Messages:
    """The chat prompt that asks for a solution ending in a boxed answer: the worked ``example``
    (problem, solution) as a first exchange, then ``problem`` (the source's text, unchanged)."""
    turns: Messages = []
    if example is not None:
        turns = [{"role": "user", "content": MATH_INSTRUCTION.format(problem=example[0])},
                 {"role": "assistant", "content": example[1]}]
    return [*turns, {"role": "user", "content": MATH_INSTRUCTION.format(problem=problem)}]


def choose(pid: str, statuses: Sequence[str], seed: int) -> tuple[int, int] | str:
    """``(chosen_index, rejected_index)``, or the drop reason when no pair can be made.

    >>> choose("p1", ["wrong", "right", "no_answer"], 0)
    (1, 0)
    >>> choose("p1", ["wrong", "no_answer"], 0), choose("p1", ["right", "no_answer"], 0)
    ('no_right_sample', 'no_wrong_sample')
    """
    right = [k for k, s in enumerate(statuses) if s == RIGHT]
    wrong = [k for k, s in enumerate(statuses) if s == WRONG]
    if not right:
        return NO_RIGHT
    if not wrong:
        return NO_WRONG
    rng = random.Random(f"{seed}:{pid}")
    return rng.choice(right), rng.choice(wrong)


def synth_math(
    backend: Backend,
    problems: Sequence[Problem],
    store: PairStore,
    params: SamplingParams,
    *,
    source: str,
    progress: bool = True,
    deadline: float | None = None,
    chunk_size: int | None = None,
) -> Counter:
    """Make pairs for every problem not yet in ``store``, appending each outcome as it finishes.

    Problems go to the backend ``chunk_size`` at a time, in source order (all at once when None).
    ``deadline`` (a ``time.time()`` value) is checked between chunks: no new chunk starts after it,
    and a started chunk is finished, so no generated sample is thrown away. The CLI uses one local
    batch (or one wave of HTTP requests) per chunk; a time-boxed run thus covers the first problems
    of the source.

    Returns:
        Counts of sample statuses (right/wrong/no_answer) over the samples drawn in this call.
    """
    done = store.done
    todo = [p for p in problems if p.id not in done]
    samples: Counter = Counter()
    golds = {}
    for p in todo:
        try:
            golds[p.id] = parse_gold(p.answer or "")
        except ValueError as exc:
            store.add_dropped(Dropped(p.id, p.prompt, KIND, source, BAD_GOLD,
                                      {"where": p.where, "gold": p.answer, "error": str(exc)}))
    todo = [p for p in todo if p.id in golds]
    if not todo:
        return samples
    bar = tqdm(total=len(todo), desc="synth math", unit="problem", disable=not progress)
    step = chunk_size or len(todo)
    for start in range(0, len(todo), step):
        if deadline is not None and time.time() > deadline:
            log.warning("time limit reached after %d of %d problems; rerun the command to continue",
                        start, len(todo))
            break
        _run_chunk(backend, todo[start:start + step], golds, store, params, source, samples, bar)
    bar.close()
    return samples


def _run_chunk(backend, chunk, golds, store, params, source, samples, bar) -> None:
    for i, comps in backend.stream([math_messages(p.prompt) for p in chunk], params):
        p, gold = chunk[i], golds[chunk[i].id]
        checks = [check_answer(gold, c.text) for c in comps]
        statuses = [c.status for c in checks]
        samples.update(statuses)
        meta = {
            "gold": gold.text,
            "answers": [c.answer for c in checks],
            "verification": statuses,
            "finish_reasons": [c.finish_reason for c in comps],
            "model": backend.model_name,
            "seed": params.seed,
            "samples": params.n,
            "temperature": params.temperature,
            "max_new_tokens": params.max_new_tokens,
            "completion_tokens": sum(c.completion_tokens for c in comps),
            "where": p.where,
        }
        picked = choose(p.id, statuses, params.seed)
        if isinstance(picked, str):
            store.add_dropped(Dropped(p.id, p.prompt, KIND, source, picked, meta))
        else:
            ci, ri = picked
            meta.update(chosen_index=ci, rejected_index=ri)
            # The gold answer stays with the pair: a judge may be trained and asked with it (--judge_inputs reference).
            # Its thoughts beside it: each final answer against the gold one (j1.data.rationales).
            store.add_pair(beside(PairRecord(p.id, p.prompt, comps[ci].text, comps[ri].text, KIND, source, meta,
                                             reference=gold.text)))
        bar.update(1)
        bar.set_postfix(pairs=len(store.pairs), right=samples[RIGHT], wrong=samples[WRONG])


def sample_counts_from_store(store: PairStore) -> dict[str, int]:
    """right/wrong/no_answer counts over every finished problem in the store (all runs)."""
    counts: Counter = Counter({RIGHT: 0, WRONG: 0, NO_ANSWER: 0})
    for rec in [*store.pairs.values(), *store.dropped.values()]:
        counts.update(rec.get("meta", {}).get("verification", []))
    return dict(counts)
