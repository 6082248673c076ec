"""Serializer counters, in a Prometheus registry the application gives (optional)."""
from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError
from prometheus_client import CollectorRegistry

from registry.serde import AvroDeserializer, AvroSerializer

SCHEMA = json.dumps({"type": "record", "name": "M", "fields": [{"name": "a", "type": "int"}]})
CONTEXT = SerializationContext("metrics-topic", MessageField.VALUE)


def value(registry: CollectorRegistry, name: str, direction: str) -> float:
    return registry.get_sample_value(name, {"direction": direction, "format": "avro"}) or 0.0


def test_messages_lookups_and_errors_are_counted_per_direction():
    client = SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4().hex}"})
    metrics = CollectorRegistry()
    serializer = AvroSerializer(client, SCHEMA, conf={"metrics.registry": metrics})
    deserializer = AvroDeserializer(client, conf={"metrics.registry": metrics})
    frames = [serializer({"a": n}, CONTEXT) for n in range(5)]
    assert [deserializer(f, CONTEXT) for f in frames] == [{"a": n} for n in range(5)]
    assert value(metrics, "schema_registry_serde_messages_total", "serialize") == 5
    assert value(metrics, "schema_registry_serde_messages_total", "deserialize") == 5
    assert value(metrics, "schema_registry_serde_schema_lookups_total", "serialize") == 1, "once per subject"
    assert value(metrics, "schema_registry_serde_schema_lookups_total", "deserialize") == 1, "once per id"
    with pytest.raises(Exception):
        serializer({"a": "not an int"}, CONTEXT)
    with pytest.raises(SerializationError):
        deserializer(b"\x07garbage", CONTEXT)
    assert value(metrics, "schema_registry_serde_errors_total", "serialize") == 1
    assert value(metrics, "schema_registry_serde_errors_total", "deserialize") == 1
    # A second serializer on the same registry counts into the same counters.
    AvroSerializer(client, SCHEMA, conf={"metrics.registry": metrics})({"a": 9}, CONTEXT)
    assert value(metrics, "schema_registry_serde_messages_total", "serialize") == 6


def test_without_a_registry_nothing_is_counted_or_wrapped():
    client = SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4().hex}"})
    serializer = AvroSerializer(client, SCHEMA)
    serializer({"a": 1}, CONTEXT)
    assert serializer._metrics is None and all(e.__name__ != "counted" for e in serializer._by_id.values())
