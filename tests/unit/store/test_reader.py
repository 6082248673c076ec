"""The reader: applies records in order, drops misplaced ones, knows when it has caught up."""
from __future__ import annotations

import time

import pytest

import store.reader as reader_module
from store.cache import Cache
from store.memory_log import MemoryLog
from store.reader import LogReader
from store.records import LogRecord, SchemaKey, SchemaValue, encode_key, encode_value


def schema_record(subject: str, schema_id: int) -> tuple[bytes, bytes | None]:
    return (encode_key(SchemaKey(subject, 1)),
            encode_value(SchemaValue(subject, 1, schema_id, f'"{subject}"')))


class PlacingLog(MemoryLog):
    """A memory log that can also hold a record its writer expected elsewhere, as a
    Kafka topic does after a lost conditional append."""

    def append_expecting(self, key: bytes, value: bytes | None, expected_offset: int) -> int:
        with self._changed:
            offset = self._next
            self._records.append(LogRecord(offset, key, value, expected_offset))
            self._next += 1
            self._changed.notify_all()
            return offset


def run_reader(log: MemoryLog) -> tuple[LogReader, Cache]:
    cache = Cache()
    reader = LogReader(log, cache)
    reader.start()
    return reader, cache


def test_reader_catches_up_when_compaction_removed_the_records_before_the_end():
    log = MemoryLog()
    log.append(*schema_record("a", 1))
    log.append(b'{"keytype":"NOOP","magic":0}', None)
    log.append(b'{"keytype":"NOOP","magic":0}', None)  # tombstones: compaction drops them
    log.compact()
    reader, cache = run_reader(log)
    try:
        assert reader.catch_up(5), "a log whose last offsets hold no record must still be caught up with"
        assert reader.next_offset == log.end_offset() == 3
        assert cache.schema_by_id(1) is not None
    finally:
        reader.stop()


def test_reader_drops_records_that_landed_where_their_writer_did_not_expect():
    log = PlacingLog()
    log.append(*schema_record("a", 1))
    log.append_expecting(*schema_record("b", 2), expected_offset=1)  # lands at 1: kept
    log.append_expecting(*schema_record("c", 3), expected_offset=1)  # lands at 2: dropped
    reader, cache = run_reader(log)
    try:
        assert reader.catch_up(5)
        assert cache.schema_by_id(2) is not None, "a record at the offset it expected is applied"
        assert cache.schema_by_id(3) is None, "a misplaced record must not reach the cache"
        assert cache.subjects() == ["a", "b"] and reader.dropped == 1
        assert reader.next_offset == 3, "a dropped record still moves the reader past it"
    finally:
        reader.stop()


class SequentialLog(MemoryLog):
    """A memory log read by one thread only, as Kafka's consumer is (no waiting writer
    applies records by reading them itself), which records where each read started."""

    concurrent_reads = False

    def __init__(self) -> None:
        super().__init__()
        self.read_from: list[int] = []

    def read(self, from_offset, max_records, timeout):
        self.read_from.append(from_offset)
        return super().read(from_offset, max_records, timeout)


def landed(log: MemoryLog, *records: tuple[bytes, bytes | None]) -> list[LogRecord]:
    """Append `records` where the log ends, as a writer's conditional append lands them."""
    offsets = log.append_many(list(records), log.end_offset())
    return [LogRecord(offset, key, value, offset) for offset, (key, value) in zip(offsets, records)]


def test_a_writers_landed_records_are_applied_at_once_and_skipped_when_read():
    log = SequentialLog()
    cache = Cache()
    reader = LogReader(log, cache)
    mine = landed(log, schema_record("a", 1), schema_record("b", 2))
    assert reader.apply_landed(mine, 2), "nothing comes before them: the writer applies them"
    assert reader.next_offset == 2 and cache.subjects() == ["a", "b"]
    assert reader.wait_until(2, 0), "read-your-writes holds without the reader thread"
    log.append(*schema_record("c", 3))  # someone else's, after them
    reader.start()
    try:
        assert reader.wait_until(3, 5)
        assert cache.subjects() == ["a", "b", "c"]
        assert reader.skipped == reader.dropped == 0
        assert log.read_from[0] == 0, \
            "the thread reads on from where its own reads reached, not from where the writer applied to"
    finally:
        reader.stop()
    fresh = Cache()
    replayed = LogReader(log, fresh)
    replayed.start()
    try:
        assert replayed.wait_until(3, 5)
    finally:
        replayed.stop()
    assert fresh.fingerprint() == cache.fingerprint(), "applied by the writer or read back: the same state"


