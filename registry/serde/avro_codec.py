"""One Avro datum to bytes and back, with everything that depends only on the schema done once.

`fastavro.schemaless_writer` and `schemaless_reader` redo, on every call, work that
depends only on the schema: re-checking that it is parsed, collecting its named
types, building an options dict, comparing writer and reader schemas for equality
(a deep dict comparison), and, on the write side, a BytesIO to write into. The
functions they delegate to, `fastavro._write.write_data` and `fastavro._read._read_data`,
take those as arguments, so `encoder` and `decoder` prepare them once and return a
closure that does only the per-datum work: append to a bytearray that already holds
the 5-byte header, or read from a BytesIO positioned after it.

Those two functions are fastavro internals. At import a self-test checks them against
the public functions on a record exercising every Avro type, schema resolution
included; on any difference or error we use the public functions (`LOW_LEVEL` says
which is in use), which are always correct, only slower.

Reads without `return_record_name` go further: where `make native` built it,
`avro_program` compiles the schemas for a decoder in Rust that gives fastavro's values
at over twice its speed (bench/serde.py). It too passes a self-test against the public
functions at import (`NATIVE`), or is not used.

Top-level `bytes` schemas are written raw, without Avro's length prefix, as
confluent-kafka's and Confluent's Java serializers do.
"""
from __future__ import annotations

import datetime
import decimal
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any

from fastavro import parse_schema, schemaless_reader, schemaless_writer

from registry.serde import avro_program, wire

Encode = Callable[[Any], bytes]
Decode = Callable[[bytes], Any]


@dataclass(frozen=True)
class ParsedSchema:
    """A schema as fastavro runs it, with the named types it defines or references."""

    schema: Any
    named: dict[str, Any] = field(compare=False)
    name: str | None

    @property
    def is_raw_bytes(self) -> bool:
        """A top-level plain `bytes` schema: the payload is the value itself (see `wire`)."""
        return wire.is_raw_bytes(self.schema)


def loads(schema_str: str) -> Any:
    """JSON for a schema string; a bare primitive name (`string`) is accepted, as confluent-kafka does."""
    text = schema_str.strip()
    if text[:1] not in ("{", "[", '"'):
        text = json.dumps(text)
    return json.loads(text)


