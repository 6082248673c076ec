"""A record dropped as misplaced must not, once compacted, hide the valid record before it.

Kafka cannot refuse a deposed leader's late append; readers drop it (it landed at
another offset than its writer expected), but it is still its key's newest record, and
compaction keeps only the newest. The leader re-states such keys.
"""
from __future__ import annotations

import json
import time

import pytest

from registry import leader_gate
from registry.node import build_node
from registry.service import NewSchema, RegisterRequest
from registry.settings import load_settings
from store.cache import Cache
from store.log import LogUnavailable
from store.memory_log import MemoryLog
from store.reader import LogReader
from store.records import LogRecord, SchemaKey, SchemaValue, encode_key, encode_value
from tests.unit.polling import wait_until


def schema(name: str) -> str:
    return json.dumps({"type": "record", "name": name, "fields": [{"name": "a", "type": "int"}]})


def zombie_append(log: MemoryLog, key: SchemaKey, value: SchemaValue) -> None:
    """What Kafka would hold after a deposed leader's late append: a record at the log's
    end that expected an earlier offset (MemoryLog itself refuses such appends)."""
    with log._changed:
        offset = log._next
        log._records.append(LogRecord(offset, encode_key(key), encode_value(value), expected_offset=offset - 1))
        log._next += 1
        log._changed.notify_all()


def replay(log: MemoryLog) -> Cache:
    cache = Cache()
    reader = LogReader(log, cache)
    reader.start()
    try:
        assert reader.catch_up(5)
    finally:
        reader.stop()
    return cache


def test_leader_restates_a_key_whose_newest_record_was_dropped():
    log = MemoryLog()
    node = build_node(load_settings(environ={}), log)
    try:
        assert node.writer.wait_ready(5)
        valid = node.service.register("s", RegisterRequest(NewSchema(schema("Valid"))))
        key = SchemaKey("s", valid.version)
        zombie_append(log, key, SchemaValue("s", valid.version, 999, schema("Zombie")))
        assert node.reader.wait_until(log.end_offset(), 5)
        assert node.reader.misplaced_latest, "the reader must remember the dropped record's key"

        node.service.register("other", RegisterRequest(NewSchema(schema("Other"))))  # the leader writes again

        assert not node.reader.misplaced_latest, "the leader's next write must re-state the key"
        log.compact()
        replayed = replay(log)
        assert replayed.version("s", valid.version) is not None, \
            "after compaction the valid registration must survive replay"
        assert replayed.version("s", valid.version).id == valid.id
        assert replayed.fingerprint() == node.cache.fingerprint(), "a replay must equal the live cache"
    finally:
        node.close()


def test_without_restating_compaction_would_lose_the_valid_record():
    # The hazard itself, so that the test above means something.
    log = MemoryLog()
    node = build_node(load_settings(environ={}), log)
    try:
        assert node.writer.wait_ready(5)
        valid = node.service.register("s", RegisterRequest(NewSchema(schema("Valid"))))
        zombie_append(log, SchemaKey("s", valid.version), SchemaValue("s", valid.version, 999, schema("Zombie")))
        assert node.reader.wait_until(log.end_offset(), 5)
    finally:
        node.close()
    log.compact()
    assert replay(log).version("s", valid.version) is None


def test_an_idle_leader_restates_dropped_records_without_any_write():
    log = MemoryLog()
    node = build_node(load_settings(environ={}), log)  # a single node: the static elector leads
    try:
        assert node.writer.wait_ready(5)
        valid = node.service.register("s", RegisterRequest(NewSchema(schema("Valid"))))
        zombie_append(log, SchemaKey("s", valid.version), SchemaValue("s", valid.version, 999, schema("Zombie")))
        wait_until(lambda: not node.reader.misplaced_latest and node.reader.next_offset >= log.end_offset(),
                   "an idle leader re-states the key", timeout=5)
        log.compact()
        assert replay(log).version("s", valid.version).id == valid.id
    finally:
        node.close()


