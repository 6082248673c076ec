"""Protobuf bytes between Confluent's JS serdes (@confluentinc/schemaregistry, on
@bufbuild/protobuf), confluent-kafka's Python serdes and ours, both ways, through one
registry. The message (shop.Order: nested message, enum, map, repeated, an import of
another file and of a well-known type) is compared in proto3 JSON. Confluent's JS
deserializer learns the writer's schema from the registry as a serialized descriptor
(`?format=serialized`); its serializer registers one (base64) with its imports as
references."""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

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
from tests.interop.clients import CLIENTS, plan, run
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


@pytest.fixture(scope="module")
def exchange(shop, interop_registry: RegistryProcess, run_id: str,
             tmp_path_factory) -> tuple[dict[str, Any], dict[str, Any]]:
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
    steps = run(CLIENTS["confluent-js"], plan(
        url, prefix, mode="protobuf", descriptor_set=base64.b64encode(protoc_descriptor_set(tmp)).decode(),
        message_name="shop.Order", proto_value=ORDER_JSON, read=list(written.values())))
    return written, steps


def test_the_js_serializer_registers_writes_and_reads_back(exchange):
    _, steps = exchange
    assert steps["proto_write"]["ok"], steps["proto_write"]
    assert steps["proto_write"]["value"]["decoded"] == ORDER_JSON


@pytest.mark.parametrize("writer", ["ours", "confluent-python"])
def test_the_js_deserializer_reads_python_bytes(exchange, writer):
    _, steps = exchange
    read = steps[f"proto_read_{writer}"]
    assert read["ok"], read
    assert read["value"] == ORDER_JSON, f"Confluent's JS deserializer decodes {writer}'s bytes to the message"


def test_python_deserializers_read_the_js_bytes_as_written(exchange, shop, interop_registry):
    written, steps = exchange
    js = bytes.fromhex(steps["proto_write"]["value"]["hex"])
    ctx = SerializationContext("any-topic", MessageField.VALUE)
    url = interop_registry.url
    ours = ProtobufDeserializer(shop.order_pb2.Order, schema_registry_client=OurClient({"url": url}))(js, ctx)
    theirs = ConfluentDeserializer(shop.order_pb2.Order, {"use.deprecated.format": False})(js, ctx)
    assert ours == theirs == order(shop)
    python = bytes.fromhex(written["ours"]["hex"])
    assert js[5:] == python[5:], "the same message framed the same way after the id: indexes [0] and its bytes"
