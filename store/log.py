"""The `Log` contract: an ordered, durable, compacted sequence of keyed records.

Backends: `store.memory_log.MemoryLog` (unit tests), `store.sqlite_log.SqliteLog`
(embedded, single node) and, later, a Kafka topic. Offsets grow strictly; after
compaction they need not be contiguous, as in Kafka.
"""
from __future__ import annotations

from typing import Protocol

from store.records import LogRecord


class LogUnavailable(RuntimeError):
    """The log cannot be reached or did not confirm a write in time."""


class LogFenced(RuntimeError):
    """This node may no longer append: another writer has taken over."""


class LogConflict(RuntimeError):
    """The log's end was not where the writer expected: someone else appended first.

    The writer should catch up, re-validate and try again.
    """


class Log(Protocol):
    def append(self, key: bytes, value: bytes | None, expected_offset: int | None = None) -> int:
        """Durably append one record (a None value is a tombstone) and return its offset.

        With `expected_offset`, append only if the record would land exactly there
        (the log's end has not moved since the writer caught up); else raise LogConflict
        and write nothing. Blocks until the record is durable. Raises LogUnavailable,
        LogFenced or LogConflict.
        """

    def read(self, from_offset: int, max_records: int, timeout: float) -> list[LogRecord]:
        """Records at offsets >= `from_offset`, in order, at most `max_records`.

        Blocks up to `timeout` seconds while there are none; then returns [].
        """

    def end_offset(self) -> int:
        """The offset the next appended record will have (Kafka's high watermark).

        A reader that has read every record below it has caught up.
        Raises LogUnavailable.
        """

    def close(self) -> None:
        """Release resources; wakes blocked readers."""
