"""Deadlines for request bodies: one sweep per event loop, not a timer per request.

A body that stops arriving must not hold its request forever (408). With a timer per
request (`loop.call_at`, then `cancel`) a kept lookup (`POST /subjects/{s}`, the one hot
read with a body) took 34 us of CPU in process; with this, 27. (Under wrk the lookup's
rate did not move: granian's `receive`, which served it then, bounded it.) Here a request costs two dict
operations; while any body is being read on a loop, one callback on that loop sweeps
every `period` seconds and cancels the tasks past their deadline. A body is refused
between its deadline and one period after it.

Each loop's tasks are touched only on that loop's thread (several listeners may serve
one bridge, each from its own loop); the map of loops is shared, and its single dict
operations are atomic.
"""
from __future__ import annotations

import asyncio

_MAX_PERIOD = 1.0


class BodyDeadlines:
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.period = min(_MAX_PERIOD, timeout / 4)
        # Per loop, the tasks reading a body and their deadlines; a loop is here only
        # while it has some (its sweep is then scheduled).
        self._waiting: dict[asyncio.AbstractEventLoop, dict[asyncio.Task, float]] = {}
        self._expired: set[asyncio.Task] = set()

    def watch(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task) -> None:
        """From now on, cancel `task` if it is still watched `timeout` seconds later."""
        waiting = self._waiting.get(loop)
        if waiting is None:
            # A loop closed with its sweep still pending (a listener stopped, a loop per
            # request in tests) would stay here for good: forget those first.
            for closed in [other for other in self._waiting if other.is_closed()]:
                self._waiting.pop(closed, None)
            waiting = self._waiting[loop] = {}
            loop.call_later(self.period, self._sweep, loop)
        waiting[task] = loop.time() + self.timeout

    def unwatch(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task) -> None:
        waiting = self._waiting.get(loop)
        if waiting is not None:
            waiting.pop(task, None)

    def expired(self, task: asyncio.Task) -> bool:
        """Whether `task` was cancelled for its deadline (true once: it is forgotten)."""
        if task in self._expired:
            self._expired.discard(task)
            return True
        return False

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        waiting = self._waiting[loop]
        now = loop.time()
        for task in [task for task, deadline in waiting.items() if deadline <= now]:
            del waiting[task]
            self._expired.add(task)
            task.cancel()
        if waiting:
            loop.call_later(self.period, self._sweep, loop)
        else:
            del self._waiting[loop]
