"""An in-memory `Log` for unit tests of pure logic. Not durable."""
from __future__ import annotations

import bisect
import threading

from store.log import LogBatch, LogConflict
from store.records import LogRecord


class MemoryLog:
    """A list of records with Kafka-like compaction on demand (`compact()`)."""

    concurrent_reads = True  # each thread reads through its own connection / under a lock
    max_record_bytes: int | None = None

    def __init__(self) -> None:
        self._records: list[LogRecord] = []
        self._next = 0
        self._changed = threading.Condition()
        self._closed = False

    def append(self, key: bytes, value: bytes | None, expected_offset: int | None = None,
               timeout: float | None = None) -> int:
        with self._changed:
            offset = self._next
            if expected_offset is not None and expected_offset != offset:
                raise LogConflict(f"log end is {offset}, not {expected_offset}")
            self._records.append(LogRecord(offset, key, value))
            self._next += 1
            self._changed.notify_all()
            return offset

    def append_many(self, records: list[tuple[bytes, bytes | None]], expected_offset: int,
                    timeout: float | None = None) -> list[int]:
        with self._changed:
            if expected_offset != self._next:
                raise LogConflict(f"log end is {self._next}, not {expected_offset}")
            offsets = []
            for key, value in records:
                self._records.append(LogRecord(self._next, key, value))
                offsets.append(self._next)
                self._next += 1
            self._changed.notify_all()
            return offsets

    def read(self, from_offset: int, max_records: int, timeout: float) -> LogBatch:
        with self._changed:
            if from_offset >= self._next and not self._closed:
                self._changed.wait(timeout)
            start = bisect.bisect_left(self._records, from_offset, key=lambda r: r.offset)
            records = self._records[start:start + max_records]
            if len(records) == max_records and records:
                return LogBatch(records, records[-1].offset + 1)
            # Everything left was returned: the reader has reached the end, even if
            # compaction removed the records just below it.
            return LogBatch(records, max(from_offset, self._next))

    def end_offset(self, timeout: float | None = None) -> int:
        return self._next

    def compact(self) -> None:
        """Keep only the latest record per key, dropping tombstones, as Kafka eventually does."""
        with self._changed:
            latest = {r.key: r for r in self._records}
            self._records = [r for r in self._records if latest[r.key] is r and r.value is not None]

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
