"""`KafkaLog` against a real broker: the Log contract, the topic rules, conditional
appends, and a registry node on Kafka (restart, adoption of Confluent/Karapace topics,
exact tombstone keys, corrupt records, a broker restart under a running node)."""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic, ResourceType

from registry.http.app import build_asgi
from registry.node import Node, build_node
from registry.service import NewSchema, RegisterRequest
from registry.settings import load_settings
from store.cache import Cache
from store.kafka_config import KafkaLogConfig
from store.kafka_log import EXPECTED_OFFSET_HEADER, KafkaLog
from store.log import LogBatch, LogConflict, LogMisconfigured, LogUnavailable
from store.reader import LogReader
from tests.asgi_client import AsgiClient

pytestmark = pytest.mark.integration

TIMEOUT = 30.0
CONTENT = "application/vnd.schemaregistry.v1+json"
ROOT = Path(__file__).resolve().parents[2]


# ---- helpers ------------------------------------------------------------------------


def eventually(check: Callable[[], Any], timeout: float = TIMEOUT, what: str = "condition") -> Any:
    """Poll `check` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def read_records(log: KafkaLog, from_offset: int, count: int) -> LogBatch:
    """Read until `count` records arrived (the consumer fetches asynchronously)."""
    records: list = []
    position = from_offset
    deadline = time.monotonic() + TIMEOUT
    while len(records) < count and time.monotonic() < deadline:
        batch = log.read(position, count - len(records), 0.5)
        records += batch.records
        position = batch.next_offset
    return LogBatch(records, position)


def produce_raw(bootstrap: str, topic: str, records: list[tuple[bytes, bytes | None]],
                headers: list | None = None) -> None:
    """Produce records as a foreign writer would (plain producer, acks=all); block until acked."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    failures: list[Any] = []
    for key, value in records:
        producer.produce(topic, key=key, value=value, partition=0, headers=headers,
                         on_delivery=lambda err, _msg: err and failures.append(err))
    assert producer.flush(TIMEOUT) == 0 and not failures, failures


def consume_raw(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None, list | None]]:
    """Every (key, value, headers) in partition 0, from the beginning to the end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"raw-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    out = []
    try:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    return out
                continue
            out.append((message.key(), message.value(), message.headers()))
        pytest.fail("the raw topic was not read to its end in time")
    finally:
        consumer.close()


def create_topic(bootstrap: str, topic: str, partitions: int = 1, config: dict | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})])[topic].result(TIMEOUT)


def topic_config(bootstrap: str, topic: str) -> dict:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return admin.describe_configs([resource])[resource].result(TIMEOUT)


def log_config(bootstrap: str, topic: str, **extra: str) -> KafkaLogConfig:
    return KafkaLogConfig.from_kafkastore({"bootstrap.servers": bootstrap, "topic": topic,
                                           "timeout.ms": "5000", **extra})


def start_node(bootstrap: str, topic: str, timeout_ms: int = 5000) -> Node:
    settings = load_settings(environ={}, overrides={
        "kafkastore.bootstrap.servers": bootstrap, "kafkastore.topic": topic,
        "kafkastore.timeout.ms": str(timeout_ms),
        # One node testing the store: it writes itself (elections are tested in tests/cluster).
        "leader.election.backend": "static"})
    node = build_node(settings)
    assert node.writer.wait_ready(TIMEOUT), "a node must catch up with the topic"
    return node


class Api:
    """The node's HTTP front end, driven in-process (tests/asgi_client.py)."""

    def __init__(self, node: Node) -> None:
        bridge = build_asgi(node)
        self.client = AsgiClient(bridge, bridge.answer_at_once)

    def get(self, path: str) -> tuple[int, Any]:
        response = self.client.get(path)
        return response.status, response.json()

    def send(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        response = self.client.request(method, path, None if body is None else json.dumps(body),
                                       headers={"Content-Type": CONTENT})
        return response.status, response.json()

    def register(self, subject: str, schema: str, **extra: Any) -> tuple[int, Any]:
        return self.send("POST", f"/subjects/{subject}/versions", {"schema": schema, **extra})


def avro_record(name: str, *fields: str) -> str:
    return json.dumps({"type": "record", "name": name,
                       "fields": [{"name": f, "type": ["null", "string"], "default": None} for f in fields]})


@pytest.fixture
def kafka_log(kafka_bootstrap: str, fresh_topic: str) -> Iterator[KafkaLog]:
    the_log = KafkaLog(log_config(kafka_bootstrap, fresh_topic))
    yield the_log
    the_log.close()


@pytest.fixture
def nodes() -> Iterator[list[Node]]:
    """Nodes a test starts; all closed afterwards, whatever happened."""
    started: list[Node] = []
    yield started
    for node in started:
        node.close()


# ---- the Log contract ---------------------------------------------------------------


def test_append_returns_increasing_offsets_and_read_returns_them_in_order(kafka_log: KafkaLog) -> None:
    offsets = [kafka_log.append(b"k%d" % i, b"v%d" % i) for i in range(5)]
    assert offsets == sorted(offsets) and len(set(offsets)) == 5
    assert kafka_log.end_offset() == offsets[-1] + 1, "an acknowledged record is below the end"
    batch = read_records(kafka_log, 0, 5)
    assert [r.key for r in batch.records] == [b"k0", b"k1", b"k2", b"k3", b"k4"]
    assert read_records(kafka_log, offsets[3], 1).records[0].value == b"v3", \
        "read starts at the requested offset (a seek backwards)"


def test_appends_from_many_threads_at_once_are_each_acknowledged(kafka_log: KafkaLog) -> None:
    """Each writer serves delivery callbacks itself, one at a time: a writer whose
    callback another's poll served, or who finds nobody polling, still gets its answer."""
    offsets: list[int] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        try:
            for i in range(15):
                offset = kafka_log.append(b"w%d-%d" % (w, i), b"v", timeout=10.0)
                with lock:
                    offsets.append(offset)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    [t.start() for t in threads]
    [t.join(60) for t in threads]
    assert not failures, f"every concurrent append is acknowledged: {failures[:3]}"
    assert len(set(offsets)) == 8 * 15, "each append landed at an offset of its own"


def test_an_append_whose_callback_another_thread_serves_returns_at_once(kafka_log: KafkaLog) -> None:
    """While another thread polls the producer (as a writer waiting for its own record
    does), an append's callback is served by that poll: it must return then, not wait
    for the other to stop (or, if it never did, until its own timeout)."""
    kafka_log.append(b"warm-up", b"v")
    stop = threading.Event()
    holding = threading.Event()

    def other_writer() -> None:
        with kafka_log._polling:  # a writer polling for a record of its own
            holding.set()
            until = time.monotonic() + 25
            while not stop.is_set() and time.monotonic() < until:
                kafka_log._producer.poll(0.1)

    other = threading.Thread(target=other_writer)
    other.start()
    try:
        assert holding.wait(5)
        began = time.monotonic()
        kafka_log.append(b"served-by-another", b"v", timeout=20.0)
        waited = time.monotonic() - began
    finally:
        stop.set()
        other.join(5)
    assert waited < 10.0, f"the other thread's poll served the callback; the append waited {waited:.1f} s"


def test_an_append_takes_over_polling_when_the_polling_thread_stops(kafka_log: KafkaLog) -> None:
    """A thread that held the producer's polling without polling (its record was just
    acknowledged, say) lets go: a waiting append then polls for its own callback."""
    kafka_log.append(b"warm-up", b"v")
    kafka_log._stopped.set()  # no idle poll either: only the append itself can serve it
    kafka_log._poller.join(5)
    release = threading.Event()
    holding = threading.Event()

    def idle_holder() -> None:
        with kafka_log._polling:
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=idle_holder)
    holder.start()
    assert holding.wait(5)
    threading.Timer(0.5, release.set).start()
    try:
        offset = kafka_log.append(b"taken-over", b"v", timeout=20.0)
    finally:
        release.set()
        holder.join(5)
    assert read_records(kafka_log, offset, 1).records[0].key == b"taken-over"


