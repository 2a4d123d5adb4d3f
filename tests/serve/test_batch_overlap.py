"""``Batcher(max_running=...)``: batches for an HTTP upstream overlap, a local model's run one at a time."""

from __future__ import annotations

import asyncio
import threading

import pytest
from fake_openai import FakeOpenAIServer

from j1 import load_judge
from j1.serve.app import ServerSettings, create_app
from j1.serve.batcher import Batcher


@pytest.mark.parametrize("max_running, in_judge_while_first_held", [(1, [[1]]), (2, [[1], [2]])])
def test_a_request_behind_a_running_batch_starts_at_once_only_with_a_free_slot(max_running, in_judge_while_first_held):
    gate = threading.Event()
    entered: list[list[int]] = []

    def run(items):
        entered.append(list(items))
        gate.wait(10)
        return items

    async def go():
        b = Batcher(run, max_batch=8, max_queue=10, wait_s=0.0, max_running=max_running)
        b.start()
        first = asyncio.ensure_future(b.submit([1]))
        while not entered:
            await asyncio.sleep(0.005)
        second = asyncio.ensure_future(b.submit([2]))
        await asyncio.sleep(0.2)  # time for a free slot to take the second request
        seen, queued, running = [list(e) for e in entered], b.queued, b.running
        gate.set()
        got = await asyncio.gather(first, second)
        await b.close()
        return seen, queued, running, got

    seen, queued, running, got = asyncio.run(go())
    assert seen == in_judge_while_first_held
    # One slot: the second request waits in the queue; two: both items are in judge calls.
    assert (queued, running) == ((1, 1) if max_running == 1 else (0, 2))
    assert got == [[1], [2]]


def test_max_running_below_one_is_refused():
    with pytest.raises(ValueError, match="max_running 0"):
        Batcher(lambda items: items, max_batch=1, max_queue=1, wait_s=0, max_running=0)


def test_an_upstream_judge_overlaps_upstream_batches():
    with FakeOpenAIServer() as upstream, load_judge(base_url=upstream.base_url) as judge:
        assert create_app(judge).state.batcher.max_running == ServerSettings().upstream_batches == 4
        assert create_app(judge, ServerSettings(upstream_batches=3)).state.batcher.max_running == 3
