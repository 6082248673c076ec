"""Protobuf bytes between Confluent's JS serdes (@confluentinc/schemaregistry, on
@bufbuild/protobuf), confluent-kafka-go's (serde/protobuf, on a message type built at run
time from protoc's descriptor set), confluent-kafka's Python serdes and ours, both ways,
through one registry. The message (shop.Order: nested message, enum, map, repeated, an
import of another file and of a well-known type) is compared in proto3 JSON. Confluent's
JS deserializer learns the writer's schema from the registry as a serialized descriptor
(`?format=serialized`); its serializer registers one (base64) with its imports as
references. confluent-kafka-go's serializer registers its files as .proto text (printed
by jhump/protoreflect) with its imports as references, named as the others name them
(the import's path, as subject too); its deserializer learns the writer's schema as text."""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as ConfluentDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as ConfluentSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import json_format
from grpc_tools import protoc

from registry.client import SchemaRegistryClient as OurClient
from registry.serde.protobuf import ProtobufDeserializer, ProtobufSerializer
from tests.api.support import RegistryProcess
from tests.interop.exchange import PROGRAMS, Exchange, exchange
from tests.protobuf_classes import COMMON, ORDER, generated

pytestmark = pytest.mark.integration

ORDER_JSON = {"id": "1234567890123", "customer": "Ada ünïcødé", "lines": [{"sku": "book", "qty": 2}],
              "total": {"currency": "EUR", "units": "99"}, "placed": "2026-11-24T10:00:00Z", "status": "PAID",
              "labels": {"gift": "yes"}, "note": "leave at door"}


def protoc_descriptor_set(directory: Path) -> bytes:
    """The files as generated code carries them (protoc: json_name filled in, imports
    included), for the JS side's message type."""
    (directory / "shop").mkdir()
    (directory / "shop" / "common.proto").write_text(COMMON)
    (directory / "shop" / "order.proto").write_text(ORDER)
    out = directory / "set.pb"
    include = Path(protoc.__file__).parent / "_proto"
    code = protoc.main(["protoc", f"-I{directory}", f"-I{include}", "--include_imports",
                        f"--descriptor_set_out={out}", "shop/order.proto"])
    assert code == 0, "protoc compiles the test's .proto files"
    return out.read_bytes()


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    return generated(tmp_path_factory.mktemp("proto"))


def order(shop) -> Any:
    return json_format.ParseDict(ORDER_JSON, shop.order_pb2.Order())


PYTHON_WRITERS = ("ours", "confluent-python")
WRITERS = (*PYTHON_WRITERS, *PROGRAMS)


@pytest.fixture(scope="module")
def found(shop, interop_registry: RegistryProcess, run_id: str, tmp_path_factory) -> Exchange:
    prefix = f"it-{run_id}-proto"
    tmp = tmp_path_factory.mktemp("descriptor-set")
    url = interop_registry.url
    written = {}
    for writer, serializer in (
            ("ours", ProtobufSerializer(shop.order_pb2.Order, OurClient({"url": url}))),
            ("confluent-python", ConfluentSerializer(shop.order_pb2.Order, ConfluentClient({"url": url}),
                                                     {"use.deprecated.format": False}))):
        topic = f"{prefix}-{writer}"
        data = serializer(order(shop), SerializationContext(topic, MessageField.VALUE))
        written[writer] = {"writer": writer, "topic": topic, "hex": data.hex()}
    return exchange(url, prefix, "protobuf", written,
                    descriptor_set=base64.b64encode(protoc_descriptor_set(tmp)).decode(),
                    message_name="shop.Order", proto_value=ORDER_JSON)


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_program_serializer_registers_writes_and_reads_back(found: Exchange, program: str) -> None:
    write = found.write(program)
    assert write["ok"], write
    assert write["value"]["decoded"] == ORDER_JSON, f"{program}'s deserializer reads its own bytes as written"


@pytest.mark.parametrize(("reader", "writer"), [(r, w) for r in PROGRAMS for w in WRITERS if w != r])
def test_the_program_deserializer_reads_every_other_writer(found: Exchange, reader: str, writer: str) -> None:
    read = found.read(reader, writer)
    assert read["ok"], read
    assert read["value"] == ORDER_JSON, f"{reader}'s deserializer decodes {writer}'s bytes to the message"


@pytest.mark.parametrize("writer", PROGRAMS)
def test_python_deserializers_read_the_program_bytes_as_written(found: Exchange, shop, interop_registry,
                                                                writer: str) -> None:
    data = found.payload(writer)
    ctx = SerializationContext("any-topic", MessageField.VALUE)
    url = interop_registry.url
    ours = ProtobufDeserializer(shop.order_pb2.Order, schema_registry_client=OurClient({"url": url}))(data, ctx)
    theirs = ConfluentDeserializer(shop.order_pb2.Order, {"use.deprecated.format": False})(data, ctx)
    assert ours == theirs == order(shop), f"both Python deserializers decode {writer}'s bytes to the message"


@pytest.mark.parametrize("writer", WRITERS)
def test_each_writer_frames_with_the_id_of_its_subject(found: Exchange, interop_registry: RegistryProcess,
                                                       writer: str) -> None:
    data = found.payload(writer)
    subject = f"{found.topic(writer)}-value"
    latest = interop_registry.get(f"/subjects/{quote(subject, safe='')}/versions/latest")
    assert latest.status_code == 200, latest.text
    assert data[0] == 0, f"{writer} frames as Confluent does: magic byte 0"
    assert int.from_bytes(data[1:5], "big") == latest.json()["id"], \
        f"{writer} writes the id the registry holds for {subject}"


@pytest.mark.parametrize("writer", ["confluent-python", *PROGRAMS])
def test_the_same_message_is_framed_the_same_after_the_id(found: Exchange, shop, writer: str) -> None:
    data, ours = found.payload(writer), found.payload("ours")
    assert data[5:6] == ours[5:6] == b"\x00", \
        f"{writer} writes shop.Order, the file's first message, as the index list [0] (one 0 byte), as we do"
    if writer == "go":
        # protobuf-go marshals a dynamicpb message in its fields' map order (proto.Marshal
        # without Deterministic ranges dynamicpb.Message.known, a Go map), and Protobuf
        # promises no field order: the same message, its fields in another order each run.
        message = shop.order_pb2.Order
        assert message.FromString(data[6:]) == message.FromString(ours[6:]) == order(shop), \
            "go's message bytes are the message we write"
    else:
        assert data[6:] == ours[6:], f"{writer}'s message bytes are ours, byte for byte"
