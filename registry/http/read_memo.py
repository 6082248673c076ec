"""Answers of the hot reads, remembered per applied log position and served without Flask.

A client's hot path reads more than schemas by id: the latest version of a subject
(`use.latest.version`, Spark, CLIs), the lookup of a schema under a subject (every
serializer with `auto.register.schemas=false`), the subject and version lists, the
config. Each of these answers is a function of the request and of the log as applied
so far, nothing else: so the first answer Flask gives at a log position is kept, and
the same request at the same position is answered from it on the event loop.

There is no second copy of the routing rules or of the views: Flask routes and answers
the first request, and its endpoint (left in the environ by the app) says whether the
answer may be kept (`HOT`). Any record applied moves the position and so retires every
kept answer at once, which keeps read-your-writes: a writer is answered only once its
record is applied. What is kept is bounded by bytes (least recently used goes first).

A kept answer is keyed by everything it may depend on: method, path, query, body, the
content type negotiated from Accept, and with security on the caller's principal and
the rules in force (`Guard.viewer`: listings show only what the caller may read).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from registry.http.wire import ok_head

# Flask endpoints whose 200 answers depend on the request and the applied log alone.
HOT = frozenset({
    "subjects.list_subjects", "subjects.list_versions", "subjects.get_version", "subjects.get_version_schema",
    "subjects.lookup_schema", "subjects.latest_with_metadata", "subjects.referenced_by",
    "schemas.get_schema", "schemas.get_schema_text", "schemas.get_schema_subjects", "schemas.get_schema_versions",
    "schemas.list_schemas", "schemas.schema_types",
    "config.get_config", "config.get_mode",
})
# Methods whose answers may be kept: reads, and the lookup (a POST that writes nothing).
METHODS = frozenset({"GET", "POST"})
_MAX_ENTRY_BYTES = 1 << 20  # a larger answer (a huge listing, a huge lookup body) is not worth keeping
_ENTRY_OVERHEAD = 256  # the key, the entry and the cache's own bookkeeping, roughly


@dataclass(frozen=True, slots=True)
class KeptAnswer:
    position: int  # the applied log position it was computed at
    endpoint: str  # for metrics
    headers: list[tuple[bytes, bytes]]
    body: bytes
    size: int
    head: bytes  # the whole head on the wire (`wire.ok_head`), for the listener's answers at once


class ReadMemo:
    """Thread-safe: listeners on several event loops share it."""

    def __init__(self, position: Callable[[], int], ready: Callable[[], bool], max_bytes: int = 16 << 20) -> None:
        self._position = position
        self._ready = ready
        # Least recently used first. An OrderedDict rather than cachetools' LRUCache:
        # every kept answer served costs a read here, and LRUCache.get (four Python
        # calls) took 1.6 us of a lookup's ~28 in process, OrderedDict's 0.3.
        self._kept: OrderedDict[Hashable, KeptAnswer] = OrderedDict()
        self._bytes = 0  # the sizes of what is kept, summed
        # How many kept answers are to a POST (lookups): none, and a POST need not be looked
        # up at all (`AsgiBridge.answer_at_once`, before every registration).
        self.posts = 0
        self._max_bytes = max_bytes
        self._lock = threading.Lock()

    @staticmethod
    def key(method: str, path: str, query: bytes, body: bytes, content_type: str,
            viewer: Hashable) -> Hashable:
        # The body itself, not a digest of it: a dict hashes and compares bytes exactly,
        # at a sixth of the cost (0.2 us for a lookup's 500 bytes, blake2b 1.2-1.5). A kept
        # answer is weighed with its key's body, so what the bound holds stays bounded.
        return (method, path, query, body, content_type, viewer)

    def position(self) -> int | None:
        """The position an answer computed now would be kept under, or None when the node
        is not ready (it answers 503 then, which is never kept)."""
        return self._position() if self._ready() else None

    def get(self, key: Hashable) -> KeptAnswer | None:
        """The kept answer to this request at the current position, if any. Never blocks
        for long (a lock held for a dict operation)."""
        position = self.position()
        if position is None:
            return None
        kept = self._kept
        with self._lock:
            answer = kept.get(key)
            if answer is not None:
                kept.move_to_end(key)
        return answer if answer is not None and answer.position == position else None

    def keep(self, key: Hashable, position: int, endpoint: str, headers: list[tuple[bytes, bytes]],
             body: bytes) -> None:
        """Keep Flask's 200 answer to `key`, computed at `position` (read before Flask ran:
        an answer that already saw a later record is then only ever served at the
        earlier position, which has passed by the time anyone waits on that record)."""
        if endpoint not in HOT:
            return
        head = ok_head(headers, len(body))
        # Weighed with its key (the path, the query and the request body it holds) and head.
        size = len(body) + len(head) + _ENTRY_OVERHEAD + len(key[1]) + len(key[2]) + len(key[3])  # type: ignore[index]
        if size > _MAX_ENTRY_BYTES or size > self._max_bytes:
            return
        # A copy: orjson's bytes keep its 4 KiB write buffer, whatever their length, and
        # what is kept must weigh what it is counted at.
        body = bytes(memoryview(body))
        kept = self._kept
        with self._lock:
            replaced = kept.pop(key, None)
            if replaced is not None:
                self._bytes -= replaced.size
            elif key[0] == "POST":  # type: ignore[index]
                self.posts += 1
            kept[key] = KeptAnswer(position, endpoint, headers, body, size, head)
            self._bytes += size
            while self._bytes > self._max_bytes:
                gone_key, gone = kept.popitem(last=False)
                self._bytes -= gone.size
                if gone_key[0] == "POST":  # type: ignore[index]
                    self.posts -= 1

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)
