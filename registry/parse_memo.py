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
from collections.abc import Callable, Mapping

from cachetools import LRUCache

from registry.schema_types import ParsedSchema

# Parsed forms are a few times the size of their text; 16 Mi characters of text keeps
# the memo to tens of MiB at worst and holds thousands of typical schemas.
DEFAULT_MAX_WEIGHT = 16 * 1024 * 1024
_ENTRY_OVERHEAD = 1024  # the key tuple, the cache's links and the parsed objects' base cost

_Key = tuple[str, str, bool, tuple[tuple[str, str], ...]]


def _weight(entry: tuple[int, ParsedSchema]) -> int:
    return entry[0]


class ParseMemo:
    """The parsed form of recently submitted schema texts. Thread-safe; `parse` holds
    the memo's lock only for the lookups, never while parsing."""

    def __init__(self, max_weight: int = DEFAULT_MAX_WEIGHT) -> None:
        self._entries: LRUCache[_Key, tuple[int, ParsedSchema]] = LRUCache(max_weight, getsizeof=_weight)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def parse(self, schema_type: str, text: str, references: Mapping[str, str], lenient: bool,
              parse: Callable[[], ParsedSchema]) -> ParsedSchema:
        """The parsed form of `text` with `references` resolved to those texts: memoised,
        else `parse()` (whose exceptions pass through, remembering nothing)."""
        key: _Key = (schema_type, text, lenient, tuple(references.items()))
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self.hits += 1
                return entry[1]
            self.misses += 1
        parsed = parse()
        weight = len(text) + sum(len(name) + len(body) for name, body in key[3]) + _ENTRY_OVERHEAD
        if weight <= self._entries.maxsize:
            with self._lock:
                self._entries[key] = (weight, parsed)
        return parsed

    def __len__(self) -> int:
        return len(self._entries)
