"""Interop with confluent-kafka's Avro serdes, both ways, through our real registry.

Bytes written by `confluent_kafka.schema_registry.avro.AvroSerializer` must decode
with ours and ours with theirs, and for the same schema and value the bytes must be
identical. Each direction is run with each client (ours and confluent-kafka's), since
our serdes must accept either.
"""
from __future__ import annotations

import datetime
import decimal
import json
from typing import Any

import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer as TheirDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as TheirSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from registry.serde import AvroDeserializer, AvroSerializer

pytestmark = pytest.mark.integration

UTC = datetime.timezone.utc
EVENT = {
    "type": "record", "name": "Event", "namespace": "interop", "fields": [
        {"name": "id", "type": "long"},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "score", "type": ["null", "double"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "string"}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [{"name": "n", "type": "int"}]}},
        {"name": "blob", "type": "bytes"},
        {"name": "flag", "type": "boolean"},
        {"name": "ratio", "type": "float"},
    ]}
EVENT_VALUE = {
    "id": 2 ** 40, "at": datetime.datetime(2024, 2, 29, 23, 59, 59, 999000, tzinfo=UTC),
    "day": datetime.date(2024, 2, 29), "amount": decimal.Decimal("-12345.67"), "score": None,
    "tags": ["x", "ÿ", ""], "attrs": {"k": "v"}, "kind": "B", "inner": {"n": -1}, "blob": b"\x00\xff",
    "flag": False, "ratio": 0.5,
}
CASES = [
    pytest.param(json.dumps(EVENT), EVENT_VALUE, id="record-with-logical-types"),
    pytest.param(json.dumps(EVENT), dict(EVENT_VALUE, score=1.25, tags=[]), id="record-other-branches"),
    pytest.param('{"type": "string"}', "héllo", id="string"),
    pytest.param('{"type": "long"}', -5, id="long"),
    pytest.param('{"type": "bytes"}', b"raw \x00 bytes", id="top-level-bytes-are-raw"),
    pytest.param('["null", "string", "long"]', 7, id="top-level-union"),
]


@pytest.fixture(params=["our client", "confluent client"])
def either_client(request: pytest.FixtureRequest, client: Any, confluent_client: Any) -> Any:
    return client if request.param == "our client" else confluent_client


@pytest.mark.parametrize("schema, value", CASES)
def test_confluent_bytes_decode_with_ours(either_client: Any, confluent_client: Any, topic: str,
                                          schema: str, value: Any) -> None:
    ctx = SerializationContext(topic, MessageField.VALUE)
    theirs = TheirSerializer(confluent_client, schema)(value, ctx)
    assert AvroDeserializer(either_client)(theirs, ctx) == value, "ours reads what confluent-kafka wrote"
    assert AvroDeserializer(either_client, schema)(theirs, ctx) == value, "also with the same reader schema"


@pytest.mark.parametrize("schema, value", CASES)
def test_our_bytes_decode_with_confluents(either_client: Any, confluent_client: Any, topic: str,
                                          schema: str, value: Any) -> None:
    ctx = SerializationContext(topic, MessageField.VALUE)
    ours = AvroSerializer(either_client, schema)(value, ctx)
    assert TheirDeserializer(confluent_client)(ours, ctx) == value, "confluent-kafka reads what ours wrote"
    theirs = TheirSerializer(confluent_client, schema)(value, ctx)
    assert ours == theirs, "same schema, same value, same registry: byte-identical messages"


def test_keys_and_values_interoperate(client: Any, confluent_client: Any, topic: str) -> None:
    key_ctx = SerializationContext(topic, MessageField.KEY)
    ours = AvroSerializer(client, '"string"')("user-1", key_ctx)
    assert ours == TheirSerializer(confluent_client, '"string"')("user-1", key_ctx)
    assert client.get_subjects(subject_prefix=topic) == [f"{topic}-key"], \
        "both register the key schema under {topic}-key"


def test_confluent_serdes_accept_our_client(client: Any, confluent_client: Any, topic: str) -> None:
    ctx = SerializationContext(topic, MessageField.VALUE)
    schema = json.dumps(EVENT)
    # confluent-kafka's defaults: the ASSOCIATED strategy, which asks our client for
    # associations, gets a 404 from our registry and falls back to the topic strategy.
    data = TheirSerializer(client, schema)(EVENT_VALUE, ctx)
    assert data == TheirSerializer(confluent_client, schema)(EVENT_VALUE, ctx), \
        "switching only the client import keeps confluent-kafka's serializer working, byte for byte"
    assert TheirDeserializer(client)(data, ctx) == EVENT_VALUE
    schema_id = client.get_latest_version(f"{topic}-value").schema_id
    pinned = TheirSerializer(client, None, conf={"use.schema.id": schema_id, "auto.register.schemas": False})
    assert pinned(EVENT_VALUE, ctx) == data, "use.schema.id works too (it reaches into client._cache)"


def test_schema_references(client: Any, confluent_client: Any, topic: str) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaReference

    address = {"type": "record", "name": "Address", "namespace": "refs",
               "fields": [{"name": "city", "type": "string"}]}
    client.register_schema(f"{topic}-address", Schema(json.dumps(address), "AVRO"))
    customer = Schema(json.dumps({"type": "record", "name": "Customer", "namespace": "refs", "fields": [
        {"name": "name", "type": "string"}, {"name": "home", "type": "refs.Address"}]}), "AVRO",
        [SchemaReference("refs.Address", f"{topic}-address", 1)])
    ctx = SerializationContext(topic, MessageField.VALUE)
    value = {"name": "Ada", "home": {"city": "London"}}
    data = AvroSerializer(client, customer)(value, ctx)
    assert AvroDeserializer(client)(data, ctx) == value, "referenced types are fetched and resolved on read"
    assert TheirDeserializer(confluent_client)(data, ctx) == value, "and confluent-kafka reads it the same"
    assert data == TheirSerializer(confluent_client, customer)(value, ctx), "same bytes as theirs"
