"""Group commit: concurrent registrations planned in order and appended together, on the
in-memory log. Each test holds the first batch's append open (a gate) so that the
writes behind it queue up and form the next batch, as they do under load."""
from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from registry.node import build_node
from registry.service import ConfigUpdate, NewSchema, RegisterRequest
from registry.settings import load_settings
from store.group_commit import _Queued
from store.log import LogBatch, LogConflict
from store.memory_log import MemoryLog
from store.records import ConfigKey, ConfigValue, LogRecord, SchemaValue, encode_key, encode_value
from store.writer import StoreTimeout


class GatedLog(MemoryLog):
    """A memory log whose first grouped append waits for the test to open the gate, and
    which can play a trick on one later grouped append (`trick`)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.appends: list[int] = []  # records per append_many call
        self.trick: Callable[[list[tuple[bytes, bytes | None]], int], list[int] | None] | None = None

    def append_many(self, records, expected_offset, timeout=None):
        self.appends.append(len(records))
        if len(self.appends) == 1:
            assert self.gate.wait(10), "the test never opened the gate"
        elif self.trick is not None:
            trick, self.trick = self.trick, None
            landed = trick(records, expected_offset)
            if landed is not None:
                return landed
        return super().append_many(records, expected_offset, timeout)

    def put(self, record: LogRecord) -> None:
        """Append a record as it is, with the expectation it carries (a Kafka writer's)."""
        with self._changed:
            self._records.append(LogRecord(self._next, record.key, record.value, record.expected_offset))
            self._next += 1
            self._changed.notify_all()


def schema(name: str) -> str:
    return json.dumps({"type": "record", "name": name, "fields": [{"name": "id", "type": "long"}]})


@pytest.fixture
def log() -> Iterator[GatedLog]:
    the_log = GatedLog()
    yield the_log
    the_log.gate.set()
    the_log.close()


def start(log: GatedLog, timeout_ms: int = 5000):
    node = build_node(load_settings(environ={"SCHEMA_REGISTRY_KAFKASTORE_TIMEOUT_MS": str(timeout_ms),
                                             "SCHEMA_REGISTRY_GROUP_COMMIT_ENABLE": "true"}), log)
    assert node.writer.wait_ready(5), "the node must take office on its own log"
    return node


def register_all(node, log: GatedLog, writes: list[tuple[str, str | RegisterRequest]]) -> list[object]:
    """Register `writes` concurrently: the first alone behind the gate, the rest queued
    behind it; returns each write's result (a SchemaValue or the exception it raised),
    each checked for read-your-writes as it returned."""
    results: list[object] = [None] * len(writes)

    def one(index: int) -> None:
        subject, text = writes[index]
        request = text if isinstance(text, RegisterRequest) else RegisterRequest(NewSchema(text))
        try:
            value = node.service.register(subject, request)
            # Read-your-writes: applied to this node's cache before the call returned.
            assert node.cache.version(subject, value.version) == value
            results[index] = value
        except Exception as exc:  # noqa: BLE001 - handed to the test to assert on
            results[index] = exc

    threads = [threading.Thread(target=one, args=(0,))]
    threads[0].start()
    wait_for(lambda: len(log.appends) == 1, "the first write reaches the log")
    threads += [threading.Thread(target=one, args=(i,)) for i in range(1, len(writes))]
    for thread in threads[1:]:
        thread.start()
    wait_for(lambda: len(node.writer._queue) == len(writes) - 1, "the other writes queue behind it")
    log.gate.set()
    for thread in threads:
        thread.join(10)
    return results


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.005)


def test_queued_registrations_are_appended_together_with_distinct_ids(log):
    node = start(log)
    try:
        writes = [(f"s{i}", schema(f"R{i}")) for i in range(8)]
        results = register_all(node, log, writes)
        assert all(isinstance(r, SchemaValue) for r in results), f"every write succeeds: {results}"
        assert sorted(r.id for r in results) == list(range(1, 9)), \
            "ids allocated in one batch must count the batch's earlier writes: distinct and dense"
        assert log.appends == [1, 7], "the seven queued writes must share one append"
    finally:
        node.close()