def _produce_requests(stats: list[str]) -> int:
    """How many produce requests the producer has sent to brokers, by its latest statistics."""
    brokers = json.loads(stats[-1])["brokers"].values()
    return sum(broker["req"].get("Produce", 0) for broker in brokers if broker["nodeid"] >= 0)


def test_a_batch_of_records_goes_to_the_broker_in_one_produce_request(kafka_log: KafkaLog) -> None:
    """librdkafka's broker thread wakes on a batch's first record; unless the records
    linger until their writer flushes, it sends the first alone and the rest after."""
    assert kafka_log._producer_config["linger.ms"] > 0, "records linger until their writer flushes"
    stats: list[str] = []
    # Lingering longer here than the log does: the records go when the writer flushes,
    # not when the linger ends, however long a busy machine keeps this thread from
    # producing the rest.
    kafka_log._producer = Producer({**kafka_log._producer_config, "linger.ms": 2_000,
                                    "statistics.interval.ms": 20, "stats_cb": stats.append})
    kafka_log.append(b"warm-up", b"v")  # the producer id and the connection

    def requests_so_far() -> int:
        # Statistics come every 20 ms, served by polls: the second to come after this
        # call was gathered after it.
        seen = len(stats)
        eventually(lambda: kafka_log._producer.poll(0.05) is not None and len(stats) >= seen + 2,
                   what="statistics")
        return _produce_requests(stats)

    before = requests_so_far()
    start = kafka_log.end_offset()
    offsets = kafka_log.append_many([(b"k%d" % i, b"v" * 200) for i in range(50)], start)
    assert offsets == list(range(start, start + 50))
    after = requests_so_far()
    assert after - before == 1, f"50 records produced together went in {after - before} produce requests"


class _FlushRecorder:
    """A producer that records how each of its flushes ended: the records still queued
    when it returned (it sat out its whole timeout if any), or the exception it raised."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer
        self.ended: list[int | str] = []

    def flush(self, timeout: float) -> int:
        try:
            left = self.producer.flush(timeout)
        except BaseException as exc:
            self.ended.append(type(exc).__name__)
            raise
        self.ended.append(left)
        return left

    def __len__(self) -> int:  # what a callback asks before it ends a flush
        return len(self.producer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.producer, name)


def test_an_append_waits_for_its_own_record_not_for_every_record_produced(kafka_log: KafkaLog,
                                                                         fresh_topic: str) -> None:
    """A writer waits by flushing the producer, and a flush returns only once every record
    produced is delivered, or at its timeout: the delivery a writer waits for must end its
    flush, or each append would sit out a whole poll slice behind another's record."""
    producer = Producer({**kafka_log._producer_config, "allow.auto.create.topics": False})
    recorder = _FlushRecorder(producer)
    kafka_log._producer = recorder  # type: ignore[assignment]
    kafka_log.append(b"warm-up", b"v")
    # With nothing else outstanding the flush ends by itself, without the exception
    # (which cost the batch's thread ~10 us).
    assert recorder.ended[-1] == 0 and "_Delivered" not in recorder.ended, recorder.ended
    # A record that stays queued for seconds: its topic does not exist.
    producer.produce(f"{fresh_topic}-missing", b"stuck")
    try:
        recorder.ended.clear()
        offset = kafka_log.append(b"own", b"v", timeout=20.0)
        assert len(producer) >= 1, "the other record is still undelivered"
        assert not [left for left in recorder.ended if isinstance(left, int) and left > 0], \
            f"no flush of the append timed out waiting for the other record: {recorder.ended}"
    finally:
        producer.purge()
        producer.flush(5)
    assert read_records(kafka_log, offset, 1).records[0].key == b"own"


