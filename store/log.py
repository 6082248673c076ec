"""The `Log` contract: an ordered, durable, compacted sequence of keyed records.

Backends: `store.memory_log.MemoryLog` (unit tests), `store.sqlite_log.SqliteLog`
(embedded, single node) and `store.kafka_log.KafkaLog` (a compacted Kafka topic).
Offsets grow strictly but need not be contiguous: compaction removes records and, in
Kafka, transaction markers occupy offsets no reader ever sees. That is why `read`
reports the position it reached and not only the records it found: a reader has
caught up when its position reaches `end_offset()`, whatever the last offset that
held a record.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from store.records import LogRecord


class LogUnavailable(RuntimeError):
    """The log cannot be reached or did not confirm a write in time."""


class LogMisconfigured(LogUnavailable):
    """The log can be reached but must not be used as configured (say, a topic with
    several partitions or a non-compact cleanup policy). Retrying will not help."""


class RecordTooLarge(ValueError):
    """A record is larger than the log accepts (`Log.max_record_bytes`)."""


class LogConflict(RuntimeError):
    """The log's end was not where the writer expected: someone else appended first.

    The writer should catch up, re-validate and try again.
    """


@dataclass(frozen=True)
class LogBatch:
    """What one `Log.read` found.

    `next_offset` is the position reached: every offset below it has been read, its
    record either in `records` (or an earlier batch) or not there at all (compacted
    away, a transaction marker). It never goes below the offset read from.
    """

    records: list[LogRecord] = field(default_factory=list)
    next_offset: int = 0


class Log(Protocol):
    #: Whether `read` may be called from several threads at once. A backend that says
    #: so lets a waiting writer apply records itself (see `store.reader`). Optional;
    #: absent means False.
    concurrent_reads: bool

    #: The largest key plus value the log accepts in one record, or None for no limit.
    #: Writers check it before appending (`store.writer`), so an oversized record is
    #: refused up front rather than failing inside the log.
    max_record_bytes: int | None

    def append(self, key: bytes, value: bytes | None, expected_offset: int | None = None,
               timeout: float | None = None) -> int:
        """Durably append one record (a None value is a tombstone) and return its offset.

        With `expected_offset`, the record counts only if it lands exactly there (the
        log's end has not moved since the writer caught up); else raise LogConflict.
        Backends that can refuse (memory, SQLite) then write nothing. Kafka cannot, so
        its records carry the offset they expect (`LogRecord.expected_offset`) and
        readers drop those that landed elsewhere: either way the record has no effect.
        Blocks until the record is durable, at most `timeout` seconds (None: the
        backend's own timeout); a record not confirmed in time may still land later.
        Raises LogUnavailable or LogConflict.
        """

    def append_many(self, records: list[tuple[bytes, bytes | None]], expected_offset: int,
                    timeout: float | None = None) -> list[int]:
        """Durably append `records` in order, the i-th conditional on landing at
        `expected_offset + i`, in one round trip; return the offset each landed at
        (-1: not confirmed, it may still land later). Optional: a writer falls back to
        one `append` per record where a backend lacks it.

        Backends that can refuse (memory, SQLite) append all or nothing: LogConflict
        when the log's end is not `expected_offset`. Kafka produces them all and
        reports where each landed; readers drop those that landed elsewhere, and since
        offsets only grow, every record after a misplaced one is misplaced too.
        Blocks until every record is confirmed or failed, at most `timeout` seconds.
        Raises LogUnavailable (when no record was confirmed), LogConflict or RecordTooLarge.
        """

    def read(self, from_offset: int, max_records: int, timeout: float) -> LogBatch:
        """Records at offsets >= `from_offset`, in order, at most `max_records`, and the
        position reached (see `LogBatch`).

        Blocks up to `timeout` seconds while there are none; then returns no records,
        with `next_offset` at least `from_offset` (further if the log's end is known to
        lie beyond offsets that hold no record). Returns at once once closed.
        Raises LogUnavailable.
        """

    def rest(self) -> None:
        """Stop fetching ahead until the next `read`, which reads on from where the last
        one reached. Optional: the reader calls it, where a backend has it, while this
        node's writer applies its own records (see `store.reader`). Never blocks."""

    def end_offset(self, timeout: float | None = None) -> int:
        """The log's end: the offset the next appended record will have (in Kafka, the
        last stable offset, which is the high watermark unless a transaction is open).

        A reader whose position (`LogBatch.next_offset`) has reached it has caught up.
        Blocks for one round trip to the log, at most `timeout` seconds (None: the
        backend's own timeout). Raises LogUnavailable.
        """

    def close(self) -> None:
        """Release resources; wakes blocked readers."""
