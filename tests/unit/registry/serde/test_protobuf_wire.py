"""Confluent's Protobuf message-index framing (registry/serde/protobuf_wire.py).

Protected: the bytes equal confluent-kafka's own encoder's for every index list, zig-zag
and (use.deprecated.format) plain varints; reading inverts writing; hostile index lists
fail fast with a SerializationError instead of reading unbounded input.
"""
from __future__ import annotations

import io

import pytest
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as TheirSerializer
from confluent_kafka.serialization import SerializationError
from google.protobuf import descriptor_pb2, struct_pb2

from registry.serde import protobuf_wire
from registry.serde.protobuf_wire import BadMessageIndexes, encode_indexes, read_indexes

HEADER = b"\x00\x00\x00\x00\x07"
CASES = [[0], [1], [0, 0], [0, 1], [3, 2, 1], [63], [64], [300, 0], list(range(40))]


def theirs(indexes: list[int], zigzag: bool) -> bytes:
    buf = io.BytesIO()
    TheirSerializer._encode_varints(buf, indexes, zigzag=zigzag)
    return buf.getvalue()


@pytest.mark.parametrize("indexes", CASES)
@pytest.mark.parametrize("zigzag", [True, False])
def test_indexes_encode_as_confluent_kafka_and_read_back(indexes: list[int], zigzag: bool) -> None:
    encoded = encode_indexes(indexes, zigzag)
    assert encoded == theirs(indexes, zigzag), "byte-identical to confluent-kafka's encoder"
    assert read_indexes(HEADER + encoded + b"payload", zigzag) == (tuple(indexes), 5 + len(encoded)), \
        "reading gives the indexes back and where the payload starts"


def test_the_zero_shortcut_is_one_byte() -> None:
    assert encode_indexes([0]) == b"\x00" and read_indexes(HEADER + b"\x00") == ((0,), 6)


@pytest.mark.parametrize("tail, why", [
    (b"", "ends inside"),
    (b"\x04\x02", "ends inside"),
    (b"\xff" * 11, "longer than 10 bytes"),
    (encode_indexes([0] * 2) [:1] + b"\x01", "negative"),
])
def test_bad_index_lists_are_refused(tail: bytes, why: str) -> None:
    with pytest.raises(SerializationError, match=why):
        read_indexes(HEADER + tail)


def test_a_huge_count_is_refused_before_reading_on() -> None:
    with pytest.raises(BadMessageIndexes, match="claims"):
        read_indexes(HEADER + encode_indexes([0] * 1000)[:2] + b"\x00" * 10)


def test_indexes_of_and_message_at_agree() -> None:
    for message in (descriptor_pb2.FileDescriptorSet, descriptor_pb2.DescriptorProto.ExtensionRange,
                    descriptor_pb2.FieldOptions.EditionDefault, struct_pb2.ListValue):
        indexes = protobuf_wire.indexes_of(message.DESCRIPTOR)
        assert protobuf_wire.message_at(message.DESCRIPTOR.file, indexes) is message.DESCRIPTOR, \
            f"{message.DESCRIPTOR.full_name} is found again at {indexes}"
    with pytest.raises(BadMessageIndexes, match="out of range"):
        protobuf_wire.message_at(struct_pb2.DESCRIPTOR, [9])