def test_the_same_content_in_two_subjects_of_one_batch_shares_its_id(log):
    node = start(log)
    try:
        results = register_all(node, log, [("first", schema("A")), ("x", schema("B")), ("y", schema("B"))])
        assert results[1].id == results[2].id, "one content, one id, even when both are pending together"
        assert results[0].id != results[1].id
        assert log.appends == [1, 2], "different subjects with one content need no second batch"
    finally:
        node.close()


def test_two_versions_of_one_subject_go_in_successive_batches(log):
    node = start(log)
    try:
        v2 = json.dumps({"type": "record", "name": "S", "fields": [
            {"name": "id", "type": "long"}, {"name": "n", "type": ["null", "long"], "default": None}]})
        results = register_all(node, log, [("other", schema("O")), ("s", schema("S")), ("s", v2)])
        assert [r.version for r in results[1:]] == [1, 2], \
            "the second write of a subject must be planned on the state the first leaves"
        assert log.appends == [1, 1, 1], "a key collision defers the later write to the next batch"
    finally:
        node.close()


def test_imports_share_a_batch_and_an_id_never_names_two_contents(log):
    from registry import errors
    node = start(log)
    try:
        log.gate.set()
        node.service.set_mode(None, "IMPORT")
        log.gate.clear()
        log.appends.clear()

        def imported(name: str, schema_id: int, version: int | None = 1) -> RegisterRequest:
            return RegisterRequest(NewSchema(schema(name)), schema_id=schema_id, version=version)
        results = register_all(node, log, [
            ("a", imported("A", 10)),
            ("b", imported("B", 11)), ("c", imported("C", 12)),
            ("d", imported("D", 11)),  # id 11 is pending for another content
            ("e", imported("B", 11)),  # the same content under another subject keeps its id
            ("b", imported("B2", 13, 2)),  # an explicit version of a pending subject
            ("c", imported("C2", 14, None)),  # the next version after a pending one: later
        ])
        assert [r.id for r in results if isinstance(r, SchemaValue)] == [10, 11, 12, 11, 13, 14]
        assert isinstance(results[3], errors.OperationNotPermitted), results[3]
        assert (results[5].version, results[6].version) == (2, 2)
        assert log.appends == [1, 4, 1], "imports are appended together; one planned after its subject's"
        assert json.loads(node.cache.schema_by_id(11, ".").schema) == json.loads(schema("B"))
    finally:
        node.close()


def test_a_foreign_append_before_the_batch_makes_every_write_plan_again(log):
    node = start(log)
    try:
        def foreign_first(records, expected):
            log.append(encode_key(ConfigKey("elsewhere")), encode_value(ConfigValue("NONE")))
            return None  # the batch's own append then finds the end moved: LogConflict

        log.trick = foreign_first
        results = register_all(node, log, [(f"s{i}", schema(f"R{i}")) for i in range(4)])
        assert all(isinstance(r, SchemaValue) for r in results), f"conflicts are re-planned: {results}"
        assert sorted(r.id for r in results) == [1, 2, 3, 4]
        assert node.cache.config("elsewhere").compatibility_level == "NONE", "the foreign record counts"
        assert log.appends == [1, 3, 3], "the refused batch is planned and appended again"
    finally:
        node.close()


def test_records_misplaced_inside_a_batch_are_dropped_and_their_writes_planned_again(log):
    node = start(log)
    try:
        def interleaved(records, expected):
            # As Kafka may do: the batch's first record lands in place, a foreign record
            # takes the next offset, and the rest land one further than they expect.
            raw = [LogRecord(0, k, v, expected + i) for i, (k, v) in enumerate(records)]
            log.put(raw[0])
            log.append(encode_key(ConfigKey("elsewhere")), encode_value(ConfigValue("NONE")))
            for record in raw[1:]:
                log.put(record)
            return [expected] + [expected + 1 + i for i in range(1, len(records))]

        log.trick = interleaved
        results = register_all(node, log, [(f"s{i}", schema(f"R{i}")) for i in range(4)])
        assert all(isinstance(r, SchemaValue) for r in results), f"misplaced writes are re-planned: {results}"
        assert node.reader.dropped == 2, "every record after the foreign one is misplaced: readers drop it"
        assert sorted(r.id for r in results) == [1, 2, 3, 4], "dropped records take no id"
        assert all(len(node.cache.versions(f"s{i}")) == 1 for i in range(4)), "each subject once"
    finally:
        node.close()


