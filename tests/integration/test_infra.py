"""Proof that the test infrastructure is a real Kafka and a real ZooKeeper.

Each test talks to the servers with the same client libraries the registry uses
(confluent-kafka, kazoo) and checks behaviour the registry relies on: acks=all
produce/consume, compacted topics that really get compacted, transactions and their
fencing, ephemeral znodes, and a broker restart that clients ride through.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kazoo.client import KazooClient

pytestmark = pytest.mark.integration

TIMEOUT = 30.0


def create_topic(bootstrap: str, topic: str, config: dict[str, str] | None = None) -> None:
    """Create a one-partition topic and block until the broker confirms it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=1, replication_factor=1, config=config or {})],
        operation_timeout=TIMEOUT,
    )
    futures[topic].result(timeout=TIMEOUT)


def produce(producer: Producer, topic: str, records: list[tuple[bytes, bytes | None]]) -> None:
    """Produce records and block until each is acknowledged; raise on any failure."""
    errors: list[Any] = []

    def on_delivery(err: KafkaError | None, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for key, value in records:
        producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
    remaining = producer.flush(TIMEOUT)
    assert remaining == 0, f"{remaining} records not acknowledged within {TIMEOUT}s"
    assert not errors, errors


def new_producer(bootstrap: str, **extra: Any) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, **extra})


def consume_all(
    bootstrap: str, topic: str, expected: int, *, group: bool = False, **extra: Any
) -> list[tuple[bytes | None, bytes | None]]:
    """Read partition 0 of ``topic`` from the beginning until ``expected`` records arrived.

    Returns what arrived within the timeout. ``group=True`` subscribes through a
    consumer group (exercising the group coordinator) instead of assigning directly.
    """
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"infra-test-{uuid.uuid4().hex}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        **extra,
    })
    out: list[tuple[bytes | None, bytes | None]] = []
    try:
        if group:
            consumer.subscribe([topic])
        else:
            consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + TIMEOUT
        while len(out) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            out.append((msg.key(), msg.value()))
    finally:
        consumer.close()
    return out


def test_produce_and_consume(kafka_bootstrap: str, fresh_topic: str) -> None:
    create_topic(kafka_bootstrap, fresh_topic)
    producer = new_producer(kafka_bootstrap, **{"enable.idempotence": True})
    produce(producer, fresh_topic, [(b"k1", b"v1"), (b"k2", b"v2")])
    got = consume_all(kafka_bootstrap, fresh_topic, 2, group=True)
    assert got == [(b"k1", b"v1"), (b"k2", b"v2")]


def test_compacted_topic_config_reads_back(kafka_bootstrap: str, fresh_topic: str) -> None:
    create_topic(kafka_bootstrap, fresh_topic, {"cleanup.policy": "compact"})
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, fresh_topic)
    configs = admin.describe_configs([resource])[resource].result(timeout=TIMEOUT)
    assert configs["cleanup.policy"].value == "compact"
    assert not configs["cleanup.policy"].is_default


def test_log_cleaner_really_compacts(kafka_bootstrap: str, fresh_topic: str) -> None:
    # Only closed segments are cleaned: roll segments quickly and make any dirt cleanable.
    create_topic(kafka_bootstrap, fresh_topic, {
        "cleanup.policy": "compact",
        "segment.ms": "100",
        "min.cleanable.dirty.ratio": "0.01",
    })
    producer = new_producer(kafka_bootstrap)
    produce(producer, fresh_topic, [(b"a", b"1"), (b"b", b"1"), (b"a", b"2")])
    deadline = time.monotonic() + TIMEOUT
    while True:
        time.sleep(0.3)
        # Each append after segment.ms rolls the segment, so earlier ones become cleanable.
        produce(producer, fresh_topic, [(b"tick", b"")])
        records = consume_all(kafka_bootstrap, fresh_topic, 3)
        if records[:2] == [(b"b", b"1"), (b"a", b"2")]:
            break  # the superseded a=1 is gone: the cleaner ran
        assert time.monotonic() < deadline, f"topic was not compacted: {records}"


