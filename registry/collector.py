"""When a serving process makes the cyclic garbage collector's full collections: at an
idle moment, or at the latest `max_delay` seconds after one falls due.

    collections = IdleFullCollections()
    collections.start()      # once ready, after gc.freeze() (registry/http/server.py)
    collections.stop()       # CPython's own schedule again

A full collection traverses every tracked object made since start-up (what start-up
made is frozen, so not those), ~0.6 us each on a 2-core VM, while every request waits.
A registration leaves ~15 tracked objects behind (its cache entries, the parse memo's
schema tree, the router memo's route), and CPython starts a full collection whenever
those grew by a quarter since the last one: under 10 writers on Kafka, a few tens of
thousands of registrations made them 40-130 ms each, a stall of every request under
way, and the more the process had served the longer. They were the registrations' p99
(bench/register_latency.py, 10 s of wrk, 3 rounds alternating: p99 79 against 7-9 ms,
p99.9 128-137 against 14-15 ms).

So CPython keeps its young collections (a millisecond or less each) but never starts a
full one; a thread of ours does, once one is due (as many young collections since the
last as CPython's threshold asks), at the first check that finds the process idle (it
used next to no CPU since the previous check), or `max_delay` after it fell due if the
process never idles. What this moves is when the pauses come, not their length: under
load that never lets up, one full collection every `max_delay`, as long as CPython's
would have been then (each traverses what the process made since start-up). Cyclic
garbage old enough to need a full collection waits that much longer for it; the hot
calls make none (tests/unit/registry/test_cyclic_garbage.py).
"""
from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

# A generation-2 threshold CPython never reaches: it starts no full collection itself.
_NEVER = 1 << 30
# The share of one core the process may have used since the previous check and still
# count as idle: its background threads' (the log reader's polls, ZooKeeper's pings).
_IDLE_CPU = 0.05


class IdleFullCollections:
    """Full collections at idle moments (see the module docstring). Not thread-safe:
    one owner starts and stops it."""

    def __init__(self, *, check_every: float = 0.05, max_delay: float = 300.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._check_every = check_every
        self._max_delay = max_delay
        self._clock = clock
        self._saved: tuple[int, int, int] | None = None
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self.collections = 0  # full collections this made (for tests and benches)
        self.due_after = gc.get_threshold()[2]  # young collections that make a full one due

    def start(self) -> None:
        """Take full collections over from CPython and start checking. Never blocks."""
        if self._thread is not None:
            return
        young, older, full = self._saved = gc.get_threshold()
        self.due_after = full  # CPython's own count
        gc.set_threshold(young, older, _NEVER)
        self._stopped.clear()
        self._thread = threading.Thread(target=self._run, name="full-collections", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop checking and give full collections back to CPython. Blocks until the
        checking thread ends (at most one collection in progress)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stopped.set()
        thread.join()
        if self._saved is not None:
            gc.set_threshold(*self._saved)

    def _run(self) -> None:
        due_since: float | None = None
        used, checked = time.process_time(), time.perf_counter()
        while not self._stopped.wait(self._check_every):
            # Idle: the process used next to no CPU since the previous check (a count of
            # objects would not tell: serving reads makes and frees as many as it keeps).
            used_before, checked_before = used, checked
            used, checked = time.process_time(), time.perf_counter()
            if gc.get_count()[2] < self.due_after:
                due_since = None
                continue
            now = self._clock()
            if due_since is None:
                due_since = now
            idle = used - used_before <= _IDLE_CPU * (checked - checked_before)
            if idle or now - due_since >= self._max_delay:
                gc.collect(2)
                self.collections += 1
                if not idle:
                    log.debug("a full collection %.0f s after it fell due: the process never idled",
                              now - due_since)
                due_since = None
                used, checked = time.process_time(), time.perf_counter()
