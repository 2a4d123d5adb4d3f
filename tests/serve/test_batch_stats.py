"""``Batcher.stats``: the batches formed and the queue wait that ``/health`` reports (no HTTP)."""

from __future__ import annotations

import asyncio
import threading

from j1.serve.batcher import Batcher, BatchStats


def test_batch_stats_add_table():
    # Two judge calls: 3 items for 2 requests that waited 0.5 s and 0.25 s (run 2 s), then 1 item for one
    # request that waited 1 s (run 1 s): 2 batches, 3 requests, 4 items, largest 3, wait 1.75 s, run 3 s.
    stats = BatchStats()
    stats.add([0.5, 0.25], 3, 2.0)
    stats.add([1.0], 1, 1.0)
    assert stats.to_json() == {"batches": 2, "requests": 3, "items": 4, "largest": 3, "wait_s": 1.75, "run_s": 3.0}


def test_stats_count_the_batches_formed_and_the_wait_behind_a_running_batch():
    gate = threading.Event()

    def run(items):
        gate.wait(10)
        return items

    async def go():
        b = Batcher(run, max_batch=8, max_queue=10, wait_s=0.0)
        b.start()
        first = asyncio.ensure_future(b.submit([1]))
        while b.running == 0:  # the first request's batch is in the judge call, held at the gate
            await asyncio.sleep(0.005)
        rest = [asyncio.ensure_future(b.submit([k, k])) for k in (2, 3)]
        await asyncio.sleep(0.2)  # the two wait at least this long behind the held batch
        gate.set()
        await asyncio.gather(first, *rest)
        await b.close()
        return b.stats

    stats = asyncio.run(go())
    # Batch 1: the first request alone (1 item); batch 2: the two that queued meanwhile (2 + 2 items).
    assert (stats.batches, stats.requests, stats.items, stats.largest) == (2, 3, 5, 4)
    assert stats.wait_s >= 0.4  # two requests x at least 0.2 s each
    assert stats.run_s >= 0.2  # the held call lasted at least as long as the sleep
