"""End to end through a real Kafka broker with JSON Schema and Protobuf values:
SerializingProducer and DeserializingConsumer with our serdes and confluent-kafka's,
against our real registry.

One topic carries JSON values written by our serializer (a dataclass through
`json_dict_of`, its schema from `json_schema_of`) and by confluent-kafka's; another
carries Protobuf values written by both, and by a second version of the message that
adds a field. Each is read back in order by our deserializer and confluent-kafka's,
and both topics by the one any-format reader.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import DeserializingConsumer, KafkaException, SerializingProducer
from confluent_kafka.schema_registry import json_schema as their_json
from confluent_kafka.schema_registry import protobuf as their_protobuf
from confluent_kafka.serialization import StringDeserializer, StringSerializer
from google.protobuf import timestamp_pb2

from registry.client import SchemaRegistryClient
from registry.serde import (
    AnyFormatDeserializer,
    JSONDeserializer,
    JSONSerializer,
    ProtobufDeserializer,
    ProtobufSerializer,
)
from registry.serde.dataclass_json_schema import json_dict_of, json_schema_json
from tests.integration.serde.test_kafka_e2e import create_topic
from tests.protobuf_classes import generated, order_v2

pytestmark = pytest.mark.integration

TIMEOUT = 60.0


@dataclass
class Reading:
    sensor: str
    value: float
    tags: list[str] = field(default_factory=list)


def produce(bootstrap: str, topic: str, serializer: Any, items: list[tuple[str, Any]]) -> None:
    """Produce `items` and block until every one is acknowledged (acks=all) or fail."""
    producer = SerializingProducer({"bootstrap.servers": bootstrap, "acks": "all",
                                    "key.serializer": StringSerializer(), "value.serializer": serializer})
    errors: list[Any] = []
    for key, value in items:
        producer.produce(topic, key=key, value=value,
                         on_delivery=lambda err, msg: errors.append(err) if err else None)
    assert producer.flush(TIMEOUT) == 0, "every message is delivered before the deadline"
    assert errors == [], "and none failed"


def consume(bootstrap: str, topic: str, deserializer: Any, count: int) -> list[tuple[str, Any]]:
    """The first `count` messages of `topic`, deserialized; fails after TIMEOUT."""
    consumer = DeserializingConsumer({
        "bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex}",
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
        "key.deserializer": StringDeserializer(), "value.deserializer": deserializer,
    })
    received: list[tuple[str, Any]] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT
        while len(received) < count:
            assert time.monotonic() < deadline, f"only {len(received)} of {count} messages arrived in time"
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            received.append((msg.key(), msg.value()))
    finally:
        consumer.close()
    return received


def test_json_through_kafka(kafka_bootstrap: str, registry_url: str) -> None:
    topic = f"serde-json-{uuid.uuid4().hex[:12]}"
    create_topic(kafka_bootstrap, topic)
    with SchemaRegistryClient({"url": registry_url}) as client:
        schema = json_schema_json(Reading)
        ours = [(f"k{i}", Reading(f"s{i}", i / 4, ["t"] * (i % 3))) for i in range(20)]
        theirs = [(f"k{i}", {"sensor": f"s{i}", "value": i / 4}) for i in range(20, 40)]
        produce(kafka_bootstrap, topic, JSONSerializer(schema, client, to_dict=json_dict_of), ours)
        produce(kafka_bootstrap, topic, their_json.JSONSerializer(schema, client), theirs)
        assert client.get_versions(f"{topic}-value") == [1], "both serializers registered one schema"
        expected = [(k, json_dict_of(r)) for k, r in ours] + theirs

        as_objects = consume(kafka_bootstrap, topic, JSONDeserializer(
            None, schema_registry_client=client, from_dict=lambda d, ctx: Reading(**d)), 40)
        assert as_objects == [(k, Reading(**v)) for k, v in expected], \
            "ours reads every message in order, validated against the writer's schema, into dataclasses"
        assert consume(kafka_bootstrap, topic, their_json.JSONDeserializer(
            schema), 40) == expected, "confluent-kafka's reads all of them"
        assert consume(kafka_bootstrap, topic, AnyFormatDeserializer(client), 40) == expected, \
            "the any-format reader too"


def test_protobuf_through_kafka(kafka_bootstrap: str, registry_url: str,
                                tmp_path_factory: pytest.TempPathFactory) -> None:
    shop = generated(tmp_path_factory.mktemp("protos"))
    Order, Refund = shop.order_pb2.Order, shop.order_pb2.Refund
    topic = f"serde-pb-{uuid.uuid4().hex[:12]}"
    create_topic(kafka_bootstrap, topic)
    with SchemaRegistryClient({"url": registry_url}) as client:
        OrderV2 = order_v2()
        ours = [(f"k{i}", Order(id=i, customer=f"c{i}", lines=[Order.Line(sku="x", qty=i)])) for i in range(20)]
        theirs = [(f"k{i}", Order(id=i, status=Order.PAID, labels={"n": str(i)})) for i in range(20, 30)]
        newer = [(f"k{i}", OrderV2(id=i, customer=f"c{i}", channel="web")) for i in range(30, 40)]
        produce(kafka_bootstrap, topic, ProtobufSerializer(Order, client), ours)
        produce(kafka_bootstrap, topic, their_protobuf.ProtobufSerializer(Order, client, {}), theirs)
        assert client.get_versions(f"{topic}-value") == [1], \
            "ours (.proto text) and confluent-kafka's (a base64 descriptor) are one schema"
        produce(kafka_bootstrap, topic, ProtobufSerializer(OrderV2, client), newer)
        assert client.get_versions(f"{topic}-value") == [1, 2], "the added field is a second version"
        expected = ours + theirs + [(k, Order.FromString(v.SerializeToString())) for k, v in newer]
        assert consume(kafka_bootstrap, topic, ProtobufDeserializer(Order), 40) == expected, \
            "ours reads every message in order, v2 ones with v1's class (the new field kept unknown)"
        assert consume(kafka_bootstrap, topic, their_protobuf.ProtobufDeserializer(Order, {}), 40) == expected, \
            "confluent-kafka's reads all of them"
        dicts = consume(kafka_bootstrap, topic, AnyFormatDeserializer(client), 40)
        assert [(k, v["id"], v["customer"]) for k, v in dicts] == [(k, o.id, o.customer) for k, o in expected], \
            "the any-format reader decodes them as dicts from the writer's registered schema"
        assert ["channel" in v for _, v in dicts] == [False] * 30 + [True] * 10, \
            "each in its own writer's shape: v2's field only in v2's messages"
        assert dicts[-1][1]["channel"] == "web"

        # A second message type on the same topic (a TopicRecordNameStrategy subject each).
        strategy = {"subject.name.strategy.type": "TOPIC_RECORD"}
        mixed = [("a", Refund(order_id=1)), ("b", timestamp_pb2.Timestamp(seconds=9))]
        produce(kafka_bootstrap, topic, ProtobufSerializer(Refund, client, strategy), mixed[:1])
        produce(kafka_bootstrap, topic, ProtobufSerializer(timestamp_pb2.Timestamp, client, strategy), mixed[1:])
        tail = consume(kafka_bootstrap, topic, AnyFormatDeserializer(client), 42)[40:]
        assert tail == [("a", {"order_id": 1}), ("b", "1970-01-01T00:00:09Z")], \
            "each message is decoded with its own writer's message type (Timestamp by its JSON mapping)"
