"""The writer's append protocol on the in-memory log: catch-up and conditional append with
re-planning on conflict, the fence, the id watermark, and waiting for an election."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from store.cache import Cache
from store.memory_log import MemoryLog
from store.reader import LogReader
from store.records import ConfigKey, ConfigValue, LogRecord, SchemaKey, SchemaValue, encode_key, encode_value
from store.writer import REQUEST_STARTED, LogWriter, NotWriter, StoreTimeout


@dataclass
class FakeElection:
    """The election as the writer sees it; the tests decide its outcome."""

    leader: bool = True
    elsewhere: bool = False

    def is_leader(self) -> bool:
        return self.leader

    def leads_elsewhere(self) -> bool:
        return self.elsewhere


@dataclass
class Member:
    """One node's store: cache, reader and writer on a shared log."""

    log: MemoryLog
    election: FakeElection = field(default_factory=FakeElection)
    timeout: float = 5.0

    def __post_init__(self) -> None:
        self.cache = Cache()
        self.reader = LogReader(self.log, self.cache)
        self.reader.start()
        self.writer = LogWriter(self.log, self.cache, self.reader, self.election, timeout=self.timeout)

    def close(self) -> None:
        self.reader.stop()


@pytest.fixture
def log() -> Iterator[MemoryLog]:
    the_log = MemoryLog()
    yield the_log
    the_log.close()


@pytest.fixture
def members(log: MemoryLog) -> Iterator[list[Member]]:
    made: list[Member] = []
    yield made
    for member in made:
        member.close()


def member(members: list[Member], log: MemoryLog, **kw) -> Member:
    made = Member(log, **kw)
    members.append(made)
    return made


def config_record(level: str) -> tuple[ConfigKey, ConfigValue]:
    return ConfigKey(None), ConfigValue(level)


def test_a_write_is_applied_before_it_returns(log, members):
    node = member(members, log)
    node.writer.take_office("http://a:8081")
    node.writer.write(lambda: ([config_record("FULL")], None))
    assert node.cache.config(None) == ConfigValue("FULL"), "read-your-writes: applied on return"


def test_a_conflicting_append_is_replanned_against_the_new_state(log, members):
    node = member(members, log)
    node.writer.take_office("http://a:8081")
    seen_levels: list[str | None] = []

    def plan():
        current = node.cache.config(None)
        seen_levels.append(current.compatibility_level if current else None)
        if len(seen_levels) == 1:
            # Someone else appends between our catch-up and our append.
            key, value = config_record("NONE")
            log.append(encode_key(key), encode_value(value))
        return [config_record("FULL")], len(seen_levels)

    attempts = node.writer.write(plan)
    assert attempts == 2, "the conditional append must fail once and the write be planned again"
    assert seen_levels == [None, "NONE"], "the second plan must see what the other writer appended"
    assert node.cache.config(None).compatibility_level == "FULL"


def test_a_refused_plan_appends_nothing(log, members):
    node = member(members, log)
    node.writer.take_office("http://a:8081")
    end = log.end_offset()

    def plan():
        raise ValueError("refused by the domain rules")

    with pytest.raises(ValueError):
        node.writer.write(plan)
    assert log.end_offset() == end, "nothing may reach the log for a refused write"


def test_a_plan_with_nothing_to_append_needs_no_office(log, members):
    node = member(members, log, election=FakeElection(leader=False, elsewhere=True))
    assert node.writer.write(lambda: ([], "answered locally")) == "answered locally"


def test_a_successors_fence_stops_a_zombie_that_still_believes_it_leads(log, members):
    old = member(members, log)
    new = member(members, log)
    old.writer.take_office("http://old:8081")
    old.writer.write(lambda: ([config_record("FULL")], None))
    new.writer.take_office("http://new:8081")  # the old leader's election view is now stale
    assert old.reader.wait_until(log.end_offset(), 5)
    old.election.elsewhere = True  # as soon as it learns who leads
    end = log.end_offset()
    with pytest.raises(NotWriter):
        old.writer.write(lambda: ([config_record("NONE")], None))
    assert log.end_offset() == end, "a deposed leader must append nothing"
    assert not old.writer.in_office() and new.writer.in_office()


def test_the_watermark_covers_freed_ids_and_every_new_fence_carries_it(log, members):
    node = member(members, log)
    node.writer.take_office("http://a:8081")
    value = SchemaValue("s", 1, 41, '"string"')
    node.writer.write(lambda: ([(SchemaKey("s", 1), value)], None))
    _, watermark = node.writer.id_watermark([41])  # as a hard delete of id 41 appends it
    assert watermark.max_id == 41 and watermark.token == node.writer.latest_fence().token
    node.writer.write(lambda: ([node.writer.id_watermark([41])], None))
    successor = member(members, log)
    successor.writer.take_office("http://b:8081")
    assert successor.writer.latest_fence().max_id == 41, "every new fence carries the watermark"


