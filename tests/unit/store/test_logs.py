"""The Log contract, for the in-memory and embedded SQLite backends."""
from __future__ import annotations

import threading
import time

import pytest

from store.memory_log import MemoryLog
from store.sqlite_log import SqliteLog


@pytest.fixture(params=["memory", "sqlite"])
def log(request, tmp_path):
    the_log = MemoryLog() if request.param == "memory" else SqliteLog(str(tmp_path / "log.sqlite"))
    yield the_log
    the_log.close()


def test_append_returns_increasing_offsets_and_read_returns_them_in_order(log):
    offsets = [log.append(b"k%d" % i, b"v%d" % i) for i in range(5)]
    assert offsets == sorted(offsets) and len(set(offsets)) == 5
    assert log.end_offset() == offsets[-1] + 1
    records = log.read(0, 100, 0).records
    assert [r.key for r in records] == [b"k0", b"k1", b"k2", b"k3", b"k4"]
    assert log.read(offsets[3], 1, 0).records[0].value == b"v3", "read starts at the requested offset"


def test_read_blocks_until_an_append_wakes_it(log):
    start = log.end_offset()
    threading.Timer(0.1, lambda: log.append(b"late", b"v")).start()
    began = time.monotonic()
    records = log.read(start, 10, 5.0).records
    assert [r.key for r in records] == [b"late"]
    assert time.monotonic() - began < 2.0, "the append must wake the reader, not the timeout"


def test_read_with_nothing_new_returns_empty_after_timeout(log):
    end = log.end_offset()
    batch = log.read(end, 10, 0.05)
    assert batch.records == [] and batch.next_offset == end, "an empty read stays at the end"


def test_sqlite_compaction_keeps_latest_value_and_offsets_never_go_back(tmp_path):
    log = SqliteLog(str(tmp_path / "log.sqlite"))
    log.append(b"a", b"1")
    last = log.append(b"b", b"1")
    again = log.append(b"b", b"2")  # compacts away the newest row
    assert again == last + 1, "an offset must never be reused, even when compaction removes the newest row"
    assert [(r.key, r.value) for r in log.read(0, 10, 0).records] == [(b"a", b"1"), (b"b", b"2")]
    log.close()


def test_sqlite_tombstone_keeps_the_value_it_deletes_so_replay_sees_the_id(tmp_path):
    log = SqliteLog(str(tmp_path / "log.sqlite"))
    log.append(b"a", b"1")
    log.append(b"a", None)
    log.append(b"a", None)
    assert [(r.key, r.value) for r in log.read(0, 10, 0).records] == [(b"a", b"1"), (b"a", None)]
    log.close()


def test_sqlite_log_is_durable_across_reopen(tmp_path):
    path = str(tmp_path / "log.sqlite")
    log = SqliteLog(path)
    for i in range(3):
        log.append(b"k%d" % i, b"v")
    log.close()
    reopened = SqliteLog(path)
    assert [r.key for r in reopened.read(0, 10, 0).records] == [b"k0", b"k1", b"k2"]
    assert reopened.append(b"next", b"v") == 3
    reopened.close()


def test_read_reports_the_position_it_reached(log):
    log.append(b"a", b"1")
    log.append(b"b", b"1")
    log.append(b"a", b"2")  # SQLite compacts a@0 away at once: offsets become sparse
    end = log.end_offset()
    first = log.read(0, 1, 0)
    assert first.next_offset == first.records[0].offset + 1, "a full batch stops after its last record"
    rest = log.read(first.next_offset, 100, 0)
    assert rest.next_offset == end, "a batch holding everything left reaches the end"
    assert log.read(end, 100, 0).next_offset == end, "an empty read at the end stays there"


def test_append_many_lands_all_records_in_order_or_none(log):
    log.append(b"first", b"v")
    end = log.end_offset()
    assert log.append_many([(b"a", b"1"), (b"b", b"2"), (b"a", None)], end) == [end, end + 1, end + 2], \
        "one call, consecutive offsets from the expected one"
    assert [r.key for r in log.read(end, 10, 0).records][-1] == b"a", "order kept, tombstone last"
    assert log.end_offset() == end + 3
    from store.log import LogConflict
    with pytest.raises(LogConflict):
        log.append_many([(b"c", b"3"), (b"d", b"4")], end)  # stale: the end moved
    assert log.end_offset() == end + 3, "a refused batch appends none of its records"
