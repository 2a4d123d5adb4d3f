"""Running the unit of work ``j1 serve`` batches (``Task``: one judgment, of a pair or of one response
alone). ``Task`` is defined with the request parser that makes it (``j1.serve.protocol``), which needs
no judge; it is importable from here too."""

from __future__ import annotations

from collections.abc import Sequence

from j1.api import Judge
from j1.backends import Messages
from j1.chat import with_prefill
from j1.judge import Judgment
from j1.pairs import render_both
from j1.serve.protocol import Task

__all__ = ["Task", "judge_prompts", "run_tasks"]


def run_tasks(judge: Judge, tasks: Sequence[Task]) -> list[Judgment | dict]:
    """Judge ``tasks`` with one call per kind (pair or single) and sample count, through
    ``Judge.compare_many``/``score_many`` (the code ``j1 judge`` runs); results in input order."""
    groups: dict[tuple[bool, int | None], list[int]] = {}
    for i, t in enumerate(tasks):
        groups.setdefault((t.response_b is not None, t.samples), []).append(i)
    out: list[Judgment | dict | None] = [None] * len(tasks)
    for (pair, samples), idx in groups.items():
        if pair:
            results = judge.compare_many([(tasks[i].prompt, tasks[i].response_a, tasks[i].response_b) for i in idx],
                                         samples)
        else:
            results = judge.score_many([(tasks[i].prompt, tasks[i].response_a) for i in idx], samples)
        for i, r in zip(idx, results, strict=True):
            out[i] = r
    return out  # type: ignore[return-value]


def judge_prompts(judge: Judge, task: Task) -> list[Messages]:
    """The prompts the judge's backend gets for ``task``, as ``Judge.compare_many``/``score_many``
    render them: both orders of a pair (a pointwise judge: each response alone), or the one response."""
    if task.response_b is not None:
        rendered = [m for _, m in render_both(judge.format, task.prompt, task.response_a, task.response_b)]
    else:
        rendered = [judge.format.render(task.prompt, task.response_a)]
    return [with_prefill(m, judge.prefill) for m in rendered]
