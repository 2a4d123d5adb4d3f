"""Running the unit of work ``j1 serve`` batches (``Task``: one judgment, of a pair or of one response
alone). ``Task`` is defined with the request parser that makes it (``j1.serve.protocol``), which needs
no judge; it is importable from here too."""

from __future__ import annotations

from collections.abc import Sequence

from j1.api import Judge
from j1.backends import ContextTooLong, Messages
from j1.judging.chat import with_prefill
from j1.judging.judge import Judgment
from j1.pairs import render_both
from j1.serve.protocol import Task

__all__ = ["Task", "judge_prompts", "run_tasks"]


def run_tasks(judge: Judge, tasks: Sequence[Task]) -> list[Judgment | dict | ContextTooLong]:
    """Judge ``tasks`` with one call per kind (pair or single) and sample count, through
    ``Judge.compare_many``/``score_many`` (the code ``j1 judge`` runs); results in input order. A task an
    engine refuses as over its context gets its ``ContextTooLong`` as its result: the batch's other tasks,
    other clients' among them, are judged as usual."""
    groups: dict[tuple[bool, int | None], list[int]] = {}
    for i, t in enumerate(tasks):
        groups.setdefault((t.response_b is not None, t.samples), []).append(i)
    out: list[Judgment | dict | ContextTooLong | None] = [None] * len(tasks)
    for (pair, samples), idx in groups.items():
        try:
            results = _judge_group(judge, [tasks[i] for i in idx], pair, samples)
        except ContextTooLong:
            # Which task was too long is the engine's knowledge: ask again one task at a time.
            results = []
            for i in idx:
                try:
                    results.extend(_judge_group(judge, [tasks[i]], pair, samples))
                except ContextTooLong as exc:
                    results.append(exc)
        for i, r in zip(idx, results, strict=True):
            out[i] = r
    return out  # type: ignore[return-value]


def _judge_group(judge: Judge, tasks: Sequence[Task], pair: bool, samples: int | None) -> list:
    if pair:
        return judge.compare_many([{"prompt": t.prompt, "response_a": t.response_a, "response_b": t.response_b,
                                    "criteria": t.criteria, "reference": t.reference} for t in tasks], samples)
    return judge.score_many([{"prompt": t.prompt, "response": t.response_a, "criteria": t.criteria,
                              "reference": t.reference} for t in tasks], samples)


def judge_prompts(judge: Judge, task: Task) -> list[Messages]:
    """The prompts the judge's backend gets for ``task``, as ``Judge.compare_many``/``score_many``
    render them: both orders of a pair (a pointwise judge: each response alone), or the one response,
    with the task's criteria and reference."""
    if task.response_b is not None:
        rendered = [m for _, m in render_both(judge.format, task.prompt, task.response_a, task.response_b,
                                              task.guidance)]
    else:
        rendered = [judge.format.render(task.prompt, task.response_a, None, task.guidance)]
    return [with_prefill(m, judge.prefill) for m in rendered]