def test_read_blocks_until_an_append_wakes_it(kafka_log: KafkaLog) -> None:
    start = kafka_log.end_offset()
    kafka_log.read(start, 10, 0.5)  # the consumer is now at the end
    timer = threading.Timer(0.2, lambda: kafka_log.append(b"late", b"v"))
    timer.start()
    began = time.monotonic()
    batch = kafka_log.read(start, 10, 5.0)
    while not batch.records and time.monotonic() - began < 5.0:
        batch = kafka_log.read(batch.next_offset, 10, 5.0 - (time.monotonic() - began))
    timer.join()
    assert [r.key for r in batch.records] == [b"late"]
    assert time.monotonic() - began < 2.0, "the append must wake the reader, not the timeout"


def test_read_with_nothing_new_returns_empty_at_the_end(kafka_log: KafkaLog) -> None:
    kafka_log.append(b"a", b"1")
    read_records(kafka_log, 0, 1)
    end = kafka_log.end_offset()
    began = time.monotonic()
    batch = kafka_log.read(end, 10, 0.3)
    assert batch.records == [] and batch.next_offset == end
    assert time.monotonic() - began < 2.0, "an empty read returns after about its timeout"


def test_a_consumer_that_stops_fetching_is_replaced_and_an_idle_one_is_not(kafka_log: KafkaLog,
                                                                           fresh_topic: str) -> None:
    # After a broker restart librdkafka's consumer was seen to stop fetching its assigned
    # partition for good (one node of three froze). Pausing the partition stops fetching
    # the same way; the log must notice records it is not given and take a new consumer.
    from store.kafka_log import _STALL_SECONDS
    for key in (b"a", b"b"):
        kafka_log.append(key, b"1")
    batch = read_records(kafka_log, 0, 2)
    idle_until = time.monotonic() + _STALL_SECONDS + 1.5
    while time.monotonic() < idle_until:  # nothing to read: idle, not stalled
        assert kafka_log.read(batch.next_offset, 10, 0.5).records == []
    assert kafka_log.consumer_replacements == 0, "an idle log at its end is not a stalled one"
    kafka_log._consumer.pause([TopicPartition(fresh_topic, 0)])
    for key in (b"c", b"d"):
        kafka_log.append(key, b"2")
    began = time.monotonic()
    late = read_records(kafka_log, batch.next_offset, 2)
    assert [r.key for r in late.records] == [b"c", b"d"]
    # At least one: a replacement that is itself slow to deliver (a loaded machine) may be replaced too.
    assert kafka_log.consumer_replacements >= 1, "the stalled consumer was replaced"
    assert time.monotonic() - began < 2 * _STALL_SECONDS + 3, "a stall ends within its bound"


def test_reader_reaches_an_end_that_holds_no_record(kafka_bootstrap: str, kafka_log: KafkaLog,
                                                     fresh_topic: str) -> None:
    # A transaction's commit marker takes the last offset; no record is ever read there.
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"tx-{fresh_topic}"})
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    producer.produce(fresh_topic, key=b'{"keytype":"NOOP","magic":0}', value=None, partition=0)
    producer.commit_transaction(TIMEOUT)
    # The coordinator writes the marker after the commit returns; the end moves then.
    end = eventually(lambda: kafka_log.end_offset() == 2 and 2, what="one record and one commit marker")
    reader = LogReader(kafka_log, Cache())
    reader.start()
    try:
        assert reader.catch_up(TIMEOUT), "caught up must be reachable past a trailing marker"
        assert reader.next_offset == end
    finally:
        reader.stop()


def test_log_is_durable_across_reopen(kafka_bootstrap: str, fresh_topic: str) -> None:
    first = KafkaLog(log_config(kafka_bootstrap, fresh_topic))
    for i in range(3):
        first.append(b"k%d" % i, b"v")
    first.close()
    reopened = KafkaLog(log_config(kafka_bootstrap, fresh_topic))
    try:
        assert [r.key for r in read_records(reopened, 0, 3).records] == [b"k0", b"k1", b"k2"]
        assert reopened.append(b"next", b"v", expected_offset=3) == 3
    finally:
        reopened.close()


# ---- the topic ----------------------------------------------------------------------


