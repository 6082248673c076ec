"""Interop with confluent-kafka's JSON Schema and Protobuf serdes, both ways, through our
real registry; and the any-format reader on what either wrote.

For the same schema and value the bytes must be identical (same schema id, same
framing, same payload), each side must read what the other wrote, and the schemas the
two register (ours as .proto text, theirs as a base64 FileDescriptorProto) must
dedupe to one id. Each direction runs with our client and with confluent-kafka's.
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry import json_schema as their_json
from confluent_kafka.schema_registry import protobuf as their_protobuf
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError
from google.protobuf import timestamp_pb2

from registry.serde import (
    AnyFormatDeserializer,
    AvroSerializer,
    JSONDeserializer,
    JSONSerializer,
    ProtobufDeserializer,
    ProtobufSerializer,
    register_message_type,
)
from tests.protobuf_classes import generated

pytestmark = pytest.mark.integration

ADDRESS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
PERSON = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Person", "type": "object",
    "properties": {
        "name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "score": {"oneOf": [{"type": "null"}, {"type": "number"}]},
    },
    "required": ["name"],
}
PEOPLE = [
    {"name": "Ann", "age": 31, "tags": ["a", "ü"], "score": 1.5},
    {"name": "Bob", "score": None},
    {"name": "", "age": 0, "tags": []},
]


@pytest.fixture(params=["our client", "confluent client"])
def either_client(request: pytest.FixtureRequest, client: Any, confluent_client: Any) -> Any:
    return client if request.param == "our client" else confluent_client


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    return generated(tmp_path_factory.mktemp("protos"))


def ctx_of(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


# ---- JSON Schema ---------------------------------------------------------------------------

@pytest.mark.parametrize("value", PEOPLE)
def test_json_both_ways_byte_identical(either_client: Any, confluent_client: Any, topic: str,
                                       value: dict[str, Any]) -> None:
    ctx = ctx_of(topic)
    schema = json.dumps(PERSON)
    ours = JSONSerializer(schema, either_client)(value, ctx)
    theirs = their_json.JSONSerializer(schema, confluent_client)(value, ctx)
    assert ours == theirs, "same schema and value: byte-identical messages"
    assert their_json.JSONDeserializer(None, schema_registry_client=confluent_client)(ours, ctx) == value, \
        "confluent-kafka reads (and validates) what ours wrote"
    assert JSONDeserializer(None, schema_registry_client=either_client)(theirs, ctx) == value, \
        "ours reads (and validates against the writer's schema) what confluent-kafka wrote"
    assert JSONDeserializer(schema)(theirs, ctx) == value, "and with a reader schema, without a registry"


def test_json_validation_on_write_and_read(client: Any, confluent_client: Any, topic: str) -> None:
    ctx = ctx_of(topic)
    schema = json.dumps(PERSON)
    with pytest.raises(SerializationError, match="'name' is a required property"):
        JSONSerializer(schema, client)({"age": 3}, ctx)
    with pytest.raises(SerializationError, match="-1 is less than the minimum"):
        JSONSerializer(schema, client)({"name": "x", "age": -1}, ctx)
    unchecked = JSONSerializer(schema, client, conf={"validate": False})({"age": 3}, ctx)
    assert their_json.JSONDeserializer(None, schema_registry_client=confluent_client,
                                       conf={"validate": False})(unchecked, ctx) == {"age": 3}, \
        "validate=False writes what the schema rejects, as confluent-kafka's does"
    with pytest.raises(SerializationError, match="'name' is a required property"):
        JSONDeserializer(None, schema_registry_client=client)(unchecked, ctx)
    assert JSONDeserializer(None, schema_registry_client=client, conf={"validate": False})(unchecked, ctx) \
        == {"age": 3}, "validation on read is optional"


def test_json_references_resolve_by_name(either_client: Any, confluent_client: Any, topic: str) -> None:
    ctx = ctx_of(topic)
    address_subject = f"{topic}-address"
    version = confluent_client.register_schema_full_response(
        address_subject, Schema(json.dumps(ADDRESS), "JSON")).version or 1
    with_ref = dict(PERSON, properties=dict(PERSON["properties"], home={"$ref": "address.json"}))
    schema = Schema(json.dumps(with_ref), "JSON", [SchemaReference("address.json", address_subject, version)])
    value = {"name": "Ann", "home": {"city": "Oslo"}}
    ours = JSONSerializer(schema, either_client)(value, ctx)
    assert ours == their_json.JSONSerializer(schema, confluent_client)(value, ctx), "byte-identical"
    assert JSONDeserializer(None, schema_registry_client=either_client)(ours, ctx) == value
    with pytest.raises(SerializationError, match="'city' is a required property"):
        JSONSerializer(schema, either_client)({"name": "Ann", "home": {}}, ctx)


# ---- Protobuf ------------------------------------------------------------------------------

def orders(shop: SimpleNamespace) -> list[Any]:
    order_pb2, common_pb2 = shop.order_pb2, shop.common_pb2
    full = order_pb2.Order(id=2 ** 40, customer="Ann", lines=[order_pb2.Order.Line(sku="tea", qty=2)],
                           total=common_pb2.Money(currency="EUR", units=-3), status=order_pb2.Order.PAID,
                           labels={"k": "v"}, note="")
    full.placed.seconds = 1_700_000_000
    return [full, order_pb2.Order(), order_pb2.Order(id=1, customer="ü")]


@pytest.mark.parametrize("which", ["Order", "Order.Line", "Refund", "Timestamp"])
def test_protobuf_both_ways_byte_identical(either_client: Any, confluent_client: Any, topic: str,
                                           shop: SimpleNamespace, which: str) -> None:
    """Each message-index case: [0] (the shortcut byte), a nested message [0, 1], a second
    top-level message [1], and a well-known type registered without references."""
    ctx = ctx_of(topic)
    order_pb2 = shop.order_pb2
    cls, values = {
        "Order": (order_pb2.Order, orders(shop)),
        "Order.Line": (order_pb2.Order.Line, [order_pb2.Order.Line(sku="x", qty=-1)]),
        "Refund": (order_pb2.Refund, [order_pb2.Refund(order_id=9)]),
        "Timestamp": (timestamp_pb2.Timestamp, [timestamp_pb2.Timestamp(seconds=5, nanos=6)]),
    }[which]
    conf = {"skip.known.types": False} if which == "Timestamp" else {}
    ours_ser = ProtobufSerializer(cls, either_client, conf)
    their_ser = their_protobuf.ProtobufSerializer(cls, confluent_client, conf)
    for value in values:
        ours, theirs = ours_ser(value, ctx), their_ser(value, ctx)
        assert ours == theirs, "same message, same registry: byte-identical (one schema id for both)"
        assert their_protobuf.ProtobufDeserializer(cls, {})(ours, ctx) == value, "confluent-kafka reads ours"
        assert ProtobufDeserializer(cls)(theirs, ctx) == value, "ours reads confluent-kafka's"
        dynamic = ProtobufDeserializer(None, schema_registry_client=either_client)(theirs, ctx)
        assert dynamic.SerializeToString() == value.SerializeToString(), \
            "without a message class, the writer's class is built from the registry"
    batch = values + [None]
    assert ours_ser.serialize_batch(batch, ctx) == [their_ser(v, ctx) for v in values] + [None], \
        "serialize_batch writes what one call per message writes"
    assert ProtobufDeserializer(cls).deserialize_batch([their_ser(v, ctx) for v in values] + [None], ctx) \
        == batch, "deserialize_batch reads what one call per message reads"
    # Order.Line is [0, 1]: protoc places the map's LabelsEntry (declared first) at 0.
    framing = {"Order": b"\x00", "Order.Line": b"\x04\x00\x02", "Refund": b"\x02\x02", "Timestamp": b"\x00"}
    assert ours[5:5 + len(framing[which])] == framing[which], "Confluent's message-index bytes"


def test_protobuf_imports_registered_as_references(client: Any, topic: str, shop: SimpleNamespace) -> None:
    ctx = ctx_of(topic)
    ProtobufSerializer(shop.order_pb2.Order, client)(shop.order_pb2.Order(id=1), ctx)
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.schema.schema_type == "PROTOBUF"
    assert [(r.name, r.subject) for r in latest.schema.references] == [
        ("shop/common.proto", "shop/common.proto")], \
        "the imported file is a reference named by its import path; google/protobuf/* is not registered"
    assert 'import "shop/common.proto";' in latest.schema.schema_str
    again = register_message_type(client, f"{topic}-value", shop.order_pb2.Order)
    assert again.schema_id == latest.schema_id, "registering the class by hand finds the same schema"
    refund = register_message_type(client, f"{topic}-refund", shop.order_pb2.Refund)
    assert refund.schema_id == latest.schema_id, "another message of the same file: the same schema"


def test_protobuf_deprecated_format(client: Any, topic: str, shop: SimpleNamespace) -> None:
    """use.deprecated.format: indexes as plain varints, as confluent-kafka < 1.8 wrote them."""
    ctx = ctx_of(topic)
    refund = shop.order_pb2.Refund(order_id=3)
    old = ProtobufSerializer(shop.order_pb2.Refund, client, {"use.deprecated.format": True})(refund, ctx)
    new = ProtobufSerializer(shop.order_pb2.Refund, client)(refund, ctx)
    assert old[5:7] == b"\x01\x01" and new[5:7] == b"\x02\x02", "[1]: plain 1,1 against zig-zag 2,2"
    assert ProtobufDeserializer(shop.order_pb2.Refund, {"use.deprecated.format": True})(old, ctx) == refund
    reader = ProtobufDeserializer(None, {"use.deprecated.format": True}, schema_registry_client=client)
    assert reader(old, ctx).order_id == 3, "the writer's message found by the plain-varint indexes"


def test_protobuf_bad_framing_is_a_serialization_error(client: Any, topic: str,
                                                       shop: SimpleNamespace) -> None:
    ctx = ctx_of(topic)
    good = ProtobufSerializer(shop.order_pb2.Refund, client)(shop.order_pb2.Refund(order_id=3), ctx)
    reader = ProtobufDeserializer(None, schema_registry_client=client)
    for bad, why in ((good[:5], "ends inside its message-index list"),
                     (good[:5] + b"\x02\x10", "out of range"),
                     (good[:5] + b"\xff" * 11, "longer than 10 bytes"),
                     (b"\x01" + good[1:], "magic byte")):
        with pytest.raises(SerializationError, match=why):
            reader(bad, ctx)


# ---- one reader for any format -------------------------------------------------------------

def test_any_format_reader(client: Any, confluent_client: Any, topic: str, shop: SimpleNamespace) -> None:
    ctx = ctx_of(topic)
    avro = AvroSerializer(client, '{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}')
    order = orders(shop)[0]
    messages = [
        (avro({"a": 5}, SerializationContext(f"{topic}-avro", MessageField.VALUE)), {"a": 5}),
        (their_json.JSONSerializer(json.dumps(PERSON), confluent_client)(
            PEOPLE[0], SerializationContext(f"{topic}-json", MessageField.VALUE)), PEOPLE[0]),
        (their_protobuf.ProtobufSerializer(shop.order_pb2.Refund, confluent_client, {})(
            shop.order_pb2.Refund(order_id=7), SerializationContext(f"{topic}-pb", MessageField.VALUE)),
         {"order_id": 7}),  # an unset message field has presence: absent
    ]
    reader = AnyFormatDeserializer(client)
    for data, expected in messages:
        assert reader(data, ctx) == expected, "each format decoded without being told which"
    as_dict = reader(ProtobufSerializer(shop.order_pb2.Order, client)(order, ctx), ctx)
    assert as_dict["id"] == 2 ** 40 and as_dict["lines"] == [{"sku": "tea", "qty": 2}], \
        "int64 as an int, repeated messages as lists of dicts, field names as declared"
    assert as_dict["total"] == {"currency": "EUR", "units": -3} and as_dict["labels"] == {"k": "v"}
