"""Decisions every training process must make alike, made once for all (issue 52).

Under DeepSpeed ZeRO-3 a save is a collective: every process writes its shard, and one that does not
come leaves the others waiting forever. So each stop, save or resume decision is either reduced over
the processes (``max_over_processes``: a signal or a deadline any process sees counts for all) or
taken by the main process and handed to the rest (``from_main``: the checkpoint ``latest`` names,
which only the main process can read where storage is per node). Outside a process group both are
plain local calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def distributed() -> bool:
    """Whether this process is one of a torch.distributed group."""
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def max_over_processes(values: Sequence[float], device=None) -> list[float]:
    """The element-wise maximum of ``values`` over every process (the values themselves outside a group).

    >>> max_over_processes([0, 15, 1.5])
    [0.0, 15.0, 1.5]
    """
    import torch
    import torch.distributed as dist

    t = torch.tensor([float(v) for v in values], dtype=torch.float64, device=device)
    if distributed():
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def from_main(make: Callable[[], Any]) -> Any:
    """``make()`` run on the main process (rank 0) and its result handed to every process; an exception it
    raises is raised on every process, so that all fail alike instead of some waiting for the others.

    >>> from_main(lambda: "checkpoint-4")
    'checkpoint-4'
    """
    if not distributed():
        return make()
    import torch.distributed as dist

    box: list[Any] = [None]
    if dist.get_rank() == 0:
        try:
            box[0] = ("ok", make())
        except Exception as exc:  # handed over and re-raised below, on every process
            box[0] = ("error", exc)
    dist.broadcast_object_list(box, src=0)
    kind, value = box[0]
    if kind == "error":
        raise value
    return value