def test_a_queued_write_gives_up_within_its_own_timeout_and_appends_nothing(log):
    node = start(log, timeout_ms=500)
    try:
        first = threading.Thread(target=lambda: node.service.register("a", RegisterRequest(NewSchema(schema("A")))))
        first.start()
        wait_for(lambda: len(log.appends) == 1, "the first write reaches the log")
        began = time.monotonic()
        with pytest.raises(StoreTimeout):
            node.service.register("b", RegisterRequest(NewSchema(schema("B"))))
        assert time.monotonic() - began < 1.5, "one deadline per write, counted from its call"
        log.gate.set()
        first.join(5)
        assert node.cache.versions("b") == [], "a write that gave up while queued must never be appended"
        assert log.appends == [1], "nothing else reached the log"
    finally:
        node.close()


def test_a_failing_plan_refuses_only_its_own_write(log):
    node = start(log)
    try:
        from registry import errors
        node.service.set_compatibility("strict", "FULL")
        log.gate.set()
        node.service.register("strict", RegisterRequest(NewSchema(schema("S"))))
        log.gate.clear()
        log.appends.clear()
        breaking = json.dumps({"type": "record", "name": "S", "fields": [{"name": "x", "type": "int"}]})
        results = register_all(node, log, [("a", schema("A")), ("strict", breaking), ("b", schema("B"))])
        assert isinstance(results[1], errors.IncompatibleSchema), "the incompatible write is refused"
        assert isinstance(results[0], SchemaValue) and isinstance(results[2], SchemaValue), \
            "the others in its batch are not affected"
        assert log.appends == [1, 1], "the refused write appends nothing"
    finally:
        node.close()