def test_a_hard_deleted_highest_id_is_not_reused_after_compaction():
    log = MemoryLog()
    node = build_node(load_settings(environ={}), log)
    try:
        assert node.writer.wait_ready(5)
        node.service.register("keep", RegisterRequest(NewSchema(schema("Keep"))))
        gone = node.service.register("gone", RegisterRequest(NewSchema(schema("Gone"))))
        node.service.delete_subject("gone")
        node.service.delete_subject("gone", permanent=True)
    finally:
        node.close()
    log.compact()  # the deleted schema's records and tombstones are gone now
    assert replay(log).max_id == gone.id, "the id watermark must survive compaction"
    again = build_node(load_settings(environ={}), log)
    try:
        assert again.writer.wait_ready(5)
        fresh = again.service.register("new", RegisterRequest(NewSchema(schema("New"))))
        assert fresh.id > gone.id, "an id must never name a second schema, even after compaction"
    finally:
        again.close()


def test_a_new_leaders_fence_keeps_the_id_watermark_through_compaction():
    # A new term's fence replaces the previous NOOP record under compaction; if it did
    # not carry the watermark, a hard-deleted highest id could be handed out again.
    log = MemoryLog()
    node = build_node(load_settings(environ={}), log)
    try:
        assert node.writer.wait_ready(5)
        gone = node.service.register("gone", RegisterRequest(NewSchema(schema("Gone"))))
        node.service.delete_subject("gone")
        node.service.delete_subject("gone", permanent=True)
    finally:
        node.close()
    log.compact()
    successor = build_node(load_settings(environ={}), log)  # takes office: appends its own fence
    try:
        assert successor.writer.wait_ready(5)
        wait_until(successor.writer.in_office, "the static node takes office", timeout=5)
        assert successor.writer.latest_fence().max_id == gone.id, "the new fence must carry the watermark"
    finally:
        successor.close()
    log.compact()  # only the successor's fence is left under the NOOP key
    assert replay(log).max_id == gone.id, "the watermark must survive a change of leader and compaction"


class _StallingLog(MemoryLog):
    """A MemoryLog that delays every append that lands by `delay` seconds, and whose
    appends of `stalled_key` wait out their timeout and fail, as Kafka's do when it
    cannot acknowledge a record in time."""

    def __init__(self) -> None:
        super().__init__()
        self.delay = 0.0
        self.stalled_key: bytes | None = None

    def append(self, key: bytes, value: bytes | None, expected_offset: int | None = None,
               timeout: float | None = None) -> int:
        if key == self.stalled_key:
            time.sleep(timeout or 0.0)
            raise LogUnavailable("not acknowledged in time")
        if expected_offset is None or expected_offset == self._next:  # a conflict is refused at once
            time.sleep(self.delay)
        return super().append(key, value, expected_offset, timeout)

    def append_many(self, records: list[tuple[bytes, bytes | None]], expected_offset: int,
                    timeout: float | None = None) -> list[int]:
        if expected_offset == self._next:
            time.sleep(self.delay)
        return super().append_many(records, expected_offset, timeout)


@pytest.mark.parametrize("group_commit", ["true", "false"])
def test_a_repair_after_a_write_neither_delays_its_answer_past_its_timeout_nor_fails_it(group_commit, monkeypatch):
    monkeypatch.setattr(leader_gate, "_REPAIR_EVERY_SECONDS", 3600.0)  # only the write repairs
    log = _StallingLog()
    node = build_node(load_settings(environ={"SCHEMA_REGISTRY_KAFKASTORE_TIMEOUT_MS": "1000",
                                             "SCHEMA_REGISTRY_GROUP_COMMIT_ENABLE": group_commit}), log)
    try:
        assert node.writer.wait_ready(5)
        valid = node.service.register("s", RegisterRequest(NewSchema(schema("Valid"))))
        key = SchemaKey("s", valid.version)
        log.stalled_key = encode_key(key)  # the re-statement the next write attempts
        zombie_append(log, key, SchemaValue("s", valid.version, 999, schema("Zombie")))
        assert node.reader.wait_until(log.end_offset(), 5)
        assert node.reader.misplaced_latest
        log.delay = 0.6  # the write itself takes 0.6 s of its 1 s

        started = time.monotonic()
        other = node.service.register("other", RegisterRequest(NewSchema(schema("Other"))))
        took = time.monotonic() - started

        assert other.id > valid.id, "the write is in: it must be answered as done"
        assert took < 1.0 + 0.4, f"answered {took:.2f} s after it was sent, past its 1 s timeout"
        assert node.reader.misplaced_latest, "the repair could not finish: it is left to the repair loop"
        log.stalled_key, log.delay = None, 0.0
        assert node.writer.repair_misplaced() == 1
        assert not node.reader.misplaced_latest
    finally:
        node.close()