def test_a_write_during_an_election_waits_for_its_outcome(log, members):
    node = member(members, log, election=FakeElection(leader=False))
    done = threading.Event()

    def write() -> None:
        node.writer.write(lambda: ([config_record("FULL")], None))
        done.set()

    writer_thread = threading.Thread(target=write)
    writer_thread.start()
    # Not a wait for something: the write must still be waiting, with no leader known,
    # 0.2 s after it began.
    time.sleep(0.2)
    assert not done.is_set(), "a write must wait while no leader is known"
    node.writer.take_office("http://a:8081")
    node.election.leader = True
    writer_thread.join(5)
    assert done.is_set(), "the waiting write must go through once this node is in office"
    assert node.cache.config(None).compatibility_level == "FULL"


def test_a_write_is_refused_at_once_while_another_node_leads(log, members):
    node = member(members, log, election=FakeElection(leader=False, elsewhere=True))
    started = time.monotonic()
    with pytest.raises(NotWriter):
        node.writer.write(lambda: ([config_record("FULL")], None))
    assert time.monotonic() - started < 1.0, "no wait when the write can be forwarded"


def test_a_write_gives_up_when_no_leader_is_elected_in_time(log, members):
    node = member(members, log, election=FakeElection(leader=False), timeout=0.3)
    with pytest.raises(NotWriter, match="no leader elected"):
        node.writer.write(lambda: ([config_record("FULL")], None))


def test_readiness_needs_the_log_read_and_a_writer_known(log, members):
    node = member(members, log, election=FakeElection(leader=False))
    assert node.writer.wait_caught_up(5)
    assert not node.writer.is_ready(), "no leader known: not ready for writes"
    node.election.elsewhere = True
    assert node.writer.is_ready(), "another node leads: writes are forwarded, so ready"


def test_a_record_larger_than_the_log_takes_is_refused_before_anything_is_appended(log, members):
    from store.log import RecordTooLarge

    log.max_record_bytes = 300
    node = member(members, log)
    node.writer.take_office("http://a:8081")
    end = log.end_offset()
    big = SchemaValue("s", 1, 1, '"' + "x" * 400 + '"')
    with pytest.raises(RecordTooLarge):
        node.writer.write(lambda: ([config_record("FULL"), (SchemaKey("s", 1), big)], None))
    assert log.end_offset() == end, "no record of a refused write may be appended, not even the small one"


class UnreachableEnd(MemoryLog):
    """A log whose end cannot be learnt (a node cut off from Kafka)."""

    def end_offset(self, timeout: float | None = None) -> int:
        from store.log import LogUnavailable

        raise LogUnavailable("cut off")


def test_a_follower_never_waits_on_the_log_it_may_not_reach(members):
    log = UnreachableEnd()
    node = member(members, log, election=FakeElection(leader=False, elsewhere=True))
    began = time.monotonic()
    assert node.writer.write(lambda: ([], "already registered")) == "already registered", \
        "what needs no append is answered from this node's cache"
    with pytest.raises(NotWriter):
        node.writer.write(lambda: ([config_record("FULL")], None))
    with pytest.raises(NotWriter):  # a refusal on a follower's (maybe stale) state is the leader's call
        node.writer.write(lambda: (_ for _ in ()).throw(ValueError("stale")))
    assert time.monotonic() - began < 1.0, "a follower forwards at once, whatever the log's state"


def test_a_write_queued_behind_a_stuck_one_gives_up_within_its_own_timeout(log, members):
    from store.writer import StoreTimeout

    node = member(members, log, timeout=0.5)
    node.writer.take_office("http://a:8081")
    release = threading.Event()
    holding = threading.Event()

    def stuck_plan():
        holding.set()
        release.wait(5)  # holds the write lock, as a write waiting on an unreachable log would
        return [], None

    stuck = threading.Thread(target=lambda: node.writer.write(stuck_plan))
    stuck.start()
    assert holding.wait(5), "the stuck write holds the lock (it is released only by the test)"
    began = time.monotonic()
    try:
        with pytest.raises(StoreTimeout):
            node.writer.write(lambda: ([config_record("FULL")], None))
        assert time.monotonic() - began < 1.5, "one deadline per write, counted from its call"
    finally:
        release.set()
        stuck.join(5)