class PipelinedLog(MemoryLog):
    """A memory log that appends as Kafka does, wherever the end is, with each record's
    expected offset; the acknowledgement of each grouped append waits for the test."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: list[tuple[int, int]] = []  # (expected offset, records) per grouped append
        self.acks: list[threading.Event] = []
        self.before_next: Callable[[], None] | None = None  # runs before the next grouped append lands

    def start_append_many(self, records, expected_offset):
        if self.before_next is not None:
            trick, self.before_next = self.before_next, None
            trick()
        with self._changed:
            landed = []
            for index, (key, value) in enumerate(records):
                self._records.append(LogRecord(self._next, key, value, expected_offset + index))
                landed.append(self._next)
                self._next += 1
            self._changed.notify_all()
            self.starts.append((expected_offset, len(records)))
            ack = threading.Event()
            self.acks.append(ack)

        def acknowledged(timeout):
            assert ack.wait(10), "the test never acknowledged the append"
            return landed
        return acknowledged


def acknowledge_until_done(log: PipelinedLog, threads: list[threading.Thread]) -> None:
    """Acknowledge every grouped append, those to come too, until `threads` end."""
    deadline = time.monotonic() + 10
    while any(t.is_alive() for t in threads):
        assert time.monotonic() < deadline, "the writes did not all return"
        for ack in list(log.acks):
            ack.set()
        time.sleep(0.005)


def test_a_batch_is_planned_and_produced_while_the_previous_one_awaits_its_acknowledgement():
    log = PipelinedLog()
    node = start(log)
    try:
        results: dict[str, object] = {}

        def one(subject: str) -> None:
            value = node.service.register(subject, RegisterRequest(NewSchema(schema(subject.upper()))))
            assert node.cache.version(subject, value.version) == value, "read-your-writes"
            results[subject] = value

        first = threading.Thread(target=one, args=("a",))
        first.start()
        wait_for(lambda: len(log.starts) == 1, "the first batch is produced")
        others = [threading.Thread(target=one, args=(s,)) for s in ("b", "c", "d")]
        for thread in others:
            thread.start()
        wait_for(lambda: len(log.starts) >= 2, "a second batch is produced before the first is acknowledged")
        assert log.starts[1][0] == log.starts[0][0] + log.starts[0][1], \
            "the second batch expects to land right after the first, which it was planned on"
        acknowledge_until_done(log, [first, *others])
        assert sorted(v.id for v in results.values()) == [1, 2, 3, 4], \
            "ids planned on records still in flight are distinct"
        assert node.reader.dropped == 0, "nothing was misplaced"
    finally:
        for ack in log.acks:
            ack.set()
        node.close()
        log.close()


def test_when_a_batch_in_flight_is_displaced_the_batches_planned_on_it_are_replanned():
    log = PipelinedLog()
    node = start(log)
    try:
        results: dict[str, object] = {}

        def one(subject: str) -> None:
            results[subject] = node.service.register(subject, RegisterRequest(NewSchema(schema(subject.upper()))))

        def foreign() -> None:  # lands just before the first batch: every batch after it is misplaced
            log.append(encode_key(ConfigKey("elsewhere")), encode_value(ConfigValue("NONE")))

        log.before_next = foreign
        threads = [threading.Thread(target=one, args=(s,)) for s in ("a", "b", "c", "d")]
        threads[0].start()
        wait_for(lambda: len(log.starts) == 1, "the first batch is produced")
        for thread in threads[1:]:
            thread.start()
        acknowledge_until_done(log, threads)
        assert all(isinstance(v, SchemaValue) for v in results.values()) and len(results) == 4, results
        assert node.reader.dropped >= 1, "the displaced records were dropped by the reader"
        assert sorted(v.id for v in results.values()) == [1, 2, 3, 4], "dropped records take no id"
        assert all(len(node.cache.versions(s)) == 1 for s in "abcd"), "each write applied once"
        assert node.cache.config("elsewhere").compatibility_level == "NONE"
    finally:
        for ack in log.acks:
            ack.set()
        node.close()
        log.close()


def test_a_write_needing_no_record_is_answered_without_waiting_for_the_batch_it_planned():
    """The thread that plans a batch answers its own write: when that write needs no
    record (the schema is registered already), it must not wait for the others' round
    trip, let alone until their deadlines, which come after its own."""
    log = PipelinedLog()
    node = start(log, timeout_ms=3000)
    try:
        registered = threading.Thread(
            target=lambda: node.service.register("pre", RegisterRequest(NewSchema(schema("P")))))
        registered.start()
        acknowledge_until_done(log, [registered])
        assert [v.version for v in node.cache.versions("pre")] == [1]
        # Another writer's write, queued first (its thread stands aside, as one does while
        # another thread plans the batch): the batch this thread plans holds it.
        other = _Queued(lambda pending: ([(ConfigKey("other"), ConfigValue("NONE"))], "other's"),
                        time.monotonic() + 3)
        node.writer._queue.append(other)
        began = time.monotonic()
        value = node.service.register("pre", RegisterRequest(NewSchema(schema("P"))))
        answered = time.monotonic() - began
        assert value.version == 1 and len(log.starts) == 2, "the other write's batch was produced"
        assert answered < 1.0, f"answered after {answered:.2f} s, waiting on the other write's acknowledgement"
        assert other.kind is None, "the other write is still unacknowledged"
        log.acks[-1].set()
        wait_for(lambda: other.kind is not None, "the batch lands once acknowledged")
        assert other.result == "other's" and other.error is None
        wait_for(lambda: node.cache.config("other") is not None, "and is applied")
    finally:
        for ack in log.acks:
            ack.set()
        node.close()
        log.close()


# ---- writes from an event loop (`write_grouped_async`, the bridge's registrations) -----

async def _until(condition: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        await asyncio.sleep(0.005)


def test_registrations_from_an_event_loop_share_a_batch_and_are_applied_on_return(log):
    node = start(log)
    try:
        async def main() -> list[object]:
            async def one(i: int) -> object:
                value = await node.service.register_async(f"s{i}", RegisterRequest(NewSchema(schema(f"R{i}"))))
                # Read-your-writes: applied to this node's cache before the call returned.
                assert node.cache.version(f"s{i}", value.version) == value
                return value

            first = asyncio.create_task(one(0))
            await _until(lambda: len(log.appends) == 1, "the first write reaches the log")
            rest = [asyncio.create_task(one(i)) for i in range(1, 8)]
            await _until(lambda: len(node.writer._queue) == 7, "the other writes queue behind it")
            log.gate.set()
            return await asyncio.gather(first, *rest, return_exceptions=True)

        results = asyncio.run(main())
        assert all(isinstance(r, SchemaValue) for r in results), f"every write succeeds: {results}"
        assert sorted(r.id for r in results) == list(range(1, 9))
        assert log.appends == [1, 7], "the seven queued writes must share one append"
        committers = [t for t in threading.enumerate() if t.name == "group-commit"]
        assert len(committers) == 1, "one committer thread ran the batches"
    finally:
        node.close()
    assert not any(t.name == "group-commit" for t in threading.enumerate()), "closing the node stops it"


def test_an_event_loop_write_answers_within_its_timeout_while_its_batch_hangs(log):
    node = start(log, timeout_ms=800)
    try:
        async def main() -> tuple[object, object, float, float]:
            began = time.monotonic()
            stuck = asyncio.create_task(node.service.register_async("a", RegisterRequest(NewSchema(schema("A")))))
            await _until(lambda: len(log.appends) == 1, "the first write reaches the log")
            queued = asyncio.create_task(node.service.register_async("b", RegisterRequest(NewSchema(schema("B")))))
            outcomes = await asyncio.gather(stuck, queued, return_exceptions=True)
            return outcomes[0], outcomes[1], began, time.monotonic()

        stuck, queued, began, ended = asyncio.run(main())
        # The append never returns while the gate is shut: both answer at their deadline,
        # the queued one without having been appended.
        assert isinstance(stuck, StoreTimeout) and "appended" in str(stuck), stuck
        assert isinstance(queued, StoreTimeout) and "writes ahead" in str(queued), queued
        assert 0.75 <= ended - began < 1.3, f"answered {ended - began:.2f} s after the call, bound 0.8 s"
        log.gate.set()
        wait_for(lambda: node.writer.batches == 1 and not node.writer._queue, "the queued write withdrew")
    finally:
        node.close()


def test_closing_the_writer_fails_the_writes_still_queued_for_its_committer(log):
    node = start(log)
    try:
        async def main() -> object:
            stuck = asyncio.create_task(node.service.register_async("a", RegisterRequest(NewSchema(schema("A")))))
            await _until(lambda: len(log.appends) == 1, "the first write reaches the log")
            queued = asyncio.create_task(node.service.register_async("b", RegisterRequest(NewSchema(schema("B")))))
            await _until(lambda: len(node.writer._queue) == 1, "the second write queues")
            closer = threading.Thread(target=node.writer.close)
            closer.start()
            try:
                outcome = (await asyncio.gather(queued, return_exceptions=True))[0]
            finally:
                log.gate.set()  # let the committer finish its batch and end
                await asyncio.gather(stuck, return_exceptions=True)
                closer.join(5)
            return outcome

        outcome = asyncio.run(main())
        assert isinstance(outcome, StoreTimeout) and "closing" in str(outcome), outcome
        wait_for(lambda: not any(t.name == "group-commit" for t in threading.enumerate()), "the committer ends")
    finally:
        node.close()


def test_a_check_against_several_versions_from_an_event_loop_still_refuses_what_breaks_one(log):
    """With a transitive level the check runs on a thread, not the loop; it is the same check."""
    log.gate.set()
    node = start(log)
    try:
        node.service.set_compatibility("t", "FULL_TRANSITIVE")
        for name in ("a", "b", "c"):
            fields = [{"name": n, "type": "string", "default": ""} for n in "abc"[:"abc".index(name) + 1]]
            node.service.register("t", RegisterRequest(NewSchema(json.dumps(
                {"type": "record", "name": "T", "fields": fields}))))
        breaking = json.dumps({"type": "record", "name": "T", "fields": [{"name": "a", "type": "long"}]})
        fine = json.dumps({"type": "record", "name": "T", "fields": [
            {"name": n, "type": "string", "default": ""} for n in "abcd"]})

        async def main() -> tuple[object, object]:
            outcomes = []
            for text in (breaking, fine):
                try:
                    outcomes.append(await node.service.register_async("t", RegisterRequest(NewSchema(text))))
                except Exception as exc:  # noqa: BLE001 - asserted below
                    outcomes.append(exc)
            return outcomes[0], outcomes[1]

        refused, accepted = asyncio.run(main())
        assert type(refused).__name__ == "IncompatibleSchema", refused
        assert isinstance(accepted, SchemaValue) and accepted.version == 4, accepted
    finally:
        node.close()


class BlindLog(MemoryLog):
    """A log read by one thread only (as Kafka's consumer is), whose reads can be made to
    see nothing new: what lands then reaches the cache only if its writer applies it."""

    concurrent_reads = False

    def __init__(self) -> None:
        super().__init__()
        self.blind_from: int | None = None

    def read(self, from_offset, max_records, timeout):
        if self.blind_from is not None:
            time.sleep(min(timeout, 0.05))
            return LogBatch([], from_offset)
        return super().read(from_offset, max_records, timeout)


def test_a_landed_batch_is_applied_by_its_writer_without_waiting_for_the_reader():
    log = BlindLog()
    node = start(log, timeout_ms=1500)
    try:
        assert node.writer.wait_caught_up(5)
        log.blind_from = log.end_offset()

        async def main() -> list[object]:
            requests = [RegisterRequest(NewSchema(schema(f"R{i}"))) for i in range(4)]
            return await asyncio.gather(*(node.service.register_async(f"s{i}", request)
                                          for i, request in enumerate(requests)), return_exceptions=True)

        results = asyncio.run(main())
        assert all(isinstance(r, SchemaValue) for r in results), \
            f"the records are applied as soon as the log acknowledges them: {results}"
        assert all(node.cache.version(f"s{i}", 1) == results[i] for i in range(4))
        threaded = node.service.register("t", RegisterRequest(NewSchema(schema("T"))))
        assert node.cache.version("t", 1) == threaded, "a writer on its own thread applies its batch too"
        # A write outside group commit (a config, a deletion) applies its records too: a
        # reader resting while its writer applies (store/reader.py) is not woken for it.
        assert node.service.set_config("t", ConfigUpdate(compatibility_level="NONE")).compatibility_level == "NONE"
        assert node.cache.config("t").compatibility_level == "NONE"
        assert node.service.delete_subject("t") == [1]
        assert node.cache.versions("t") and node.cache.versions("t")[0].deleted
        assert node.reader.next_offset == log.end_offset() > log.blind_from
    finally:
        log.blind_from = None
        node.close()
        log.close()


def test_a_write_prepared_on_a_thread_raises_its_errors_on_the_loop_and_nothing_is_written(log):
    """`write_prepared_async`: the plan is made and queued on a thread of the writer's; an
    error making it (a refused registration) comes out of the awaiting coroutine, and a
    registration registered again answers from the cache without a second append."""
    node = start(log)
    log.gate.set()
    try:
        async def main() -> tuple[object, object, object]:
            first = await node.service.register_async("s", RegisterRequest(NewSchema(schema("A"))))
            again = await node.service.register_async("s", RegisterRequest(NewSchema(schema("A"))))
            try:
                await node.service.register_async("s", RegisterRequest(NewSchema("{not json")))
            except Exception as exc:  # noqa: BLE001 (what the coroutine raised is the subject)
                return first, again, exc
            return first, again, None

        first, again, refused = asyncio.run(main())
        assert isinstance(first, SchemaValue) and again == first, "the same schema: the same version"
        assert refused is not None and getattr(refused, "error_code", None) == 42201, repr(refused)
        assert log.appends == [1], "one append: the repeat and the refusal write nothing"
        preparers = [t for t in threading.enumerate() if t.name.startswith("prepare")]
        assert preparers, "the plans were made on the writer's own threads"
    finally:
        node.close()