def _interned(value: Any) -> Any:
    """`value` with every string interned.

    fastavro compares type names (`"record"`, `"long"`) and looks fields up by name
    on every datum; with interned strings those are pointer comparisons. Strings
    fresh from json.loads are not interned, which costs about 7% on encoding.
    """
    if isinstance(value, str):
        return sys.intern(value)
    if isinstance(value, dict):
        return {sys.intern(k): _interned(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_interned(v) for v in value]
    return value


def parse(schema: Any, referenced: list[Any] | None = None) -> ParsedSchema:
    """Parse `schema` (JSON-decoded), after the `referenced` schemas it names, in order.

    Raises fastavro's SchemaParseException / UnknownType for an invalid schema.
    """
    named: dict[str, Any] = {}
    for ref in referenced or ():
        parse_schema(_interned(ref), named)
    parsed = parse_schema(_interned(schema), named)
    name = None
    if isinstance(parsed, dict):
        name = parsed.get("name") or (schema.get("type") if isinstance(schema, dict) else None)
    elif isinstance(parsed, str):
        name = parsed
    return ParsedSchema(parsed, named, name)


# ---- the two implementations ----------------------------------------------------------


def _low_level_encoder(parsed: ParsedSchema, prefix: bytes, strict: bool, strict_allow_default: bool) -> Encode:
    from fastavro._write import write_data

    schema, named = parsed.schema, parsed.named
    options = {"strict": strict, "strict_allow_default": strict_allow_default, "disable_tuple_notation": False}

    def encode(datum: Any) -> bytes:
        buf = bytearray()
        write_data(buf, datum, schema, named, "", options)
        return prefix + buf  # bytes + bytearray is bytes: one copy, as bytes(buf) would be

    return encode


def _public_encoder(parsed: ParsedSchema, prefix: bytes, strict: bool, strict_allow_default: bool) -> Encode:
    schema = parsed.schema

    def encode(datum: Any) -> bytes:
        out = BytesIO()
        out.write(prefix)
        schemaless_writer(out, schema, datum, strict=strict, strict_allow_default=strict_allow_default)
        return out.getvalue()

    return encode


def _options(return_record_name: bool) -> dict[str, Any]:
    return {"return_record_name": return_record_name, "return_record_name_override": False,
            "handle_unicode_errors": "strict", "return_named_type": False,
            "return_named_type_override": False}


def _low_level_decoder(writer: ParsedSchema, reader: ParsedSchema | None, offset: int,
                       return_record_name: bool) -> Decode:
    from fastavro._read import _read_data

    writer_schema = writer.schema
    reader_schema = reader.schema if reader is not None else None
    named = {"writer": dict(writer.named), "reader": dict(reader.named) if reader is not None else {}}
    options = _options(return_record_name)

    def decode(data: bytes) -> Any:
        fo = BytesIO(data)
        fo.seek(offset)
        return _read_data(fo, writer_schema, named, reader_schema, options)

    return decode


def _public_decoder(writer: ParsedSchema, reader: ParsedSchema | None, offset: int,
                    return_record_name: bool) -> Decode:
    writer_schema = writer.schema
    reader_schema = reader.schema if reader is not None else None

    def decode(data: bytes) -> Any:
        fo = BytesIO(data)
        fo.seek(offset)
        return schemaless_reader(fo, writer_schema, reader_schema, return_record_name)

    return decode


def _probe() -> tuple[dict[str, Any], dict[str, Any]]:
    """A writer schema using every Avro type, and a record of it."""
    ns = "registry.serde.selftest"
    writer = {
        "type": "record", "name": "Probe", "namespace": ns, "fields": [
            {"name": "l", "type": "long"}, {"name": "i", "type": "int"},
            {"name": "s", "type": "string"}, {"name": "b", "type": "bytes"},
            {"name": "f", "type": "float"}, {"name": "d", "type": ["null", "double"]},
            {"name": "ok", "type": "boolean"},
            {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
            {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
            {"name": "tags", "type": {"type": "array", "items": "string"}},
            {"name": "attrs", "type": {"type": "map", "values": "long"}},
            {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
            {"name": "child", "type": {"type": "record", "name": "Child", "fields": [
                {"name": "n", "type": "int"}]}},
            {"name": "again", "type": ["null", "Child"]},
        ]}
    record = {
        "l": -(2 ** 40), "i": 7, "s": "é", "b": b"\x00\xff", "f": 1.5, "d": None, "ok": True,
        "ts": datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.timezone.utc),
        "day": datetime.date(2024, 5, 1), "amount": decimal.Decimal("-12.34"), "tags": ["a", "bc"],
        "attrs": {"k": 1}, "color": "GREEN", "child": {"n": 3}, "again": {"n": 4},
    }
    return writer, record


def _probe_reader(writer: dict[str, Any]) -> dict[str, Any]:
    """`writer` evolved: a field removed, one promoted, one added with a default."""
    reader = json.loads(json.dumps(writer))
    reader["fields"] = [f for f in reader["fields"] if f["name"] != "s"]
    reader["fields"][1]["type"] = "long"  # int promoted to long
    reader["fields"].append({"name": "added", "type": "string", "default": "x"})
    return reader


def _self_test() -> bool:
    """True if the low-level functions give the public functions' bytes and values."""
    writer, record = _probe()
    reader = _probe_reader(writer)
    try:
        w, r = parse(writer), parse(reader)
        prefix = b"\x00\x00\x00\x00\x01"
        expected = _public_encoder(w, prefix, False, False)(record)
        if _low_level_encoder(w, prefix, False, False)(record) != expected:
            return False
        for rd in (None, r):
            for rrn in (False, True):
                want = _public_decoder(w, rd, 5, rrn)(expected)
                if _low_level_decoder(w, rd, 5, rrn)(expected) != want:
                    return False
        return True
    except Exception:
        return False


LOW_LEVEL = _self_test()
_make_encoder = _low_level_encoder if LOW_LEVEL else _public_encoder
_make_decoder = _low_level_decoder if LOW_LEVEL else _public_decoder


def _native_decoder(writer: ParsedSchema, reader: ParsedSchema | None, offset: int,
                    fallback: Decode) -> Decode | None:
    return avro_program.native_decoder(writer.schema, writer.named, reader.schema if reader else None,
                                       reader.named if reader else {}, offset, fallback)


def _native_self_test() -> bool:
    """True if the native decoder is built and gives fastavro's values for the probe,
    in its writer's shape and evolved."""
    writer, record = _probe()
    try:
        w, r = parse(writer), parse(_probe_reader(writer))
        data = _public_encoder(w, b"", False, False)(record)
        for rd in (None, r):
            public = _public_decoder(w, rd, 0, False)
            native = _native_decoder(w, rd, 0, public)
            if native is None or native(data) != public(data):
                return False
        return True
    except Exception:
        return False


# The native decoder (avro_program), where it is built.
NATIVE = _native_self_test()


def encoder(parsed: ParsedSchema, prefix: bytes, *, strict: bool = False,
            strict_allow_default: bool = False) -> Encode:
    """A function from a datum to `prefix` + its Avro binary encoding.

    The function raises what fastavro raises for a datum that does not fit the
    schema (ValueError, TypeError, AttributeError, ...). It is thread-safe.
    """
    if parsed.is_raw_bytes:
        def encode_raw(datum: Any) -> bytes:
            raw = datum if isinstance(datum, (bytes, bytearray, memoryview)) else str(datum).encode()
            return prefix + raw
        return encode_raw
    return _make_encoder(parsed, prefix, strict, strict_allow_default)


def decoder(writer: ParsedSchema, reader: ParsedSchema | None, offset: int, *,
            return_record_name: bool = False) -> Decode:
    """A function from bytes to the datum encoded from `offset` on, with `writer`'s
    schema, resolved into `reader`'s shape when a reader schema is given.

    The function raises EOFError when the data ends early, fastavro's
    SchemaResolutionError when the writer's data cannot be read as the reader's, and
    other exceptions (ValueError, IndexError, UnicodeDecodeError, ...) for data that is
    not a datum of the schema. It is thread-safe.
    """
    if reader is not None and reader.schema == writer.schema:
        reader = None  # the same schema: skip resolution on every datum
    if writer.is_raw_bytes and (reader is None or reader.is_raw_bytes):
        def decode_raw(data: bytes) -> bytes:
            return bytes(data[offset:])
        return decode_raw
    decode = _make_decoder(writer, reader, offset, return_record_name)
    if NATIVE and not return_record_name:
        return _native_decoder(writer, reader, offset, decode) or decode
    return decode


__all__ = ["LOW_LEVEL", "NATIVE", "ParsedSchema", "decoder", "encoder", "loads", "parse"]
