"""``j1.serve.batcher``: how requests are gathered into judge calls, refused, failed and dropped
(no HTTP; a recording ``run`` stands in for the judge)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from j1.serve.batcher import Batcher, Closed, QueueFull


class Recorder:
    """A judge call that doubles each item, records each batch, and can be held until released."""

    def __init__(self, fail: bool = False):
        self.batches: list[list[int]] = []
        self.fail = fail
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    def __call__(self, items):
        self.entered.set()
        self.gate.wait(10)
        self.batches.append(list(items))
        if self.fail:
            raise RuntimeError("upstream down")
        return [2 * x for x in items]


async def _until(cond, timeout: float = 5.0) -> None:
    for _ in range(int(timeout / 0.005)):
        if cond():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition not reached")


def test_requests_within_the_window_share_a_batch_up_to_max_batch():
    async def go():
        run = Recorder()
        b = Batcher(run, max_batch=4, max_queue=10, wait_s=0.2)
        b.start()
        # 1+2 items fit a batch of 4; the next request (2 items) would overflow it, so it opens the next batch.
        got = await asyncio.gather(b.submit([1]), b.submit([2, 3]), b.submit([4, 5]), b.submit([6]))
        await b.close()
        return run.batches, got

    batches, got = asyncio.run(go())
    assert got == [[2], [4, 6], [8, 10], [12]]
    assert batches == [[1, 2, 3], [4, 5, 6]]


def test_a_request_larger_than_max_batch_runs_alone_and_whole():
    async def go():
        run = Recorder()
        b = Batcher(run, max_batch=2, max_queue=10, wait_s=0.05)
        b.start()
        got = await b.submit([1, 2, 3])
        await b.close()
        return run.batches, got

    assert asyncio.run(go()) == ([[1, 2, 3]], [2, 4, 6])


def test_a_full_queue_refuses_at_once():
    async def go():
        run = Recorder()
        run.gate.clear()  # the first batch is held in the judge
        b = Batcher(run, max_batch=1, max_queue=1, wait_s=0)
        b.start()
        first = asyncio.ensure_future(b.submit([1]))
        await _until(run.entered.is_set)
        second = asyncio.ensure_future(b.submit([2]))  # waits in the queue (1 of 1)
        await _until(lambda: b.queued == 1)
        with pytest.raises(QueueFull, match="1 requests are waiting"):
            await b.submit([3])
        run.gate.set()
        got = await asyncio.gather(first, second)
        await b.close()
        return got

    assert asyncio.run(go()) == [[2], [4]]


def test_a_failed_batch_fails_each_of_its_requests_and_the_worker_goes_on():
    async def go():
        run = Recorder(fail=True)
        b = Batcher(run, max_batch=4, max_queue=10, wait_s=0.1)
        b.start()
        got = await asyncio.gather(b.submit([1]), b.submit([2]), return_exceptions=True)
        run.fail = False
        after = await b.submit([3])
        await b.close()
        return got, after

    got, after = asyncio.run(go())
    assert [str(e) for e in got] == ["upstream down", "upstream down"]
    assert after == [6]


def test_a_cancelled_request_is_skipped_while_queued_and_dropped_mid_batch():
    async def go():
        run = Recorder()
        run.gate.clear()
        b = Batcher(run, max_batch=2, max_queue=10, wait_s=0.1)
        b.start()
        left_mid_batch = asyncio.ensure_future(b.submit([1]))
        stays = asyncio.ensure_future(b.submit([2]))
        await _until(run.entered.is_set)  # the batch [1, 2] is in the judge
        left_queued = asyncio.ensure_future(b.submit([3]))
        later = asyncio.ensure_future(b.submit([4]))
        await _until(lambda: b.queued == 2)
        left_mid_batch.cancel()
        left_queued.cancel()
        run.gate.set()
        got = await asyncio.gather(stays, later)
        await b.close()
        return run.batches, got, left_mid_batch.cancelled(), left_queued.cancelled()

    batches, got, *cancelled = asyncio.run(go())
    assert got == [[4], [8]] and all(cancelled)
    assert batches == [[1, 2], [4]]  # 3 was never judged; 1's answer was dropped


def test_close_answers_the_queued_requests_then_refuses_new_ones():
    async def go():
        run = Recorder()
        run.gate.clear()
        b = Batcher(run, max_batch=1, max_queue=10, wait_s=0)
        b.start()
        pending = [asyncio.ensure_future(b.submit([k])) for k in (1, 2, 3)]
        await _until(run.entered.is_set)
        closing = asyncio.ensure_future(b.close())
        await asyncio.sleep(0.01)
        with pytest.raises(Closed):
            await b.submit([4])
        run.gate.set()
        await closing
        return [p.result() for p in pending]

    assert asyncio.run(go()) == [[2], [4], [6]]


@pytest.mark.parametrize("kw", [dict(max_batch=0), dict(max_queue=0), dict(wait_s=-1)])
def test_bad_limits_raise(kw):
    with pytest.raises(ValueError):
        Batcher(Recorder(), **{"max_batch": 1, "max_queue": 1, "wait_s": 0.0, **kw})


def test_close_with_a_timeout_answers_what_still_waits_closed_and_leaves_the_running_call():
    async def go():
        run = Recorder()
        run.gate.clear()  # the judge call never returns within the test's waits
        seen: list[tuple] = []

        class Observer:
            def add(self, waits, items, run_s):
                seen.append((len(waits), items))

        b = Batcher(run, max_batch=1, max_queue=10, wait_s=0, observers=[Observer()])
        b.start()
        running = asyncio.ensure_future(b.submit([1]))
        queued = asyncio.ensure_future(b.submit([2]))
        await _until(run.entered.is_set)
        assert b.busy and b.waiting == 2
        await b.close(timeout=0.1)
        got = await asyncio.gather(running, queued, return_exceptions=True)
        busy_after_close = b.busy
        run.gate.set()  # the call returns; its answer has nobody to go to
        await _until(lambda: not b.busy)
        return got, busy_after_close, b.abandoned, seen

    got, busy_after_close, abandoned, seen = asyncio.run(go())
    assert all(isinstance(e, Closed) and "--shutdown_timeout" in str(e) for e in got)
    assert busy_after_close and abandoned == 2
    assert seen == [(1, 1)]  # the call that ran on is still counted when it returns (its answer dropped)


def test_abandon_from_another_thread_answers_every_waiting_request():
    async def go():
        run = Recorder()
        run.gate.clear()
        b = Batcher(run, max_batch=1, max_queue=10, wait_s=0)
        b.start()
        pending = [asyncio.ensure_future(b.submit([k])) for k in (1, 2)]
        await _until(run.entered.is_set)
        threading.Thread(target=b.abandon, args=("stopping",)).start()
        got = await asyncio.gather(*pending, return_exceptions=True)
        with pytest.raises(Closed):
            await b.submit([3])  # abandoning also closes
        run.gate.set()
        await b.close()
        return got

    got = asyncio.run(go())
    assert [str(e) for e in got] == ["stopping", "stopping"]


def test_observers_see_every_judge_call():
    calls: list[tuple[int, int]] = []

    class Observer:
        def add(self, waits, items, run_s):
            calls.append((len(waits), items))

    async def go():
        b = Batcher(Recorder(), max_batch=4, max_queue=10, wait_s=0.1, observers=[Observer()])
        b.start()
        got = await asyncio.gather(b.submit([1]), b.submit([2, 3]))
        await b.close()
        return got

    assert asyncio.run(go()) == [[2], [4, 6]]
    assert calls == [(2, 3)]  # one call: 2 requests, 3 items