def test_the_timeout_counts_from_when_the_request_came_in(log, members):
    """A write that already waited its whole timeout before reaching the writer (queued
    for a server thread) is refused at once and appends nothing; one with time left
    gets only what is left."""
    node = member(members, log, timeout=1.0)
    node.writer.take_office("http://a:8081")
    end = log.end_offset()
    token = REQUEST_STARTED.set(time.monotonic() - 1.5)
    try:
        with pytest.raises(StoreTimeout):
            node.writer.write(lambda: ([config_record("FULL")], None))
    finally:
        REQUEST_STARTED.reset(token)
    assert log.end_offset() == end, "nothing appended for a request out of time"
    token = REQUEST_STARTED.set(time.monotonic() - 0.5)
    try:
        node.writer.write(lambda: ([config_record("FULL")], None))
    finally:
        REQUEST_STARTED.reset(token)
    assert node.cache.config(None) == ConfigValue("FULL"), "with time left the write goes through"


def test_a_request_queued_past_its_timeout_is_answered_50002_without_a_write():
    """Through the HTTP layer: the bridge's receipt time reaches the writer."""
    from registry.http import asgi
    from tests.asgi_client import NodeClient

    class Earlier:
        @staticmethod
        def monotonic() -> float:
            return time.monotonic() - 3600  # as if the request had waited an hour for a thread

        def __getattr__(self, name: str):
            return getattr(time, name)

    with NodeClient() as client:
        end = client.node.log.end_offset()
        real = asgi.time
        asgi.time = Earlier()
        try:
            answer = client.post("/subjects/late/versions", {"schema": '"string"'})
        finally:
            asgi.time = real
        assert answer.status == 500 and answer.json()["error_code"] == 50002, answer.body
        assert client.node.log.end_offset() == end, "nothing written"
        assert client.post("/subjects/late/versions", {"schema": '"string"'}).status == 200


class CountingLog(MemoryLog):
    """A memory log that counts its appends, and whose first multi-record append may
    let a rival's record in first (`rival`), its own records then landing one place
    later than expected, as records produced to Kafka do after a zombie's."""

    def __init__(self) -> None:
        super().__init__()
        self.single_appends = 0
        self.many_appends: list[int] = []
        self.rival: tuple[bytes, bytes] | None = None

    def append(self, key, value, expected_offset=None, timeout=None):
        self.single_appends += 1
        return super().append(key, value, expected_offset, timeout)

    def append_many(self, records, expected_offset, timeout=None):
        self.many_appends.append(len(records))
        if self.rival is None:
            return super().append_many(records, expected_offset, timeout)
        rival, self.rival = self.rival, None
        super().append(*rival)
        offsets = []
        with self._changed:  # each carries the offset it expected: readers drop it
            for index, (key, value) in enumerate(records):
                self._records.append(LogRecord(self._next, key, value, expected_offset + index))
                offsets.append(self._next)
                self._next += 1
            self._changed.notify_all()
        return offsets


def schema_records(count: int, first_id: int = 1) -> list[tuple[SchemaKey, SchemaValue]]:
    return [(SchemaKey(f"s{n}", 1), SchemaValue(f"s{n}", 1, n, '"string"'))
            for n in range(first_id, first_id + count)]


def test_a_write_of_many_records_is_one_append():
    log = CountingLog()
    node = Member(log)
    try:
        node.writer.take_office("http://a:8081")
        before = log.single_appends
        node.writer.write(lambda: (schema_records(300), None))
        assert log.many_appends == [300], "300 records of one write: one transaction or one produce"
        assert log.single_appends == before, "no record of it may be appended on its own"
        assert [node.cache.schema_by_id(n) is not None for n in (1, 150, 300)] == [True] * 3, \
            "read-your-writes: every record applied on return"
    finally:
        node.close()
        log.close()


def test_a_write_whose_records_land_elsewhere_is_planned_again():
    log = CountingLog()
    node = Member(log)
    try:
        node.writer.take_office("http://a:8081")
        key, value = config_record("NONE")
        log.rival = (encode_key(key), encode_value(value))
        plans: list[str | None] = []

        def plan():
            current = node.cache.config(None)
            plans.append(current.compatibility_level if current else None)
            return schema_records(3), len(plans)

        assert node.writer.write(plan) == 2, "records that landed elsewhere: the write is planned again"
        assert plans == [None, "NONE"], "the second plan sees the rival's record"
        assert log.many_appends == [3, 3]
        assert node.cache.schema_by_id(3) is not None, "the second attempt landed and was applied"
    finally:
        node.close()
        log.close()
