"""End to end through a real Kafka broker: SerializingProducer and DeserializingConsumer
with our serdes, against our real registry.

Keys are Avro strings, values dataclasses (through the to_dict/from_dict hooks). The
topic's first half is written with v1 of the value schema and its second half with
v2; one consumer with the v2 reader schema reads all of it in v2's shape, in order.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import DeserializingConsumer, KafkaException, SerializingProducer
from confluent_kafka.admin import AdminClient, NewTopic

from registry.client import SchemaRegistryClient
from registry.serde import (
    AvroDeserializer,
    AvroSerializer,
    avro_schema_json,
    dataclass_from_dict,
    dataclass_to_dict,
)

pytestmark = pytest.mark.integration

TIMEOUT = 60.0


@dataclass
class PaymentV1:
    id: int
    amount_cents: int
    currency: str


@dataclass
class PaymentV2:
    id: int
    amount_cents: int
    currency: str
    memo: str | None = None
    labels: list[str] = field(default_factory=list)


def create_topic(bootstrap: str, topic: str) -> None:
    """Create a one-partition topic; blocks until the broker confirms it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)],
                        operation_timeout=TIMEOUT)[topic].result(timeout=TIMEOUT)


def produce_all(bootstrap: str, topic: str, serializer: AvroSerializer, key_serializer: AvroSerializer,
                items: list[tuple[str, Any]]) -> None:
    """Produce `items` and block until every one is acknowledged (acks=all) or fail."""
    producer = SerializingProducer({"bootstrap.servers": bootstrap, "acks": "all",
                                    "key.serializer": key_serializer, "value.serializer": serializer})
    errors: list[Any] = []
    for key, value in items:
        producer.produce(topic, key=key, value=value,
                         on_delivery=lambda err, msg: errors.append(err) if err else None)
    assert producer.flush(TIMEOUT) == 0, "every message is delivered before the deadline"
    assert errors == [], "and none failed"


def test_produce_and_consume_through_kafka(kafka_bootstrap: str, registry_url: str) -> None:
    topic = f"serde-e2e-{uuid.uuid4().hex[:12]}"
    create_topic(kafka_bootstrap, topic)
    with SchemaRegistryClient({"url": registry_url}) as client:
        v1 = avro_schema_json(PaymentV1, namespace="pay", name="Payment")
        v2 = avro_schema_json(PaymentV2, namespace="pay", name="Payment")
        keys = AvroSerializer(client, '"string"')
        first = [(f"k{i}", PaymentV1(i, 100 * i, "EUR")) for i in range(25)]
        second = [(f"k{i}", PaymentV2(i, 100 * i, "USD", memo=f"m{i}", labels=["x"])) for i in range(25, 50)]
        produce_all(kafka_bootstrap, topic, AvroSerializer(client, v1, to_dict=dataclass_to_dict), keys, first)
        produce_all(kafka_bootstrap, topic, AvroSerializer(client, v2, to_dict=dataclass_to_dict), keys, second)
        assert client.get_versions(f"{topic}-value") == [1, 2], "v1 then v2 registered under {topic}-value"

        consumer = DeserializingConsumer({
            "bootstrap.servers": kafka_bootstrap, "group.id": f"g-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "key.deserializer": AvroDeserializer(client),
            "value.deserializer": AvroDeserializer(client, v2, from_dict=dataclass_from_dict(PaymentV2)),
        })
        received: list[tuple[str, Any]] = []
        try:
            consumer.subscribe([topic])
            deadline = time.monotonic() + TIMEOUT
            while len(received) < 50:
                assert time.monotonic() < deadline, f"only {len(received)} of 50 messages arrived in time"
                msg = consumer.poll(1.0)
                if msg is None:
                    continue
                if msg.error():
                    raise KafkaException(msg.error())
                received.append((msg.key(), msg.value()))
        finally:
            consumer.close()

    expected = [(k, PaymentV2(p.id, p.amount_cents, p.currency)) for k, p in first] + second
    assert received == expected, \
        "every message arrives in order, v1 ones in v2's shape (memo None, labels []), v2 ones as written"
