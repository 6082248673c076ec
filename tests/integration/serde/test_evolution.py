"""Evolution on read, against the real registry: v1 data read with a v2 reader schema.

v2 is registered as the subject's next version under BACKWARD compatibility (the
registry checks it); data already written with v1 must then read in v2's shape:
added fields take their defaults, removed fields are dropped, int is promoted to long.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer as TheirDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from registry.serde import (
    AvroDeserializer,
    AvroSerializer,
    avro_schema_json,
    dataclass_from_dict,
    dataclass_to_dict,
)

pytestmark = pytest.mark.integration

V1 = {"type": "record", "name": "Reading", "namespace": "iot", "fields": [
    {"name": "sensor", "type": "string"},
    {"name": "value", "type": "int"},
    {"name": "unit", "type": "string"},
]}
V2 = {"type": "record", "name": "Reading", "namespace": "iot", "fields": [
    {"name": "sensor", "type": "string"},
    {"name": "value", "type": "long"},
    {"name": "site", "type": ["null", "string"], "default": None},
    {"name": "quality", "type": "double", "default": 1.0},
]}


def test_v1_data_reads_with_a_v2_reader(client: Any, confluent_client: Any, topic: str, subject: str) -> None:
    ctx = SerializationContext(topic, MessageField.VALUE)
    v1_messages = AvroSerializer(client, json.dumps(V1)).serialize_batch(
        [{"sensor": f"s{i}", "value": i, "unit": "C"} for i in range(5)], ctx)
    assert client.test_compatibility(subject, Schema(json.dumps(V2), "AVRO")), \
        "the registry itself accepts v2 as BACKWARD compatible with v1"
    v2_id = client.register_schema(subject, Schema(json.dumps(V2), "AVRO"))
    v2_message = AvroSerializer(client, json.dumps(V2))({"sensor": "new", "value": 2 ** 40, "site": "lab",
                                                          "quality": 0.5}, ctx)
    assert v2_message[1:5] == v2_id.to_bytes(4, "big")

    reader = AvroDeserializer(client, json.dumps(V2))
    expected = [{"sensor": f"s{i}", "value": i, "site": None, "quality": 1.0} for i in range(5)]
    assert reader.deserialize_batch(v1_messages, ctx) == expected, \
        "v1 data in v2's shape: defaults filled in, the removed field dropped"
    assert reader(v2_message, ctx) == {"sensor": "new", "value": 2 ** 40, "site": "lab", "quality": 0.5}, \
        "the same reader reads v2 data as written"
    assert [TheirDeserializer(confluent_client, json.dumps(V2))(m, ctx) for m in v1_messages] == expected, \
        "confluent-kafka resolves v1 into v2 the same way"

    latest = AvroDeserializer(client, conf={"use.latest.version": True})
    assert latest(v1_messages[0], ctx) == expected[0], "use.latest.version reads into v2, the latest version"
    assert AvroDeserializer(client)(v1_messages[0], ctx) == {"sensor": "s0", "value": 0, "unit": "C"}, \
        "without a reader schema, data comes back in its writer's shape"


@dataclass
class ReadingV1:
    sensor: str
    value: int


@dataclass
class ReadingV2:
    sensor: str
    value: int
    site: str | None = None
    tags: list[str] | None = None


def test_dataclass_v1_reads_as_dataclass_v2(client: Any, topic: str) -> None:
    ctx = SerializationContext(topic, MessageField.VALUE)
    v1_schema = avro_schema_json(ReadingV1, namespace="iot", name="Reading")
    v2_schema = avro_schema_json(ReadingV2, namespace="iot", name="Reading")
    data = AvroSerializer(client, v1_schema, to_dict=dataclass_to_dict)(ReadingV1("t1", 21), ctx)
    AvroSerializer(client, v2_schema, to_dict=dataclass_to_dict)(ReadingV2("t2", 22, "roof"), ctx)
    reader = AvroDeserializer(client, v2_schema, from_dict=dataclass_from_dict(ReadingV2))
    assert reader(data, ctx) == ReadingV2("t1", 21), \
        "a v1 dataclass written before the evolution reads as the v2 dataclass, new fields at their defaults"
