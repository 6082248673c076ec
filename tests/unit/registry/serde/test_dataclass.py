"""Avro schemas from dataclasses, and dataclass instances through the serdes and back."""
from __future__ import annotations

import datetime
import enum
import json
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any, Optional

import fastavro
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

from registry.serde import (
    TIMESTAMP_MICROS,
    AvroDecimal,
    AvroDeserializer,
    AvroSerializer,
    Int32,
    avro_schema_json,
    avro_schema_of,
    dataclass_from_dict,
    dataclass_to_dict,
)

UTC = datetime.timezone.utc


class Tier(enum.Enum):
    FREE = "free"
    PRO = "pro"


@dataclass
class Address:
    street: str
    city: str


@dataclass
class Customer:
    """A paying customer."""

    id: int
    name: str
    signed_up: datetime.datetime
    birthday: datetime.date
    balance: Annotated[Decimal, AvroDecimal(precision=12, scale=2)]
    tier: Tier
    home: Address
    ratio: float = 1.0
    active: bool = True
    email: Optional[str] = None
    work: Address | None = None
    nickname: Optional[str] = "anon"
    tags: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    previous: list[Address] = field(default_factory=list)
    last_seen: Annotated[datetime.datetime, TIMESTAMP_MICROS] | None = None
    small: Int32 = 0
    ref: uuid.UUID | None = None
    note: str = field(default="", metadata={"doc": "free text"})


def by_name(schema: dict[str, Any]) -> dict[str, Any]:
    return {f["name"]: f for f in schema["fields"]}


def test_schema_types_follow_the_documented_mapping() -> None:
    schema = avro_schema_of(Customer, namespace="crm")
    fields = by_name(schema)
    assert (schema["type"], schema["name"], schema["namespace"]) == ("record", "Customer", "crm")
    assert schema["doc"] == "A paying customer.", "the class docstring becomes the record's doc"
    assert fields["id"]["type"] == "long" and fields["name"]["type"] == "string"
    assert fields["ratio"] == {"name": "ratio", "type": "double", "default": 1.0}, "defaults carry over"
    assert fields["active"]["type"] == "boolean"
    assert fields["signed_up"]["type"] == {"type": "long", "logicalType": "timestamp-millis"}, \
        "datetime is timestamp-millis unless annotated"
    assert fields["last_seen"]["type"] == ["null", {"type": "long", "logicalType": "timestamp-micros"}]
    assert fields["birthday"]["type"] == {"type": "int", "logicalType": "date"}
    assert fields["balance"]["type"] == {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}
    assert fields["tier"]["type"] == {"type": "enum", "name": "Tier", "namespace": "crm", "symbols": ["FREE", "PRO"]}
    assert fields["small"]["type"] == "int", "Int32 narrows to Avro int"
    assert fields["ref"]["type"] == ["null", {"type": "string", "logicalType": "uuid"}]
    assert fields["note"]["doc"] == "free text", "field metadata doc becomes the field's doc"


def test_optional_is_a_union_with_null_and_a_null_default() -> None:
    fields = by_name(avro_schema_of(Customer))
    assert fields["email"]["type"] == ["null", "string"] and fields["email"]["default"] is None
    assert fields["nickname"]["type"] == ["string", "null"] and fields["nickname"]["default"] == "anon", \
        "a non-null default puts its branch first, as Avro requires of union defaults"


def test_collections_and_nested_records() -> None:
    fields = by_name(avro_schema_of(Customer))
    assert fields["tags"] == {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []}
    assert fields["scores"]["type"] == {"type": "map", "values": "double"} and fields["scores"]["default"] == {}
    assert fields["home"]["type"]["type"] == "record", "the first use of a nested class defines it"
    assert fields["work"]["type"] == ["null", "Address"], "later uses refer to it by name"
    assert fields["previous"]["type"] == {"type": "array", "items": "Address"}


def test_the_schema_is_valid_avro() -> None:
    fastavro.parse_schema(json.loads(avro_schema_json(Customer, namespace="crm")))


def test_a_decimal_needs_its_precision() -> None:
    @dataclass
    class Price:
        amount: Decimal

    with pytest.raises(TypeError, match="precision"):
        avro_schema_of(Price)


def test_types_with_no_avro_counterpart_are_refused() -> None:
    @dataclass
    class Odd:
        keys: dict[int, str]

    with pytest.raises(TypeError, match="string keys"):
        avro_schema_of(Odd)
    with pytest.raises(TypeError, match="not a dataclass"):
        avro_schema_of(int)


@dataclass
class Node:
    name: str
    children: list[Node] = field(default_factory=list)


def test_recursive_dataclasses_refer_to_themselves_by_name() -> None:
    schema = avro_schema_of(Node)
    assert by_name(schema)["children"]["type"] == {"type": "array", "items": "Node"}
    fastavro.parse_schema(schema)


def customer() -> Customer:
    return Customer(
        id=1, name="Ada", signed_up=datetime.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
        birthday=datetime.date(1990, 12, 10), balance=Decimal("1234.50"), tier=Tier.PRO,
        home=Address("1 Main St", "Springfield"), email="ada@example.com", work=Address("2 Side St", "Shelbyville"),
        tags=["a", "b"], scores={"q1": 0.5}, previous=[Address("0 Old Rd", "Ogdenville")],
        last_seen=datetime.datetime(2024, 6, 1, 0, 0, 0, 123456, tzinfo=UTC), small=7,
        ref=uuid.UUID("12345678-1234-5678-1234-567812345678"))


def test_dataclasses_round_trip_through_the_serdes() -> None:
    registry = SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4().hex}"})
    ctx = SerializationContext("customers", MessageField.VALUE)
    schema = avro_schema_json(Customer, namespace="crm")
    serializer = AvroSerializer(registry, schema, to_dict=dataclass_to_dict)
    deserializer = AvroDeserializer(registry, schema, from_dict=dataclass_from_dict(Customer))
    original = customer()
    assert deserializer(serializer(original, ctx), ctx) == original, \
        "enums, nested and optional records, decimals, dates and timestamps come back equal"
    sparse = Customer(id=2, name="Bo", signed_up=original.signed_up, birthday=original.birthday,
                      balance=Decimal("0.00"), tier=Tier.FREE, home=original.home)
    assert deserializer(serializer(sparse, ctx), ctx) == sparse, "defaults and None round-trip too"
    node = Node("root", [Node("leaf")])
    node_schema = avro_schema_json(Node)
    node_data = AvroSerializer(registry, node_schema, to_dict=dataclass_to_dict)(node, ctx)
    assert AvroDeserializer(registry, node_schema, from_dict=dataclass_from_dict(Node))(node_data, ctx) == node


def test_to_dict_is_shallow_where_fastavro_takes_values_as_they_are() -> None:
    original = customer()
    as_dict = dataclass_to_dict(original)
    assert as_dict["tags"] is original.tags, "lists of plain values are not copied"
    assert as_dict["tier"] == "PRO" and as_dict["home"] == {"street": "1 Main St", "city": "Springfield"}
    assert dataclass_to_dict({"already": "a dict"}) == {"already": "a dict"}, "non-dataclasses pass through"