def test_topic_is_created_compacted_with_one_partition(kafka_bootstrap: str, fresh_topic: str) -> None:
    the_log = KafkaLog(log_config(kafka_bootstrap, fresh_topic, **{"topic.min.insync.replicas": "1"}))
    the_log.close()
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    metadata = admin.list_topics(fresh_topic, timeout=TIMEOUT).topics[fresh_topic]
    assert len(metadata.partitions) == 1, "one partition: one total order of records"
    config = topic_config(kafka_bootstrap, fresh_topic)
    assert config["cleanup.policy"].value == "compact", "a delete policy would expire schemas"
    assert config["min.insync.replicas"].value == "1"
    assert config["min.insync.replicas"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value, \
        "a configured min.insync.replicas is set on the topic, not inherited"
    assert the_log.cluster_id == admin.describe_cluster().result(TIMEOUT).cluster_id


@pytest.mark.parametrize("partitions, policy", [(3, "compact"), (1, "delete"), (1, "compact,delete")])
def test_refuses_a_topic_that_cannot_be_the_log(kafka_bootstrap: str, fresh_topic: str,
                                                partitions: int, policy: str) -> None:
    create_topic(kafka_bootstrap, fresh_topic, partitions, {"cleanup.policy": policy})
    with pytest.raises(LogMisconfigured) as refused:
        KafkaLog(log_config(kafka_bootstrap, fresh_topic))
    message = str(refused.value)
    assert fresh_topic in message
    assert ("1 partition" in message) if partitions > 1 else ("compact" in message), message


def test_serve_refuses_such_a_topic_with_a_message_not_a_traceback(kafka_bootstrap: str,
                                                                   fresh_topic: str, tmp_path: Any) -> None:
    create_topic(kafka_bootstrap, fresh_topic, 3, {"cleanup.policy": "compact"})
    env = dict(os.environ, SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS=kafka_bootstrap,
               SCHEMA_REGISTRY_KAFKASTORE_TOPIC=fresh_topic, SCHEMA_REGISTRY_EMBEDDED_STORE_PATH=str(tmp_path),
               SCHEMA_REGISTRY_LISTENERS=f"http://127.0.0.1:{free_port()}")
    try:
        done = subprocess.run([sys.executable, "-m", "registry.cli", "serve"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the registry must refuse to start, not keep running")
    assert done.returncode != 0
    assert "should have only 1 partition" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


# ---- conditional appends ------------------------------------------------------------


def test_conflicting_append_is_refused_and_readers_drop_it(kafka_bootstrap: str, kafka_log: KafkaLog,
                                                           fresh_topic: str) -> None:
    assert kafka_log.append(b"a", b"1", expected_offset=0) == 0
    with pytest.raises(LogConflict):
        kafka_log.append(b"b", b"1", expected_offset=0)  # lands at 1
    raw = consume_raw(kafka_bootstrap, fresh_topic)
    assert raw[1][2] == [(EXPECTED_OFFSET_HEADER, (0).to_bytes(8, "big"))], \
        "the expectation travels in an 8-byte big-endian header; key and value stay Confluent's"
    assert raw[1][:2] == (b"b", b"1")
    batch = read_records(kafka_log, 0, 2)
    assert [r.misplaced for r in batch.records] == [False, True]


def test_append_many_reports_where_each_record_landed_and_readers_drop_the_misplaced(
        kafka_bootstrap: str, kafka_log: KafkaLog, fresh_topic: str) -> None:
    assert kafka_log.append_many([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], 0) == [0, 1, 2], \
        "one batch, consecutive offsets, in order"
    # A stale batch (someone appended since its writer caught up) lands one further.
    assert kafka_log.append_many([(b"d", b"4"), (b"e", b"5")], 2) == [3, 4]
    raw = consume_raw(kafka_bootstrap, fresh_topic)
    assert [r[2] for r in raw][3:] == [[(EXPECTED_OFFSET_HEADER, (2).to_bytes(8, "big"))],
                                       [(EXPECTED_OFFSET_HEADER, (3).to_bytes(8, "big"))]], \
        "each record carries the offset it expects, as a single append's does"
    batch = read_records(kafka_log, 0, 5)
    assert [r.misplaced for r in batch.records] == [False, False, False, True, True], \
        "readers drop every record of the stale batch"


def test_a_node_ignores_a_misplaced_schema_record(kafka_bootstrap: str, fresh_topic: str,
                                                  nodes: list[Node]) -> None:
    key = b'{"keytype":"SCHEMA","subject":"zombie","version":1,"magic":1}'
    value = b'{"subject":"zombie","version":1,"id":7,"schema":"\\"string\\"","deleted":false}'
    # A deposed leader's late append: it expected offset 0, someone else got there first.
    create_topic(kafka_bootstrap, fresh_topic, 1, {"cleanup.policy": "compact"})
    produce_raw(kafka_bootstrap, fresh_topic, [(b'{"keytype":"NOOP","magic":0}', None)])
    produce_raw(kafka_bootstrap, fresh_topic, [(key, value)],
                headers=[(EXPECTED_OFFSET_HEADER, (0).to_bytes(8, "big"))])
    nodes.append(node := start_node(kafka_bootstrap, fresh_topic))
    api = Api(node)
    assert api.get("/subjects")[1] == [], "a misplaced record must not reach the cache"
    assert api.get("/schemas/ids/7")[0] == 404
    assert node.reader.dropped == 1
    status, body = api.register("fresh", '"int"')
    assert status == 200 and body["id"] == 1, "the dropped record's id is not taken"


# ---- a registry node on Kafka -------------------------------------------------------


def test_node_registers_and_a_restarted_node_has_the_same_state(kafka_bootstrap: str, fresh_topic: str,
                                                                nodes: list[Node]) -> None:
    nodes.append(first := start_node(kafka_bootstrap, fresh_topic))
    api = Api(first)
    ids = [api.register(f"s{i % 3}", avro_record("R", *[f"f{j}" for j in range(i)]))[1]["id"]
           for i in range(9)]
    assert len(set(ids)) == 9
    assert api.send("PUT", "/config/s1", {"compatibility": "NONE"})[0] == 200
    assert api.send("DELETE", "/subjects/s2/versions/1")[0] == 200
    assert api.send("DELETE", "/subjects/s2/versions/1?permanent=true")[0] == 200
    status, metadata = api.get("/v1/metadata/id")
    assert status == 200 and metadata["scope"]["clusters"]["kafka-cluster"] == first.cluster_id != "embedded"
    first.close()
    nodes.append(second := start_node(kafka_bootstrap, fresh_topic))
    # The last element is the leader's fence: the second node took office with its own.
    assert second.cache.fingerprint()[:-1] == first.cache.fingerprint()[:-1], \
        "a node rebuilt from the topic must hold exactly the state the first one had"
    assert second.cache.fence.max_id == first.cache.fence.max_id > 0, \
        "the new term's fence carries the id watermark the hard delete raised"
    assert Api(second).register("s0", avro_record("R", "new"))[1]["id"] == max(ids) + 1


def test_registrations_are_applied_by_their_writer_and_the_consumer_never_seeks(kafka_bootstrap: str,
                                                                                fresh_topic: str,
                                                                                nodes: list[Node]) -> None:
    nodes.append(node := start_node(kafka_bootstrap, fresh_topic))
    log = node.log
    assert isinstance(log, KafkaLog)
    seeks = log.seeks
    # The leader's fence, appended on taking office, was applied by its writer too.
    landed, batches = node.reader.landed, node.writer.batches
    # The reader thread is held before its next read while the registrations land, as
    # under load it waits for the interpreter while the committer holds it: each batch
    # is acknowledged before the thread can read it back.
    read, reading, held = log.read, threading.Event(), threading.Event()

    def late_read(from_offset: int, *args: Any) -> LogBatch:
        if not reading.is_set():
            held.set()
            reading.wait()
            return LogBatch([], from_offset)  # as a read that found nothing in time
        return read(from_offset, *args)

    log.read = late_read  # type: ignore[method-assign]
    assert held.wait(TIMEOUT), "the reader thread comes back for its next read"

    async def main() -> list[object]:
        async def one(i: int) -> object:
            value = await node.service.register_async(f"s{i}", RegisterRequest(NewSchema(avro_record(f"R{i}", "a"))))
            assert node.cache.version(f"s{i}", 1) == value, "applied to the cache before the call returned"
            return value
        return await asyncio.gather(*(one(i) for i in range(60)))

    try:
        values = asyncio.run(main())
    finally:
        reading.set()
    assert sorted(v.id for v in values) == list(range(1, 61))
    assert node.writer.batches - batches < 60, "the registrations shared batches"
    assert node.reader.landed - landed == node.writer.batches - batches, "their writer applied every batch itself"
    eventually(lambda: log.rests >= 1,
               what="the reader, having read back only what its writer applied, to stop the fetching")
    # A record of someone else's after them: only the reader thread, reading past the
    # batches, can apply it; a waiter for it ends the reader's rest.
    foreign = log.append(b'{"keytype":"NOOP","magic":0}', None)
    assert node.reader.wait_until(foreign + 1, TIMEOUT)
    assert log.seeks == seeks, \
        "the reader reads on past the records the writer applied itself: no seek for any batch"
    # And one nobody waits for: applied once the rest ends by itself.
    another = log.append(b'{"keytype":"NOOP","magic":0}', None)
    eventually(lambda: node.reader.next_offset > another,
               what="the rest to end by itself and the reader to fetch on past a record nobody waits for")
    nodes.append(replayed := start_node(kafka_bootstrap, fresh_topic))
    assert replayed.cache.fingerprint()[:-1] == node.cache.fingerprint()[:-1], \
        "what the writer applied is what every node reads from the topic"


def test_a_bulk_import_lands_in_one_go_on_kafka_and_replays_alike(kafka_bootstrap: str, fresh_topic: str,
                                                                   nodes: list[Node]) -> None:
    nodes.append(first := start_node(kafka_bootstrap, fresh_topic))
    api = Api(first)
    assert api.send("PUT", "/mode", {"mode": "IMPORT"})[0] == 200
    entries = [{"subject": f"bulk-{i // 3}", "version": i % 3 + 1, "id": 1000 + i,
                "schema": avro_record(f"B{i}", "a")} for i in range(600)]
    entries.append({"subject": "bulk-x", "version": 1, "id": 1000, "schema": avro_record("Other", "a")})
    end_before = first.log.end_offset()
    single, many = [], []
    append, append_many = first.log.append, first.log.start_append_many
    first.log.append = lambda *a, **k: (single.append(1), append(*a, **k))[1]
    first.log.start_append_many = lambda records, *a: (many.append(len(records)), append_many(records, *a))[1]
    status, body = api.send("POST", "/import/schemas", {"schemas": entries})
    assert status == 200, body
    assert [r.get("id") for r in body["results"][:600]] == [1000 + i for i in range(600)]
    assert body["results"][600]["error_code"] == 42205, "id 1000 names another content"
    assert first.log.end_offset() - end_before == 600, "one record per imported version, the refused one none"
    assert (single, many) == ([], [600]), "the 600 records go in one produce, not one round trip each"
    settings = [{"subject": f"bulk-{i}", "config": {"compatibility": "NONE"}} for i in range(200)]
    settings.append({"subject": "bulk-0", "mode": "READONLY"})
    status, body = api.send("POST", "/import/settings", {"settings": settings})
    assert status == 200 and all("error_code" not in r for r in body["results"]), body
    assert (single, many) == ([], [600, 201]), "200 configs and a mode: one produce"
    assert api.get("/config/bulk-199")[1]["compatibilityLevel"] == "NONE"
    first.close()
    nodes.append(second := start_node(kafka_bootstrap, fresh_topic))
    assert second.cache.fingerprint()[:-1] == first.cache.fingerprint()[:-1]
    assert Api(second).get("/subjects/bulk-199/versions")[1] == [1, 2, 3]
    assert Api(second).get("/mode/bulk-0")[1] == {"mode": "READONLY"}


def _adoption_records() -> list[tuple[bytes, bytes | None]]:
    user = avro_record("User", "name")
    user2 = avro_record("User", "name", "email")
    order = json.dumps({"type": "record", "name": "Order",
                        "fields": [{"name": "user", "type": "User"}]})

    def schema_key(subject: str, version: int, magic: int = 1) -> bytes:
        return (f'{{"keytype":"SCHEMA","subject":"{subject}","version":{version},"magic":{magic}}}'
                .encode())

    def value(**fields: Any) -> bytes:
        return json.dumps(fields, separators=(",", ":")).encode()

    return [
        # Old Confluent (magic 0), fields as Confluent orders them, "deleted" written.
        (schema_key("legacy", 1, 0), value(subject="legacy", version=1, id=1, schema='"string"', deleted=False)),
        # Current Confluent: no schemaType for AVRO, "deleted" omitted.
        (schema_key("users-value", 1), value(subject="users-value", version=1, id=2, schema=user)),
        # Explicit schemaType and empty references, as Karapace writes them.
        (schema_key("users-value", 2), value(subject="users-value", version=2, id=3, schemaType="AVRO",
                                             references=[], schema=user2, deleted=False)),
        # References.
        (schema_key("orders-value", 1), value(subject="orders-value", version=1, id=4, schemaType="AVRO",
                                              references=[{"name": "User", "subject": "users-value",
                                                           "version": 1}],
                                              schema=order, deleted=False)),
        # A soft-deleted version.
        (schema_key("soft", 1), value(subject="soft", version=1, id=5, schema='"bytes"', deleted=True)),
        # A subject soft-deleted with DELETE_SUBJECT.
        (schema_key("gone", 1), value(subject="gone", version=1, id=6, schema='"int"')),
        (schema_key("gone", 2), value(subject="gone", version=2, id=7, schema='"long"')),
        (b'{"keytype":"DELETE_SUBJECT","subject":"gone","magic":0}', value(subject="gone", version=2)),
        # A subject hard-deleted with CLEAR_SUBJECT.
        (schema_key("cleared", 1), value(subject="cleared", version=1, id=8, schema='"float"')),
        (b'{"keytype":"CLEAR_SUBJECT","subject":"cleared","magic":0}', value(subject="cleared")),
        # A hard-deleted version (its tombstone); its id stays taken.
        (schema_key("hard", 1), value(subject="hard", version=1, id=9, schema='"double"', deleted=True)),
        (schema_key("hard", 1), None),
        # Global config, Karapace style (subject null), then Confluent style (no subject).
        (b'{"keytype":"CONFIG","subject":null,"magic":0}', value(compatibilityLevel="FULL")),
        (b'{"keytype":"CONFIG","magic":0}', value(compatibilityLevel="NONE")),
        (b'{"keytype":"CONFIG","subject":"users-value","magic":0}', value(compatibilityLevel="FORWARD")),
        (b'{"keytype":"MODE","magic":0}', value(mode="READWRITE")),
        (b'{"keytype":"MODE","subject":"frozen","magic":0}', value(mode="READONLY")),
        (b'{"keytype":"NOOP","magic":0}', None),
    ]


def test_adopts_a_topic_written_by_confluent_or_karapace(kafka_bootstrap: str, fresh_topic: str,
                                                         nodes: list[Node]) -> None:
    create_topic(kafka_bootstrap, fresh_topic, 1, {"cleanup.policy": "compact"})
    produce_raw(kafka_bootstrap, fresh_topic, _adoption_records())
    nodes.append(node := start_node(kafka_bootstrap, fresh_topic))
    api = Api(node)
    assert node.reader.skipped == 0, "every record in Confluent's format must decode"
    assert sorted(api.get("/subjects")[1]) == ["legacy", "orders-value", "users-value"]
    assert sorted(api.get("/subjects?deleted=true")[1]) == ["gone", "legacy", "orders-value", "soft",
                                                             "users-value"]
    assert api.get("/schemas/ids/1")[1]["schema"] == '"string"', "magic-0 keys are adopted"
    assert api.get("/subjects/users-value/versions")[1] == [1, 2]
    assert api.get("/subjects/users-value/versions/2")[1]["id"] == 3
    orders = api.get("/subjects/orders-value/versions/1")[1]
    assert orders["references"] == [{"name": "User", "subject": "users-value", "version": 1}]
    assert api.get("/subjects/users-value/versions/1/referencedby")[1] == [4]
    assert api.get("/subjects/soft/versions")[0] == 404
    assert api.get("/subjects/soft/versions?deleted=true")[1] == [1]
    assert api.get("/subjects/gone/versions?deleted=true")[1] == [1, 2], "DELETE_SUBJECT soft-deletes"
    assert api.get("/subjects/cleared/versions?deleted=true")[0] == 404, "CLEAR_SUBJECT removes"
    assert api.get("/schemas/ids/9")[0] == 404, "a tombstoned version is gone"
    assert api.get("/config")[1] == {"compatibilityLevel": "NONE"}, "the later global config wins"
    assert api.get("/config/users-value")[1] == {"compatibilityLevel": "FORWARD"}
    assert api.get("/mode")[1] == {"mode": "READWRITE"}
    assert api.get("/mode/frozen")[1] == {"mode": "READONLY"}
    status, body = api.register("legacy", '"boolean"')
    assert status == 200 and body["id"] == 10, "new ids start above every id the topic used"


def test_hard_delete_tombstones_carry_the_exact_original_key_bytes(kafka_bootstrap: str, fresh_topic: str,
                                                                   nodes: list[Node]) -> None:
    create_topic(kafka_bootstrap, fresh_topic, 1, {"cleanup.policy": "compact"})
    value = b'{"subject":"hd","version":1,"id":1,"schema":"\\"string\\"","deleted":false}'
    # The same (subject, version) under two byte forms: an old Confluent key (magic 0)
    # and a writer that spaced its JSON. Compaction only removes exact byte matches.
    old_key = b'{"keytype":"SCHEMA","subject":"hd","version":1,"magic":0}'
    spaced_key = b'{"keytype": "SCHEMA", "subject": "hd", "version": 1, "magic": 1}'
    produce_raw(kafka_bootstrap, fresh_topic, [(old_key, value), (spaced_key, value)])
    nodes.append(node := start_node(kafka_bootstrap, fresh_topic))
    api = Api(node)
    assert api.send("DELETE", "/subjects/hd/versions/1")[0] == 200
    assert api.send("DELETE", "/subjects/hd/versions/1?permanent=true")[0] == 200
    raw = consume_raw(kafka_bootstrap, fresh_topic)
    tombstones = {key for key, value_, _ in raw if value_ is None}
    assert tombstones == {old_key, spaced_key}, "one tombstone per byte form, byte for byte"
    noop = b'{"keytype":"NOOP","magic":0}'
    ours = [key for key, _, headers in raw if headers]
    assert set(ours) - {noop} <= {old_key, spaced_key}, "the soft delete reuses an existing key form too"
    assert noop in ours, "a hard delete re-states the id watermark, so compaction cannot free the id"


def test_corrupt_records_are_skipped_and_the_node_keeps_working(kafka_bootstrap: str, fresh_topic: str,
                                                                nodes: list[Node]) -> None:
    create_topic(kafka_bootstrap, fresh_topic, 1, {"cleanup.policy": "compact"})
    produce_raw(kafka_bootstrap, fresh_topic, [
        (b"not json", b"{}"),
        (b'{"keytype":"SCHEMA","subject":"c","version":1,"magic":1}', b"\xff not json"),
        (b'{"keytype":"SCHEMA","subject":"ok","version":1,"magic":1}',
         b'{"subject":"ok","version":1,"id":1,"schema":"\\"string\\""}'),
    ])
    nodes.append(node := start_node(kafka_bootstrap, fresh_topic))
    api = Api(node)
    assert node.reader.skipped == 2
    assert api.get("/subjects")[1] == ["ok"]
    status, body = api.register("after", '"int"')
    assert status == 200 and body["id"] == 2


def test_broker_restart_under_a_running_node(kafka_bootstrap: str, fresh_topic: str, kafka_broker: Any,
                                             nodes: list[Node]) -> None:
    timeout_s = 3.0
    nodes.append(node := start_node(kafka_bootstrap, fresh_topic, timeout_ms=int(timeout_s * 1000)))
    api = Api(node)
    acknowledged = {api.register("before", '"string"')[1]["id"]}
    kafka_broker.stop()
    try:
        for attempt in range(2):
            began = time.monotonic()
            status, body = api.register("during", json.dumps({"type": "fixed", "name": f"F{attempt}",
                                                              "size": 4}))
            elapsed = time.monotonic() - began
            assert status == 500 and body["error_code"] in (50001, 50002), body
            assert "Traceback" not in body["message"] and body["message"], body
            assert elapsed < 2 * timeout_s + 2, f"a write during an outage must fail fast, took {elapsed:.1f} s"
        assert api.get("/subjects/before/versions")[1] == [1], "reads keep being served from the cache"
        # The producer itself, not only the end-offset query, must give up in time.
        began = time.monotonic()
        with pytest.raises(LogUnavailable):
            node.log.append(b'{"keytype":"NOOP","magic":0}', None, expected_offset=node.reader.next_offset)
        assert time.monotonic() - began < timeout_s + 3, "an append during an outage must fail fast"
    finally:
        kafka_broker.restart()

    def write_after() -> Any:
        status, body = api.register("after", '"int"')
        return body["id"] if status == 200 else None

    acknowledged.add(eventually(write_after, what="a write after the broker came back"))
    nodes.append(fresh := start_node(kafka_bootstrap, fresh_topic))
    assert acknowledged <= {schema_id for schema_id in fresh.cache.schema_ids()}, \
        "nothing acknowledged may be lost"
    eventually(lambda: node.reader.next_offset >= node.log.end_offset(), what="the node to catch up")
    assert fresh.cache.fingerprint() == node.cache.fingerprint(), \
        "the node that lived through the outage holds what the topic holds"


def test_real_compaction_cannot_free_a_hard_deleted_id(kafka_bootstrap: str, fresh_topic: str,
                                                       nodes: list[Node]) -> None:
    # A topic whose cleaner runs at once and forgets tombstones at once, as a busy
    # production topic eventually does after delete.retention.ms.
    create_topic(kafka_bootstrap, fresh_topic, 1, {
        "cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "0", "min.compaction.lag.ms": "0"})
    nodes.append(first := start_node(kafka_bootstrap, fresh_topic))
    api = Api(first)
    assert api.register("keep", avro_record("Keep"))[0] == 200
    status, body = api.register("gone", avro_record("Gone"))
    gone_id = body["id"]
    assert api.send("DELETE", "/subjects/gone")[0] == 200
    assert api.send("DELETE", "/subjects/gone?permanent=true")[0] == 200
    first.close()

    def compacted() -> bool:
        # Each append after segment.ms rolls the segment, so the earlier ones become cleanable.
        # The tick is no registry key (readers skip it), and above all not a NOOP tombstone,
        # which would delete the id watermark itself.
        produce_raw(kafka_bootstrap, fresh_topic, [(b"tick", b"1")])
        keys = [key for key, value, _ in consume_raw(kafka_bootstrap, fresh_topic)]
        return not any(b'"keytype":"SCHEMA","subject":"gone"' in key for key in keys if key)

    # Tombstones go in a second cleaner pass; the broker's cleaner wakes every 15 s.
    eventually(compacted, 120, "the cleaner to remove the hard-deleted schema and its tombstone")
    nodes.append(second := start_node(kafka_bootstrap, fresh_topic))
    status, body = Api(second).register("new", avro_record("New"))
    assert status == 200 and body["id"] > gone_id, \
        "after compaction removed every trace of the deleted schema, its id must still not be reused"


def test_a_schema_over_the_topics_size_limit_is_42209_before_any_append(kafka_bootstrap: str, fresh_topic: str,
                                                                         nodes: list[Node]) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(fresh_topic, 1, 1, config={"cleanup.policy": "compact",
                                                             "max.message.bytes": "20000"})])[fresh_topic].result(30)
    nodes.append(node := start_node(kafka_bootstrap, fresh_topic))
    api = Api(node)
    end = node.log.end_offset()
    big = avro_record("Big", *[f"field_number_{i}" for i in range(600)])
    assert len(big) > 20000
    status, body = api.register("big", big)
    assert (status, body["error_code"]) == (422, 42209), body
    assert node.log.end_offset() == end, "a refused schema must not reach the topic"
    status, _ = api.register("small", avro_record("Small", "a"))
    assert status == 200, "schemas within the limit still register"


def _data_contract_records() -> list[tuple[bytes, bytes | None]]:
    """Records as Confluent 7.x/8.x write them (field orders of their classes): a schema
    with md5, metadata and a rule set, a context and its subject, an association, a
    config with defaults and overrides, and a key type no release of ours knows."""
    rules = (b'{"domainRules":[{"name":"positive","kind":"CONDITION","mode":"WRITE","type":"CEL",'
             b'"expr":"message.a > 0","disabled":false}]}')
    meta = b'{"tags":{"R.a":["PII"]},"properties":{"owner":"team-a"},"sensitive":["a"]}'
    schema = json.dumps(json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]},
                                   separators=(",", ":"))).encode()
    return [
        (b'{"keytype":"SCHEMA","subject":"contracts","version":1,"magic":1}',
         b'{"subject":"contracts","version":1,"id":1,"metadata":' + meta + b',"ruleSet":' + rules
         + b',"schema":' + schema + b',"deleted":false,"offset":0,"ts":1700000000000}'),
        (b'{"keytype":"CONTEXT","tenant":"default","context":".prod","magic":0}',
         b'{"tenant":"default","context":".prod"}'),
        (b'{"keytype":"SCHEMA","subject":":.prod:orders-value","version":1,"magic":1}',
         b'{"subject":":.prod:orders-value","version":1,"id":1,"schema":"\\"long\\"","deleted":false}'),
        (b'{"keytype":"ASSOC","tenant":"default","resourceName":"orders","resourceNamespace":"prod",'
         b'"resourceType":"topic","associationType":"value","subject":":.prod:orders-value","magic":0}',
         b'{"guid":"0b5d8a5e-8f0e-4a41-9d2b-3c1d2f6c9b10","tenant":"default","resourceName":"orders",'
         b'"resourceNamespace":"prod","resourceId":"t-orders","resourceType":"topic","associationType":"value",'
         b'"subject":":.prod:orders-value","lifecycle":"STRONG","frozen":true,"createTs":1700000000000}'),
        (b'{"keytype":"CONFIG","subject":"contracts","magic":0}',
         b'{"subject":"contracts","compatibilityLevel":"NONE","compatibilityGroup":"app",'
         b'"defaultMetadata":{"properties":{"team":"payments"}},"overrideRuleSet":' + rules + b'}'),
        (b'{"keytype":"DEK","tenant":"default","kekName":"k","subject":"s","version":1,"algorithm":"x","magic":0}',
         b'{"whatever":true}'),
    ]


