"""Request de-duplication: concurrent calls for the same key make one call between them.

    flights = SingleFlight()
    schema = flights.do(("id", 5), lambda: fetch_schema(5))   # 8 threads missing id 5: one fetch

Written by hand because the caching libraries do not cover what the client needs:
cachetools' `cached(condition=...)` de-duplicates only calls whose result it caches,
while the client also collapses uncached calls (a schema asked for in another
`format`) and registrations, whose result lands in two caches under other keys; and
there a follower must get the leader's exception, not repeat the failed request.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class _Flight:
    __slots__ = ("done", "value", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class SingleFlight:
    """Collapses concurrent calls for the same key into one; the others wait for its result."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[Hashable, _Flight] = {}

    def do(self, key: Hashable, fn: Callable[[], T]) -> T:
        """`fn()`, or the result of the call for `key` already in flight.

        Blocks while another thread's call for `key` runs, then returns its value or
        raises its exception. A call that starts after that one ended calls `fn` again.
        """
        with self._lock:
            flight = self._flights.get(key)
            leader = flight is None
            if leader:
                flight = self._flights[key] = _Flight()
        assert flight is not None
        if not leader:
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            return flight.value
        try:
            flight.value = fn()
            return flight.value
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            with self._lock:
                del self._flights[key]
            flight.done.set()
