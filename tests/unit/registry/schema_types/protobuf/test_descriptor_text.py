"""Descriptors back to .proto text (registry/schema_types/protobuf/descriptor_text.py).

Protected: text printed from a descriptor compiles (with protoc, through PROTOBUF.parse)
to the same descriptor, for proto2 (descriptor.proto: groups aside, every construct
of the language: extensions, ranges, defaults, options) and proto3 files (maps, oneofs,
optional, imports); and a base64 FileDescriptorProto, as confluent-kafka registers it,
parses to the same canonical text as the .proto source.
"""
from __future__ import annotations

import base64
from pathlib import Path

import pytest
from google.protobuf import any_pb2, api_pb2, descriptor_pb2, struct_pb2, timestamp_pb2, type_pb2
from google.protobuf.descriptor import FileDescriptor

from registry.schema_types.base import InvalidSchema
from registry.schema_types.protobuf import PROTOBUF
from registry.schema_types.protobuf.descriptor_text import proto_text
from tests.protobuf_classes import COMMON, generated


def comparable(file: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    """Without what the text cannot carry: the file name, source info, default json_names."""
    copy = descriptor_pb2.FileDescriptorProto()
    copy.CopyFrom(file)
    copy.name = "x"
    copy.ClearField("source_code_info")
    pending = list(copy.message_type)
    while pending:
        message = pending.pop()
        for field in [*message.field, *message.extension]:
            field.ClearField("json_name")
        pending.extend(message.nested_type)
    for field in copy.extension:
        field.ClearField("json_name")
    return copy


def dependencies(file: FileDescriptor, out: dict[str, str]) -> dict[str, str]:
    for dependency in file.dependencies:
        dependencies(dependency, out)
        out.setdefault(dependency.name, proto_text(dependency))
    return out


def descriptor_files() -> list[FileDescriptor]:
    return [m.DESCRIPTOR for m in (descriptor_pb2, timestamp_pb2, struct_pb2, any_pb2, type_pb2, api_pb2)]


@pytest.mark.parametrize("file", descriptor_files(), ids=lambda f: f.name)
def test_printed_text_compiles_to_the_same_descriptor(file: FileDescriptor) -> None:
    compiled = PROTOBUF.parse(proto_text(file), dependencies(file, {}))
    original = descriptor_pb2.FileDescriptorProto()
    file.CopyToProto(original)
    assert comparable(compiled.main) == comparable(original), f"{file.name} round-trips through its text"


def test_generated_classes_round_trip(tmp_path: Path) -> None:
    shop = generated(tmp_path)
    file = shop.order_pb2.DESCRIPTOR
    compiled = PROTOBUF.parse(proto_text(file), dependencies(file, {}))
    original = descriptor_pb2.FileDescriptorProto()
    file.CopyToProto(original)
    assert comparable(compiled.main) == comparable(original), "maps, oneofs, optional, imports survive"


def test_base64_descriptor_parses_like_its_source(tmp_path: Path) -> None:
    shop = generated(tmp_path)
    encoded = base64.b64encode(shop.common_pb2.DESCRIPTOR.serialized_pb).decode()
    assert PROTOBUF.parse(encoded, {}).canonical() == PROTOBUF.parse(COMMON, {}).canonical(), \
        "confluent-kafka's registration form and the .proto text are the same schema"


def nested_descriptor(depth: int) -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(name="deep.proto", syntax="proto3")
    message = file.message_type.add(name="M0")
    for level in range(1, depth):
        message = message.nested_type.add(name=f"M{level}")
    return file


def test_hostile_descriptors_are_refused_with_a_reason() -> None:
    """A base64 descriptor is bounded work too: too deep, a group, editions -> InvalidSchema."""
    deeper_than_protobuf_reads = base64.b64encode(nested_descriptor(150).SerializeToString()).decode()
    with pytest.raises(InvalidSchema, match="neither .proto text nor a base64 FileDescriptorProto"):
        PROTOBUF.parse(deeper_than_protobuf_reads, {})
    deeper_than_protoc_takes = base64.b64encode(nested_descriptor(80).SerializeToString()).decode()
    with pytest.raises(InvalidSchema, match="nest"):
        PROTOBUF.parse(deeper_than_protoc_takes, {})
    editions = descriptor_pb2.FileDescriptorProto(name="e.proto", syntax="editions")
    with pytest.raises(InvalidSchema, match="editions"):
        PROTOBUF.parse(base64.b64encode(editions.SerializeToString()).decode(), {})
    with pytest.raises(InvalidSchema, match="neither"):
        PROTOBUF.parse(base64.b64encode(b"\xff\xff\xff\xff").decode(), {})