def test_transactional_producer_commits(kafka_bootstrap: str, fresh_topic: str) -> None:
    create_topic(kafka_bootstrap, fresh_topic)
    producer = new_producer(kafka_bootstrap, **{"transactional.id": f"infra-{uuid.uuid4().hex}"})
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    producer.produce(fresh_topic, key=b"tx", value=b"committed")
    producer.commit_transaction(TIMEOUT)
    got = consume_all(kafka_bootstrap, fresh_topic, 1, **{"isolation.level": "read_committed"})
    assert got == [(b"tx", b"committed")]


def test_transactional_id_fences_the_previous_producer(
    kafka_bootstrap: str, fresh_topic: str
) -> None:
    create_topic(kafka_bootstrap, fresh_topic)
    txn_id = f"infra-{uuid.uuid4().hex}"
    zombie = new_producer(kafka_bootstrap, **{"transactional.id": txn_id})
    zombie.init_transactions(TIMEOUT)
    zombie.begin_transaction()
    zombie.produce(fresh_topic, key=b"zombie", value=b"lost")
    zombie.flush(TIMEOUT)

    successor = new_producer(kafka_bootstrap, **{"transactional.id": txn_id})
    successor.init_transactions(TIMEOUT)  # bumps the epoch: the zombie is fenced
    with pytest.raises(KafkaException) as caught:
        zombie.commit_transaction(TIMEOUT)
    assert caught.value.args[0].fatal()

    successor.begin_transaction()
    successor.produce(fresh_topic, key=b"successor", value=b"kept")
    successor.commit_transaction(TIMEOUT)
    got = consume_all(kafka_bootstrap, fresh_topic, 1, **{"isolation.level": "read_committed"})
    assert got == [(b"successor", b"kept")]


def test_zookeeper_ephemeral_node(zookeeper_connect: str) -> None:
    path = f"/infra-test/{uuid.uuid4().hex}"
    owner = KazooClient(hosts=zookeeper_connect, timeout=10)
    observer = KazooClient(hosts=zookeeper_connect, timeout=10)
    owner.start(timeout=TIMEOUT)
    observer.start(timeout=TIMEOUT)
    try:
        owner.create(path, b"leader-1", ephemeral=True, makepath=True)
        data, stat = observer.get(path)
        assert data == b"leader-1"
        assert stat.ephemeralOwner == owner.client_id[0]
        # Closing the owner's session must delete its ephemeral node.
        owner.stop()
        owner.close()
        assert observer.exists(path) is None
    finally:
        for client in (owner, observer):
            client.stop()
            client.close()


def test_zookeeper_answers_four_letter_words(zookeeper_server: Any) -> None:
    if zookeeper_server is None:
        pytest.skip("ZOOKEEPER_CONNECT names an external server")
    assert zookeeper_server.four_letter("ruok") == "imok"
    assert "Mode: standalone" in zookeeper_server.four_letter("srvr")


@pytest.mark.parametrize("hard", [False, True], ids=["sigterm", "sigkill"])
def test_broker_restart_on_same_port(kafka_broker: Any, fresh_topic: str, hard: bool) -> None:
    bootstrap = kafka_broker.bootstrap
    cluster_id = kafka_broker.metadata()["cluster_id"]
    create_topic(bootstrap, fresh_topic)
    # One producer across the restart, like a registry's long-lived producer.
    producer = new_producer(bootstrap, **{"enable.idempotence": True})
    produce(producer, fresh_topic, [(b"before", b"1")])

    started = time.monotonic()
    kafka_broker.restart(hard=hard)
    elapsed = time.monotonic() - started

    assert kafka_broker.bootstrap == bootstrap
    assert kafka_broker.metadata()["cluster_id"] == cluster_id  # same data, not a new cluster
    produce(producer, fresh_topic, [(b"after", b"2")])
    assert consume_all(bootstrap, fresh_topic, 2) == [(b"before", b"1"), (b"after", b"2")]
    assert elapsed < 60, f"restart took {elapsed:.1f}s"
