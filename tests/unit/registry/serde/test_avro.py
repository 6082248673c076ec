"""The Avro serdes on confluent-kafka's in-process mock registry client.

Handing the serdes confluent-kafka's own (mock) client also checks that they accept
either client. What is protected here: the bytes are Confluent's wire format and
decode back; the registry is asked once per subject and once per id, never per
message; bad input fails with a clear SerializationError; evolution on read;
batches; configuration as confluent-kafka's; thread safety.
"""
from __future__ import annotations

import io
import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import fastavro
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as ConfluentDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError

from registry.serde import (
    AvroDeserializer,
    AvroSerializer,
    TruncatedPayload,
    UnknownMagicByte,
    UnknownSchemaId,
    avro_codec,
)

V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "item", "type": "string"},
    {"name": "qty", "type": "int"},
    {"name": "note", "type": ["null", "string"], "default": None},
]}
# v2: qty promoted to long, note removed, price added with a default
V2 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "item", "type": "string"},
    {"name": "qty", "type": "long"},
    {"name": "price", "type": "double", "default": 0.0},
]}
ORDER = {"id": 7, "item": "tea", "qty": 2, "note": None}


class CountingClient:
    """A registry client that counts the calls made on it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return method(*args, **kwargs)
        return counted


@pytest.fixture
def mock_client() -> Any:
    return SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4().hex}"})


@pytest.fixture
def ctx() -> SerializationContext:
    return SerializationContext("orders", MessageField.VALUE)


def fastavro_bytes(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def test_wire_format_is_magic_byte_id_and_avro(mock_client: Any, ctx: SerializationContext) -> None:
    data = AvroSerializer(mock_client, json.dumps(V1))(ORDER, ctx)
    schema_id = mock_client.get_latest_version("orders-value").schema_id
    assert data == b"\x00" + schema_id.to_bytes(4, "big") + fastavro_bytes(V1, ORDER), \
        "Confluent's framing: byte 0, the id in 4 big-endian bytes, then plain Avro binary"
    assert AvroDeserializer(mock_client)(data, ctx) == ORDER, "what is written reads back unchanged"


def test_bytes_match_confluent_kafka_both_ways(mock_client: Any, ctx: SerializationContext) -> None:
    ours = AvroSerializer(mock_client, json.dumps(V1))(ORDER, ctx)
    theirs = ConfluentSerializer(mock_client, json.dumps(V1),
                                 conf={"subject.name.strategy.type": "TOPIC"})(ORDER, ctx)
    assert ours == theirs, "byte-identical to confluent-kafka's serializer"
    assert ConfluentDeserializer(mock_client)(ours, ctx) == ORDER, "theirs reads ours"
    assert AvroDeserializer(mock_client)(theirs, ctx) == ORDER, "ours reads theirs"


@pytest.mark.parametrize("schema, value", [
    ("string", "hello"), ('"long"', 42), ('{"type": "bytes"}', b"\x00raw\xff"),
    ('["null", "string", "long"]', 5), ('{"type": "array", "items": "int"}', [1, 2, 3]),
])
def test_non_record_schemas_round_trip_and_match_confluent(mock_client: Any, ctx: SerializationContext,
                                                           schema: str, value: Any) -> None:
    ours = AvroSerializer(mock_client, schema)(value, ctx)
    theirs = ConfluentSerializer(mock_client, schema if schema[0] in '{["' else json.dumps(schema),
                                 conf={"subject.name.strategy.type": "TOPIC"})(value, ctx)
    assert ours == theirs, "primitives, top-level bytes (raw, unprefixed) and unions are framed as confluent-kafka does"
    assert AvroDeserializer(mock_client)(ours, ctx) == value


def test_registry_is_asked_once_per_subject_and_once_per_id(mock_client: Any) -> None:
    counting = CountingClient(mock_client)
    serializer = AvroSerializer(counting, json.dumps(V1))
    deserializer = AvroDeserializer(counting)
    topics = ["a", "b"]
    datas = [serializer(dict(ORDER, id=i), SerializationContext(t, MessageField.VALUE))
             for i in range(100) for t in topics]
    assert counting.calls == ["register_schema_full_response"] * 2, \
        "one registration per subject (two topics), none per message"
    counting.calls.clear()
    decoded = [deserializer(d, SerializationContext("a", MessageField.VALUE)) for d in datas]
    assert decoded[-1] == dict(ORDER, id=99)
    assert counting.calls == ["get_schema"] * 2, "one schema fetch per id (the mock gives each subject its id)"


def test_key_and_value_of_one_topic_get_their_own_subjects(mock_client: Any) -> None:
    serializer = AvroSerializer(mock_client, '"string"')
    key = serializer("k", SerializationContext("t", MessageField.KEY))
    value = serializer("v", SerializationContext("t", MessageField.VALUE))
    assert sorted(mock_client.get_subjects()) == ["t-key", "t-value"], "TopicNameStrategy: {topic}-key / -value"
    assert key[1:5] == mock_client.get_latest_version("t-key").schema_id.to_bytes(4, "big")
    assert value[1:5] == mock_client.get_latest_version("t-value").schema_id.to_bytes(4, "big")


def test_none_is_none_both_ways(mock_client: Any, ctx: SerializationContext) -> None:
    assert AvroSerializer(mock_client, json.dumps(V1))(None, ctx) is None, "a null value stays a tombstone"
    assert AvroDeserializer(mock_client)(None, ctx) is None


# ---- errors ------------------------------------------------------------------------------


def test_unknown_magic_byte_is_a_clear_error(mock_client: Any, ctx: SerializationContext) -> None:
    data = AvroSerializer(mock_client, json.dumps(V1))(ORDER, ctx)
    with pytest.raises(UnknownMagicByte, match="magic byte 0x01"):
        AvroDeserializer(mock_client)(b"\x01" + data[1:], ctx)
    with pytest.raises(SerializationError):
        AvroDeserializer(mock_client)(b'{"json": "not avro"}', ctx)


def test_unknown_schema_id_is_a_clear_error(mock_client: Any, ctx: SerializationContext) -> None:
    with pytest.raises(UnknownSchemaId, match="schema id 424242") as raised:
        AvroDeserializer(mock_client)(b"\x00" + (424242).to_bytes(4, "big") + b"\x02", ctx)
    assert isinstance(raised.value.__cause__, SchemaRegistryError), "the registry's answer is kept as the cause"


def test_every_truncation_is_a_clear_error(mock_client: Any, ctx: SerializationContext) -> None:
    data = AvroSerializer(mock_client, json.dumps(V1))(dict(ORDER, note="a longer note"), ctx)
    deserializer = AvroDeserializer(mock_client)
    for seen in (False, True):  # its header unknown yet, then known (each its own way in)
        if seen:
            assert deserializer(data, ctx)["note"] == "a longer note"
        for cut in range(len(data)):
            with pytest.raises(TruncatedPayload):
                deserializer(data[:cut], ctx)
    assert issubclass(TruncatedPayload, SerializationError), "inside DeserializingConsumer it is a SerializationError"


def test_bytearray_and_memoryview_input(mock_client: Any, ctx: SerializationContext) -> None:
    data = AvroSerializer(mock_client, json.dumps(V1))(ORDER, ctx)
    deserializer = AvroDeserializer(mock_client)
    for _ in range(2):  # the header unknown, then known
        assert deserializer(bytearray(data), ctx) == ORDER
        assert deserializer(memoryview(data), ctx) == ORDER


def test_an_object_that_does_not_fit_raises(mock_client: Any, ctx: SerializationContext) -> None:
    with pytest.raises((TypeError, ValueError)):
        AvroSerializer(mock_client, json.dumps(V1))({"id": "not a long", "item": "x", "qty": 1}, ctx)


# ---- evolution ------------------------------------------------------------------------------


def test_v1_data_reads_in_v2_shape(mock_client: Any, ctx: SerializationContext) -> None:
    v1_data = AvroSerializer(mock_client, json.dumps(V1))(dict(ORDER, note="gift"), ctx)
    reader = AvroDeserializer(mock_client, json.dumps(V2))
    assert reader(v1_data, ctx) == {"id": 7, "item": "tea", "qty": 2, "price": 0.0}, \
        "added field takes its default, removed field is dropped, int is read as long"
    v2_data = AvroSerializer(mock_client, json.dumps(V2))({"id": 8, "item": "jam", "qty": 1, "price": 2.5}, ctx)
    assert reader(v2_data, ctx) == {"id": 8, "item": "jam", "qty": 1, "price": 2.5}, \
        "the same deserializer reads data written with the reader's own schema"
    theirs = ConfluentDeserializer(mock_client, json.dumps(V2))
    assert reader(v1_data, ctx) == theirs(v1_data, ctx), "the same resolution as confluent-kafka's"


def test_an_incompatible_writer_is_a_clear_error(mock_client: Any, ctx: SerializationContext) -> None:
    data = AvroSerializer(mock_client, json.dumps(V1))(ORDER, ctx)
    needs_field = dict(V2, fields=V2["fields"] + [{"name": "required", "type": "string"}])
    with pytest.raises(SerializationError, match="cannot decode"):
        AvroDeserializer(mock_client, json.dumps(needs_field))(data, ctx)


def test_use_latest_version_on_read(mock_client: Any, ctx: SerializationContext) -> None:
    v1_data = AvroSerializer(mock_client, json.dumps(V1))(ORDER, ctx)
    mock_client.register_schema("orders-value", Schema(json.dumps(V2), "AVRO"))
    latest_reader = AvroDeserializer(mock_client, conf={"use.latest.version": True})
    assert latest_reader(v1_data, ctx) == {"id": 7, "item": "tea", "qty": 2, "price": 0.0}, \
        "use.latest.version reads into the subject's latest schema"


# ---- serializer configuration ---------------------------------------------------------------


def test_auto_register_off_looks_the_schema_up(mock_client: Any, ctx: SerializationContext) -> None:
    strict = AvroSerializer(mock_client, json.dumps(V1), conf={"auto.register.schemas": False})
    with pytest.raises(SchemaRegistryError):
        strict(ORDER, ctx)
    assert mock_client.get_subjects() == [], "nothing was registered"
    schema_id = mock_client.register_schema("orders-value", Schema(json.dumps(V1), "AVRO"))
    assert strict(ORDER, ctx)[1:5] == schema_id.to_bytes(4, "big"), "once registered, its id is used"


def test_use_latest_version_writes_with_the_latest_schema(mock_client: Any, ctx: SerializationContext) -> None:
    mock_client.register_schema("orders-value", Schema(json.dumps(V1), "AVRO"))
    v2_id = mock_client.register_schema("orders-value", Schema(json.dumps(V2), "AVRO"))
    writer = AvroSerializer(mock_client, conf={"use.latest.version": True, "auto.register.schemas": False})
    data = writer({"id": 1, "item": "x", "qty": 3, "price": 1.0}, ctx)
    assert data[1:5] == v2_id.to_bytes(4, "big"), "the latest version's id and schema are used"
    assert AvroDeserializer(mock_client)(data, ctx) == {"id": 1, "item": "x", "qty": 3, "price": 1.0}


def test_use_schema_id(mock_client: Any, ctx: SerializationContext) -> None:
    v1_id = mock_client.register_schema("orders-value", Schema(json.dumps(V1), "AVRO"))
    mock_client.register_schema("orders-value", Schema(json.dumps(V2), "AVRO"))
    writer = AvroSerializer(mock_client, conf={"use.schema.id": v1_id, "auto.register.schemas": False})
    assert writer(ORDER, ctx)[1:5] == v1_id.to_bytes(4, "big"), "the configured id is written"


@pytest.mark.parametrize("conf, message", [
    ({"use.latest.version": True}, "use.latest.version and auto.register.schemas"),
    ({"no.such.key": 1}, "Unrecognized properties"),
    ({"auto.register.schemas": "yes"}, "must be a boolean"),
    ({"subject.name.strategy.type": "ASSOCIATED"}, "Invalid subject.name.strategy.type"),
    ({"use.latest.with.metadata": {"a": "b"}}, "not supported"),
])
def test_bad_configuration_is_refused(mock_client: Any, conf: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AvroSerializer(mock_client, json.dumps(V1), conf=conf)


def test_deserializer_takes_confluent_kafkas_arguments(mock_client: Any, ctx: SerializationContext) -> None:
    union = {"type": "record", "name": "Box", "fields": [{"name": "v", "type": [
        {"type": "record", "name": "A", "fields": [{"name": "a", "type": "int"}]},
        {"type": "record", "name": "B", "fields": [{"name": "b", "type": "int"}]}]}]}
    data = AvroSerializer(mock_client, json.dumps(union))({"v": {"b": 1}}, ctx)
    named = AvroDeserializer(mock_client, None, None, True)(data, ctx)
    assert named == {"v": ("B", {"b": 1})}, "return_record_name, the 4th argument as in confluent-kafka"
    with pytest.raises(ValueError, match="Unrecognized"):
        AvroDeserializer(mock_client, conf={"auto.register.schemas": True})


# ---- batches, hooks, threads ---------------------------------------------------------------


def test_batches_equal_one_by_one(mock_client: Any, ctx: SerializationContext) -> None:
    serializer = AvroSerializer(mock_client, json.dumps(V1))
    deserializer = AvroDeserializer(mock_client)
    records = [dict(ORDER, id=i) for i in range(50)] + [None]
    batch = serializer.serialize_batch(records, ctx)
    assert batch == [serializer(r, ctx) for r in records], "a batch is the same bytes as one by one"
    assert deserializer.deserialize_batch(batch, ctx) == records


def test_to_dict_and_from_dict_hooks(mock_client: Any, ctx: SerializationContext) -> None:
    class Order:
        def __init__(self, id: int, item: str, qty: int) -> None:
            self.id, self.item, self.qty = id, item, qty

    seen: list[Any] = []

    def to_dict(order: Order, c: Any) -> dict[str, Any]:
        seen.append(c)
        return {"id": order.id, "item": order.item, "qty": order.qty}

    data = AvroSerializer(mock_client, json.dumps(V1), to_dict=to_dict)(Order(1, "x", 2), ctx)
    assert seen == [ctx], "to_dict gets the SerializationContext, as in confluent-kafka"
    back = AvroDeserializer(mock_client, from_dict=lambda d, c: Order(d["id"], d["item"], d["qty"]))(data, ctx)
    assert (back.id, back.item, back.qty) == (1, "x", 2)


def test_concurrent_use_from_many_threads(mock_client: Any) -> None:
    counting = CountingClient(mock_client)
    serializer = AvroSerializer(counting, json.dumps(V1))
    deserializer = AvroDeserializer(counting)
    start = threading.Barrier(8)

    def work(n: int) -> bool:
        start.wait()
        c = SerializationContext(f"topic-{n % 2}", MessageField.VALUE)
        return all(deserializer(serializer(dict(ORDER, id=i), c), c) == dict(ORDER, id=i) for i in range(300))

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(8))), "every thread reads back exactly what it wrote"
    assert counting.calls.count("register_schema_full_response") == 2, \
        "threads racing on a new subject register it once between them"


def test_low_level_codec_matches_fastavros_public_functions() -> None:
    assert avro_codec.LOW_LEVEL, ("the self-test against fastavro's public functions failed: the serdes "
                                  "fell back to the slower public path (a fastavro upgrade changed internals?)")
    writer, reader = avro_codec.parse(V1), avro_codec.parse(V2)
    record = dict(ORDER, note="n")
    fast = avro_codec._low_level_encoder(writer, b"\x00\x00\x00\x00\x09", False, False)(record)
    assert fast == avro_codec._public_encoder(writer, b"\x00\x00\x00\x00\x09", False, False)(record)
    assert (avro_codec._low_level_decoder(writer, reader, 5, False)(fast)
            == avro_codec._public_decoder(writer, reader, 5, False)(fast)), "and the same resolution on read"


def test_constructors_take_confluent_kafkas_parameters() -> None:
    import inspect

    for ours, theirs in ((AvroSerializer, ConfluentSerializer), (AvroDeserializer, ConfluentDeserializer)):
        assert (list(inspect.signature(ours.__init__).parameters)
                == list(inspect.signature(theirs.__init__).parameters)), \
            f"{ours.__name__} takes the same arguments, in the same order, as confluent-kafka's"
