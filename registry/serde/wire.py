"""Confluent's wire format: magic byte 0, the schema id as 4 big-endian bytes, the payload.

    +------+------+------+------+------+------------------+
    | 0x00 |   schema id (uint32, big-endian)  | Avro binary ... |
    +------+------+------+------+------+------------------+

The 5-byte header depends only on the schema id, so serializers build it once per id
(`header`) and deserializers key their per-id state by the header bytes themselves,
which checks the magic byte and finds the id in one dict lookup (`parse_header` is the
slow path for headers not seen before).

The payload is the datum's Avro binary encoding, except for a top-level plain `bytes`
schema (`is_raw_bytes`): Confluent's serializers write such a value raw, without
Avro's length prefix. registry.serde and registry.spark both frame by this module.
"""
from __future__ import annotations

import struct
from typing import Any

from confluent_kafka.serialization import SerializationError

MAGIC_BYTE = 0
HEADER_SIZE = 5
MAX_SCHEMA_ID = 0xFFFFFFFF

_HEADER = struct.Struct(">bI")


class UnknownMagicByte(SerializationError):
    """The first byte is not 0: the message was not written with a Schema Registry serializer."""


class TruncatedPayload(SerializationError):
    """The message ends before its header or its Avro datum does."""


class UnknownSchemaId(SerializationError):
    """The header names a schema id the registry does not know."""


def header(schema_id: int) -> bytes:
    """The 5 bytes that start every message written with `schema_id`."""
    if not 0 <= schema_id <= MAX_SCHEMA_ID:
        raise SerializationError(f"schema id {schema_id} does not fit in 4 unsigned bytes")
    return _HEADER.pack(MAGIC_BYTE, schema_id)


def parse_header(data: bytes) -> int:
    """The schema id in `data`'s header.

    Raises TruncatedPayload when `data` is shorter than the header, and UnknownMagicByte
    for any first byte but 0. A bare header is accepted: some datums (null, an empty
    record) encode to zero bytes; a decoder that needs more says so.
    """
    if len(data) < HEADER_SIZE:
        raise TruncatedPayload(
            f"expected a 5-byte Schema Registry header and a payload, got {len(data)} bytes: "
            "this message was not written with a Schema Registry serializer")
    if data[0] != MAGIC_BYTE:
        raise UnknownMagicByte(
            f"unknown magic byte {data[0]:#04x} (expected 0x00): this message was not written "
            "with a Schema Registry serializer in Confluent's wire format")
    return int.from_bytes(data[1:HEADER_SIZE], "big")


def is_raw_bytes(schema: Any) -> bool:
    """True for a top-level plain `bytes` Avro schema, whose payload is the value itself.

    `schema` is the schema's JSON, decoded (or as fastavro parsed it): ``"bytes"`` or
    ``{"type": "bytes"}``; a logical type on bytes (``decimal``) is Avro-encoded as usual.
    """
    return schema == "bytes" or (isinstance(schema, dict) and schema.get("type") == "bytes"
                                 and "logicalType" not in schema)
