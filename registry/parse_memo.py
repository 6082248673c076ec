"""Memoised parsing of submitted schema texts.

Serializers look their schema up (`POST /subjects/{s}`) or re-register it every time
they start, with the very same text: parsing and canonicalising it again each time
costs far more than the rest of the request. `ParseMemo` keeps the parsed form of
texts seen lately, keyed by exactly what the parse depends on (type, text, the texts
its references resolve to, strictness), so a repeat costs one dictionary hit.

Bounded by weight, not count: an entry weighs the characters of its text and its
references' texts plus a fixed overhead, and the least recently used entries go once
the total passes `max_weight`. A parse that raises is not remembered (a hostile body
costs its parse every time, as before, and nothing more).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping

from registry.schema_types import ParsedSchema

# An entry weighs its text plus what a parsed form holds beyond it (measured with
# tracemalloc: a 10-field Avro record of 364 characters held 2.9 KiB parsed, its
# canonical text made): 16 MiB of weight keeps the memo near 16 MiB, about 4,700 such
# schemas. It was weighed at 1 KiB an entry, which let an import fill it with three
# times as many and hold twice the memory, long after (issue 51).
DEFAULT_MAX_WEIGHT = 16 * 1024 * 1024
_ENTRY_OVERHEAD = 3 * 1024  # the key tuple, the dict's slot and the parsed objects

_Key = tuple[str, str, bool, tuple[tuple[str, str], ...]]


class ParseMemo:
    """The parsed form of recently submitted schema texts. Thread-safe; `parse` holds
    the memo's lock only for the lookups, never while parsing.

    Least recently used first out, by hand on an OrderedDict (in C: a hit moves its
    entry to the end, eviction takes from the front) rather than cachetools'
    LRUCache: every registration of a new schema is a miss and an insertion, and
    LRUCache's, in Python, cost 7-8 us of the event loop's time for each."""

    def __init__(self, max_weight: int = DEFAULT_MAX_WEIGHT) -> None:
        self._entries: OrderedDict[_Key, tuple[int, ParsedSchema]] = OrderedDict()
        self._weight = 0
        self._max_weight = max_weight
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def parse(self, schema_type: str, text: str, references: Mapping[str, str], lenient: bool,
              parse: Callable[[], ParsedSchema]) -> ParsedSchema:
        """The parsed form of `text` with `references` resolved to those texts: memoised,
        else `parse()` (whose exceptions pass through, remembering nothing)."""
        key: _Key = (schema_type, text, lenient, tuple(references.items()))
        entries = self._entries
        with self._lock:
            entry = entries.get(key)
            if entry is not None:
                entries.move_to_end(key)  # now the most recently used
                self.hits += 1
                return entry[1]
            self.misses += 1
        parsed = parse()
        weight = len(text) + _ENTRY_OVERHEAD
        if references:
            weight += sum(len(name) + len(body) for name, body in key[3])
        if weight <= self._max_weight:
            with self._lock:
                replaced = entries.pop(key, None)  # parsed meanwhile by another thread
                if replaced is not None:
                    self._weight -= replaced[0]
                entries[key] = (weight, parsed)
                self._weight += weight
                while self._weight > self._max_weight:
                    self._weight -= entries.popitem(last=False)[1][0]
        return parsed

    def __len__(self) -> int:
        return len(self._entries)
