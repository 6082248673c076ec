"""Body deadlines swept per loop (registry/http/body_deadlines.py): a stalled body is
cancelled between its deadline and one sweep after it, a finished one never, and a loop
with nothing to watch has no sweep scheduled. The 408 this leads to is tested through
the bridge in test_hostile_requests.py."""
from __future__ import annotations

import asyncio
import threading

import pytest

from registry.http.body_deadlines import BodyDeadlines


async def read_body(deadlines: BodyDeadlines, arrives: asyncio.Event) -> str:
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    assert task is not None
    deadlines.watch(loop, task)
    try:
        await arrives.wait()
        return "read"
    except asyncio.CancelledError:
        if not deadlines.expired(task):
            raise
        task.uncancel()
        return "timed out"
    finally:
        deadlines.unwatch(loop, task)


def test_only_the_stalled_body_is_cancelled_within_one_sweep_of_its_deadline():
    deadlines = BodyDeadlines(0.2)
    assert deadlines.period == pytest.approx(0.05)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        arrives, never = asyncio.Event(), asyncio.Event()
        began = loop.time()
        quick = asyncio.create_task(read_body(deadlines, arrives))
        stalled = asyncio.create_task(read_body(deadlines, never))
        late = asyncio.create_task(asyncio.sleep(0.1))
        await asyncio.sleep(0.05)
        arrives.set()
        assert await quick == "read"
        assert await asyncio.wait_for(stalled, 5) == "timed out"
        waited = loop.time() - began
        # Slack for a loaded machine, still short of the 1 s a sweep at most waits.
        assert 0.2 <= waited <= 0.2 + deadlines.period + 0.5, waited
        await late
        # Nothing watched: no sweep stays scheduled, and nothing is remembered.
        assert deadlines._waiting == {} and deadlines._expired == set()
        # A body watched after the last sweep ended gets a sweep of its own.
        assert await asyncio.wait_for(read_body(deadlines, never), 5) == "timed out"

    asyncio.run(main())


def test_a_cancellation_for_another_reason_is_not_taken_for_a_deadline():
    deadlines = BodyDeadlines(30)

    async def main() -> None:
        reader = asyncio.create_task(read_body(deadlines, asyncio.Event()))
        await asyncio.sleep(0)
        reader.cancel()  # the client went away, say
        with pytest.raises(asyncio.CancelledError):
            await reader
        assert deadlines._waiting == {asyncio.get_running_loop(): {}}, "unwatched; its sweep ends next time"

    asyncio.run(main())


def test_loops_on_two_threads_are_swept_apart():
    deadlines = BodyDeadlines(0.2)
    results: dict[str, str] = {}

    def serve(name: str, stall: bool) -> None:
        async def main() -> None:
            arrives = asyncio.Event()
            if not stall:
                asyncio.get_running_loop().call_later(0.05, arrives.set)
            results[name] = await asyncio.wait_for(read_body(deadlines, arrives), 5)
        asyncio.run(main())

    threads = [threading.Thread(target=serve, args=("a", True), daemon=True),
               threading.Thread(target=serve, args=("b", False), daemon=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert results == {"a": "timed out", "b": "read"}


def test_a_loop_closed_with_its_sweep_pending_is_forgotten():
    deadlines = BodyDeadlines(30)

    async def read_quickly() -> str:
        arrives = asyncio.Event()
        arrives.set()
        return await read_body(deadlines, arrives)

    for _ in range(3):  # a loop each, closed before its sweep runs (as a test client does)
        assert asyncio.run(read_quickly()) == "read"
    assert len(deadlines._waiting) == 1, "only the last loop's entry, not one per loop ever seen"
