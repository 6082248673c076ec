"""Confluent's wire format: byte 0, a 4-byte big-endian schema id, the payload."""
from __future__ import annotations

import pytest
from confluent_kafka.serialization import SerializationError

from registry.serde import wire


def test_header_is_magic_byte_then_big_endian_id() -> None:
    assert wire.header(1) == b"\x00\x00\x00\x00\x01", "magic byte 0, then id 1 in 4 big-endian bytes"
    assert wire.header(0x01020304) == b"\x00\x01\x02\x03\x04", "big-endian, most significant byte first"
    assert wire.header(0xFFFFFFFF) == b"\x00\xff\xff\xff\xff", "ids use all 32 bits, unsigned"


@pytest.mark.parametrize("bad", [-1, 2 ** 32])
def test_ids_outside_32_bits_are_refused(bad: int) -> None:
    with pytest.raises(SerializationError):
        wire.header(bad)


@pytest.mark.parametrize("schema_id", [0, 1, 255, 256, 65_536, 2 ** 31, 2 ** 32 - 1])
def test_parse_header_reads_back_the_id(schema_id: int) -> None:
    assert wire.parse_header(wire.header(schema_id) + b"payload") == schema_id


def test_a_bare_header_is_accepted() -> None:
    assert wire.parse_header(wire.header(9)) == 9, "null and empty records encode to zero bytes after it"


@pytest.mark.parametrize("short", [b"", b"\x00", b"\x00\x00\x00\x01"])
def test_shorter_than_a_header_is_truncated(short: bytes) -> None:
    with pytest.raises(wire.TruncatedPayload, match=f"got {len(short)} bytes"):
        wire.parse_header(short)


@pytest.mark.parametrize("magic", [1, 0x7B, 0xFF])
def test_any_other_first_byte_is_an_unknown_magic_byte(magic: int) -> None:
    with pytest.raises(wire.UnknownMagicByte, match=f"{magic:#04x}"):
        wire.parse_header(bytes([magic]) + b"\x00\x00\x00\x01xyz")


def test_errors_are_serialization_errors() -> None:
    for error in (wire.TruncatedPayload, wire.UnknownMagicByte, wire.UnknownSchemaId):
        assert issubclass(error, SerializationError), \
            f"{error.__name__} must be caught by code catching confluent-kafka's SerializationError"


@pytest.mark.parametrize("schema, raw", [
    ("bytes", True),
    ({"type": "bytes"}, True),
    ({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}, False),
    ("string", False),
    (["null", "bytes"], False),
    ({"type": "record", "name": "R", "fields": [{"name": "b", "type": "bytes"}]}, False),
    ({"type": "fixed", "name": "F", "size": 4}, False),
])
def test_only_a_top_level_plain_bytes_schema_is_written_raw(schema: object, raw: bool) -> None:
    assert wire.is_raw_bytes(schema) is raw, \
        "Confluent writes a top-level plain bytes value without Avro's length prefix, and nothing else"