def test_landed_records_behind_unapplied_ones_are_left_to_the_reader():
    log = SequentialLog()
    cache = Cache()
    reader = LogReader(log, cache)
    log.append(*schema_record("a", 1))  # not applied yet
    mine = landed(log, schema_record("b", 2))
    assert not reader.apply_landed(mine, 2), "a record before them is not applied: order first"
    assert reader.next_offset == 0 and cache.subjects() == []
    reader.start()
    try:
        assert reader.wait_until(2, 5) and cache.subjects() == ["a", "b"]
    finally:
        reader.stop()


class RestingLog(SequentialLog):
    """A sequential log that can stop fetching until its next read, as `KafkaLog.rest`."""

    def __init__(self) -> None:
        super().__init__()
        self.rests = 0

    def rest(self) -> None:
        self.rests += 1


def until(condition, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.mark.parametrize("stops_fetching", [True, False], ids=["log that fetches ahead", "log read on demand"])
def test_a_reader_that_reads_back_only_records_its_writer_applied_rests_until_a_waiter_needs_it(
        monkeypatch: pytest.MonkeyPatch, stops_fetching: bool) -> None:
    monkeypatch.setattr(reader_module, "_REST_SECONDS", 60.0)
    log = RestingLog() if stops_fetching else SequentialLog()
    cache = Cache()
    reader = LogReader(log, cache)
    assert reader.apply_landed(landed(log, schema_record("a", 1), schema_record("b", 2)), 2)
    reader.start()
    try:
        assert until(lambda: len(log.read_from) == 1)
        # Not only a wait for something: besides the rest below, no second read may come,
        # and a reader that failed to rest would have read again within 0.1 s.
        time.sleep(0.1)
        if stops_fetching:
            assert log.rests == 1, "it read back only what the writer applied: it stops the fetching"
        reads = len(log.read_from)
        assert reads == 1, "one read brought back what the writer applied; then the thread rests"
        log.append(*schema_record("c", 3))  # someone else's, which nobody waits for yet
        time.sleep(0.3)  # not a wait for something: no read may come while it rests
        assert len(log.read_from) == reads and reader.next_offset == 2, "resting, it does not read"
        assert reader.wait_until(3, 5), "a waiter for a record not applied ends the rest at once"
        assert cache.subjects() == ["a", "b", "c"]
        assert log.read_from[reads] == 2, "and it reads on from where its reads reached"
    finally:
        reader.stop()


def test_a_resting_reader_reads_on_after_its_rest_without_a_waiter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_module, "_REST_SECONDS", 0.2)
    log = RestingLog()
    cache = Cache()
    reader = LogReader(log, cache)
    assert reader.apply_landed(landed(log, schema_record("a", 1)), 1)
    reader.start()
    try:
        assert until(lambda: log.rests >= 1)
        log.append(*schema_record("b", 2))  # someone else's
        assert until(lambda: reader.next_offset == 2), "a rest ends by itself: the record is applied"
        assert cache.subjects() == ["a", "b"]
    finally:
        reader.stop()


def test_a_reader_whose_reads_hold_records_not_applied_yet_never_rests() -> None:
    log = RestingLog()
    for i in range(3):
        log.append(*schema_record(f"s{i}", i + 1))
    reader, cache = run_reader(log)
    try:
        assert reader.wait_until(3, 5)
        log.append(*schema_record("later", 9))
        assert reader.wait_until(4, 5)
        assert log.rests == 0, "a follower's reader (no writer applies its records) reads without rest"
    finally:
        reader.stop()