def test_adopts_data_contracts_contexts_and_associations_and_writes_them_back_alike(
        kafka_bootstrap: str, fresh_topic: str, nodes: list[Node]) -> None:
    create_topic(kafka_bootstrap, fresh_topic, 1, {"cleanup.policy": "compact"})
    produce_raw(kafka_bootstrap, fresh_topic, _data_contract_records())
    nodes.append(node := start_node(kafka_bootstrap, fresh_topic))
    api = Api(node)
    assert node.reader.skipped == 1, "only the key type we do not know is skipped (a DEK record)"
    version = api.get("/subjects/contracts/versions/1")[1]
    assert version["metadata"] == {"tags": {"R.a": ["PII"]}, "properties": {"owner": "team-a"}, "sensitive": ["a"]}
    assert version["ruleSet"]["domainRules"][0]["expr"] == "message.a > 0"
    assert api.get("/contexts")[1] == [".", ".prod"]
    assert api.get("/schemas/ids/1?subject=:.prod:orders-value")[1]["schema"] == '"long"', "ids per context"
    assert api.get("/associations/resources/prod/orders")[1][0]["subject"] == ":.prod:orders-value"
    config = api.get("/config/contracts")[1]
    assert (config["compatibilityGroup"], config["defaultMetadata"]) == ("app", {"properties": {"team": "payments"}})
    # A new version written by us carries the contracts (the previous version's, under the
    # config's defaults) in Confluent's byte format.
    status, body = api.register("contracts", json.dumps({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": 0}]}))
    assert status == 200 and body["version"] == 2, body
    written = [value for key, value, _ in consume_raw(kafka_bootstrap, fresh_topic)
               if key == b'{"keytype":"SCHEMA","subject":"contracts","version":2,"magic":1}']
    assert written and written[-1].startswith(
        b'{"subject":"contracts","version":2,"id":2,"metadata":{"tags":{"R.a":["PII"]},'
        b'"properties":{"owner":"team-a","team":"payments"},"sensitive":["a"]},'), \
        written
    assert b',"ruleSet":' + _data_contract_records()[0][1].split(b'"ruleSet":')[1].split(b',"schema"')[0] in written[-1]
    assert written[-1].endswith(b',"deleted":false}')
