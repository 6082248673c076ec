"""Confluent's Protobuf framing: after the 5-byte header, the message-index list.

    +------+-----------+-----------------------------+------------------+
    | 0x00 | schema id | message indexes             | Protobuf binary  |
    +------+-----------+-----------------------------+------------------+

The indexes locate the message type in the schema's file: the first is the index of a
top-level message, each next one a nested message's index within the previous. They
are written as a count and then the indexes, each a zig-zag varint; the common `[0]`
(the file's first message) is written as the single byte 0 (a count of 0). Before
confluent-kafka 1.8 the Python serializer wrote plain (unsigned) varints instead of
zig-zag ones; `use.deprecated.format` selects that (`zigzag=False`). For `[0]` both
formats are the same byte.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from confluent_kafka.serialization import SerializationError
from google.protobuf.descriptor import Descriptor

from registry.serde.wire import HEADER_SIZE, TruncatedPayload

MAX_INDEXES: Final = 128
"""More nesting than protoc allows (32): a longer list is not a real message's."""
_MAX_VARINT_BYTES: Final = 10


class BadMessageIndexes(SerializationError):
    """The message-index list is malformed, or names no message of the schema."""


def _varint(value: int, zigzag: bool) -> bytes:
    if zigzag:
        value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_indexes(indexes: Sequence[int], zigzag: bool = True) -> bytes:
    """The bytes that frame `indexes` (non-empty)."""
    if not indexes:
        raise ValueError("a message-index list has at least one index")
    if list(indexes) == [0]:
        return b"\x00"
    return _varint(len(indexes), zigzag) + b"".join(_varint(i, zigzag) for i in indexes)


def _read_varint(data: bytes, pos: int, zigzag: bool) -> tuple[int, int]:
    value = shift = 0
    for _ in range(_MAX_VARINT_BYTES):
        if pos >= len(data):
            raise TruncatedPayload("the message ends inside its message-index list")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if zigzag:
                value = (value >> 1) ^ -(value & 1)
            return value, pos
        shift += 7
    raise BadMessageIndexes("a varint of the message-index list is longer than 10 bytes")


def read_indexes(data: bytes, zigzag: bool = True) -> tuple[tuple[int, ...], int]:
    """The message indexes after `data`'s header, and the offset of the Protobuf
    payload. Raises TruncatedPayload or BadMessageIndexes; work is bounded by
    MAX_INDEXES varints of at most 10 bytes."""
    count, pos = _read_varint(data, HEADER_SIZE, zigzag)
    if count == 0:
        return (0,), pos
    if not 0 < count <= MAX_INDEXES:
        raise BadMessageIndexes(f"the message-index list claims {count} indexes")
    indexes = []
    for _ in range(count):
        index, pos = _read_varint(data, pos, zigzag)
        if index < 0:
            raise BadMessageIndexes(f"negative message index {index}")
        indexes.append(index)
    return tuple(indexes), pos


def indexes_of(descriptor: Descriptor) -> list[int]:
    """Where `descriptor` sits in its file, as a message-index list."""
    path: list[int] = []
    current = descriptor
    while current.containing_type is not None:
        parent = current.containing_type
        path.append(list(parent.nested_types).index(current))
        current = parent
    path.append(list(current.file.message_types_by_name.values()).index(current))
    path.reverse()
    return path


def message_at(file: Any, indexes: Sequence[int]) -> Descriptor:
    """The message descriptor `indexes` names in `file` (a FileDescriptor). Raises
    BadMessageIndexes when there is no such message."""
    messages = list(file.message_types_by_name.values())
    found = None
    for depth, index in enumerate(indexes):
        if index >= len(messages):
            raise BadMessageIndexes(f"message index {index} at depth {depth} is out of range: "
                                    f"there are {len(messages)} messages there")
        found = messages[index]
        messages = list(found.nested_types)
    assert found is not None
    return found
