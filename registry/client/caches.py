"""The client's caches: cachetools' LRU and TTL caches, each behind a lock.

    latest = expiring(capacity=1000, ttl=30.0)   # cache.latest.ttl.sec
    latest.put("orders-value", registered)
    latest.get("orders-value")                   # None once 30 s have passed

cachetools' caches are not thread-safe, and an LRU read reorders its entries, so
reads take the lock too. Each call holds it for one dict operation, never across I/O.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from cachetools import Cache, LRUCache, TTLCache

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LockedCache(Generic[K, V]):
    """A cachetools cache made thread-safe. Values are never None: `get` answers None for a miss."""

    def __init__(self, cache: Cache) -> None:
        self._cache = cache
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            return self._cache.get(key)

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._cache[key] = value

    def put_if_absent(self, key: K, value: V) -> None:
        with self._lock:
            if key not in self._cache:
                self._cache[key] = value

    def discard_where(self, predicate: Callable[[K], bool]) -> None:
        """Drop every entry whose key satisfies `predicate` (a scan: meant for rare events)."""
        with self._lock:
            for key in [k for k in self._cache if predicate(k)]:
                del self._cache[key]

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._cache)


def bounded(capacity: int) -> LockedCache:
    """At most `capacity` entries; the least recently used goes first."""
    return LockedCache(LRUCache(maxsize=max(1, capacity)))


def expiring(capacity: int, ttl: float | None, timer: Callable[[], float] = time.monotonic) -> LockedCache:
    """`bounded`, with each entry also dropped `ttl` seconds after it was put (never when None)."""
    if ttl is None:
        return bounded(capacity)
    return LockedCache(TTLCache(maxsize=max(1, capacity), ttl=ttl, timer=timer))
