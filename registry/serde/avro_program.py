"""A writer schema, and a reader schema if given, compiled for the native Avro decoder
(`avro_native/`, built into the wheel and by `make install`).

fastavro's reader walks the schemas' dicts for every datum. `native_decoder` walks
them once, here, into a flat program of nodes that the Rust decoder runs: a record is
its fields' names (interned str) and their nodes' indexes, a named type met again,
even recursively, is the index of its first node.

The program follows fastavro's reader step for step (`fastavro._read_py.read_data`,
the Python twin of its Cython reader), so that the decoder gives the values fastavro
gives: dicts in fastavro's key order, schema resolution as fastavro resolves (fields
matched by name or alias, skipped, or filled with the reader's default object;
promotions; enum defaults; union branches chosen with fastavro's own `match_types`),
logical types by the writer's schema through fastavro's reader functions
(`fastavro.read.LOGICAL_READERS`). Timestamp-millis, timestamp-micros and date the
decoder makes itself while those functions are fastavro's own. What fastavro would
raise on reading a part of the data (a writer's union branch the reader has no match
for) the program raises there too.

`return_record_name` stays with fastavro, as does any schema this module is not sure
of (`native_decoder` returns None), and any datum nested past the decoder's depth
limit (it calls the fastavro decoder it was given).
"""
from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from typing import Any

import fastavro._logical_readers as fastavro_logical
from fastavro._read_common import SchemaResolutionError
from fastavro._read_py import match_schemas, match_types
from fastavro.read import LOGICAL_READERS

try:
    from registry.serde._avro_native import Decoder as _NativeDecoder
except ImportError:  # no wheel for this platform, or built without Rust: fastavro decodes
    _NativeDecoder = None
    logging.getLogger(__name__).warning(
        "Avro decoding: fastavro (registry.serde._avro_native is not in this install, no wheel for this "
        "platform or built without Rust): slower deserializers")

AVAILABLE = _NativeDecoder is not None

_PRIMITIVES = {"null": "null", "boolean": "boolean", "int": "long", "long": "long",
               "float": "float", "double": "double", "bytes": "bytes", "string": "string"}
_KINDS = {*_PRIMITIVES, "fixed", "enum", "array", "map", "record", "error"}
_NAMED = {"record", "error", "enum", "fixed"}
# A logical type the decoder makes itself, while fastavro's reader for it is its own:
# a reader a user put in LOGICAL_READERS instead is called like any other.
_MADE_NATIVELY = {
    "long-timestamp-millis": (fastavro_logical.read_timestamp_millis, ("timestamp-millis", datetime.timezone.utc)),
    "long-timestamp-micros": (fastavro_logical.read_timestamp_micros, ("timestamp-micros", datetime.timezone.utc)),
    "int-date": (fastavro_logical.read_date, ("date",)),
}
# fastavro's maybe_promote: (writer type, reader type) -> the node that reads and promotes
_PROMOTED = {("int", "float"): "long-to-float", ("int", "double"): "long-to-float",
             ("long", "float"): "long-to-float", ("long", "double"): "long-to-float",
             ("string", "bytes"): "string-to-bytes", ("bytes", "string"): "string"}


class Unsupported(Exception):
    """A schema the native decoder is not given (fastavro decodes it)."""


def _type_of(schema: Any) -> Any:
    """fastavro's extract_record_type."""
    if isinstance(schema, dict):
        return schema["type"]
    if isinstance(schema, list):
        return "union"
    return schema


class _Program:
    """The node list being built; a node's index is its position."""

    def __init__(self, writer_named: dict[str, Any], reader_named: dict[str, Any]) -> None:
        self.nodes: list[tuple[Any, ...]] = []
        self.named = {"writer": writer_named, "reader": reader_named}
        # (writer schema, reader schema), by identity for dicts -> node, so that a named
        # type met again (recursion included) is compiled once
        self.seen: dict[tuple[Any, Any], int] = {}

    def read(self, writer: Any, reader: Any) -> int:
        """The node reading a datum of `writer` into `reader`'s shape (no reader: None),
        as fastavro's read_data does."""
        key = (_identity(writer), _identity(reader))
        if key in self.seen:
            return self.seen[key]
        at = len(self.nodes)
        self.nodes.append(("null",))  # replaced once its children are compiled
        self.seen[key] = at
        self.nodes[at] = self._node(writer, reader)
        return at

    def _node(self, writer: Any, reader: Any) -> tuple[Any, ...]:
        kind = _type_of(writer)
        if not isinstance(kind, str):
            raise Unsupported(f"not a schema fastavro parsed: {writer!r:.80}")
        if reader:
            try:
                reader = match_schemas(writer, reader, self.named)
            except SchemaResolutionError as exc:
                return ("error", SchemaResolutionError, str(exc))
        if kind not in _KINDS and kind != "union":
            # a named type by its name: fastavro reads the named type
            if kind not in self.named["writer"] or not (reader is None or isinstance(reader, str)):
                raise Unsupported(f"an unknown named type: {kind!r:.80}")
            return ("same", self.read(self.named["writer"][kind],
                                      self.named["reader"].get(reader) if reader else None))
        if reader is not None and not isinstance(reader, (dict, list, str)):
            raise Unsupported(f"a reader schema fastavro did not parse: {reader!r:.80}")
        node = self._value(writer, kind, reader)
        logical = writer.get("logicalType") if isinstance(writer, dict) else None
        if logical is not None and f"{kind}-{logical}" in LOGICAL_READERS:
            return self._logical(writer, reader, f"{kind}-{logical}", node)
        if reader is not None and kind in _PRIMITIVES:
            promoted = _PROMOTED.get((kind, _type_of(reader)))
            if promoted is not None:
                return (promoted,)
        return node

    def _logical(self, writer: dict[str, Any], reader: Any, key: str, node: tuple[Any, ...]) -> tuple[Any, ...]:
        function = LOGICAL_READERS[key]
        own, native = _MADE_NATIVELY.get(key, (None, None))
        if native is not None and function is own:
            return native
        base = len(self.nodes)
        self.nodes.append(node)
        return ("logical", base, function, writer, reader)

    def _value(self, writer: Any, kind: str, reader: Any) -> tuple[Any, ...]:
        """The node for fastavro's reader function of `kind` (READERS[kind])."""
        if kind in _PRIMITIVES:
            return (_PRIMITIVES[kind],)
        if kind == "union":
            return ("union", tuple(self._branch(branch, reader) for branch in writer))
        if not isinstance(reader, (dict, type(None))):
            raise Unsupported(f"a reader schema of a {kind} that is not a dict: {reader!r:.80}")
        if kind == "fixed":
            return ("fixed", _size(writer.get("size")))
        if kind == "enum":
            return ("enum", _symbols(writer, reader))
        if kind == "array":
            items = self.read(writer.get("items"), reader["items"] if reader else None)
            return ("array", items, self._takes_a_byte(items))
        if kind == "map":
            return ("map", self.read(writer.get("values"), reader["values"] if reader else None))
        return self._record(writer, reader)

    def _branch(self, branch: Any, reader: Any) -> int:
        """The node for a writer's union branch, as fastavro's read_union picks its reader."""
        if not reader:
            return self.read(branch, None)
        for candidate in reader if isinstance(reader, list) else [reader]:
            if match_types(branch, candidate, self.named):
                return self.read(branch, candidate)
        at = len(self.nodes)
        self.nodes.append(("error", SchemaResolutionError, f"schema mismatch: {branch} not found in {reader}"))
        return at

    def _record(self, writer: dict[str, Any], reader: dict[str, Any] | None) -> tuple[Any, ...]:
        fields = writer.get("fields")
        if not isinstance(fields, list):
            raise Unsupported("record fields that are not a list")
        if reader is None:
            return ("record", tuple((_field_name(f), self.read(f.get("type"), None)) for f in fields), ())
        by_name: dict[str, dict[str, Any]] = {}
        by_alias: dict[str, dict[str, Any]] = {}
        for field in reader.get("fields", ()):
            by_name[_field_name(field)] = field
            for alias in field.get("aliases", ()):
                by_alias[alias] = field
        read: list[tuple[str | None, int]] = []
        for field in fields:
            name = _field_name(field)
            match = by_name.get(name, by_alias.get(name))
            if match is None:
                read.append((None, self.read(field.get("type"), None)))  # skipped
                continue
            if match["name"] not in by_name:
                raise Unsupported("two writer fields read into one reader field")  # fastavro: KeyError
            read.append((match["name"], self.read(field.get("type"), match["type"])))
            del by_name[match["name"]]
        if any("default" not in field for field in by_name.values()):
            raise Unsupported("a reader field with no default the writer does not have")  # fastavro raises
        defaults = tuple((name, field["default"]) for name, field in by_name.items())
        return ("record", tuple(read), defaults)

    def _takes_a_byte(self, at: int, seen: frozenset[int] = frozenset()) -> bool:
        """Whether every encoding of node `at` takes at least one byte (null and empty
        records take none). A node still being compiled counts as taking none."""
        node = self.nodes[at]
        if node[0] in ("null", "error") or at in seen:
            return False
        if node[0] == "record":
            return any(self._takes_a_byte(field, seen | {at}) for _, field in node[1])
        if node[0] == "fixed":
            return bool(node[1])
        if node[0] in ("logical", "same"):
            return self._takes_a_byte(node[1], seen | {at})
        return True


def _identity(schema: Any) -> Any:
    return ("id", id(schema)) if isinstance(schema, (dict, list)) else schema


def _size(size: Any) -> int:
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise Unsupported(f"a fixed size that is not a count: {size!r:.40}")
    return size


def _field_name(field: Any) -> str:
    if not isinstance(field, dict) or not isinstance(field.get("name"), str):
        raise Unsupported("a record field without a name")
    return field["name"]


def _symbols(writer: dict[str, Any], reader: dict[str, Any] | None) -> tuple[str, ...]:
    """What each writer symbol reads as (fastavro's read_enum): itself, or, if the
    reader lacks it, the reader's default."""
    symbols = writer.get("symbols")
    if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
        raise Unsupported("enum symbols that are not strings")
    if reader is None:
        return tuple(symbols)
    known, default = reader.get("symbols", ()), reader.get("default")
    if not all(s in known for s in symbols) and not (default and isinstance(default, str)):
        raise Unsupported("a writer symbol the reader has no symbol and no default for")
    return tuple(s if s in known else default for s in symbols)


def native_decoder(writer: Any, writer_named: dict[str, Any], reader: Any, reader_named: dict[str, Any],
                   offset: int, fallback: Callable[[bytes], Any]) -> Callable[[bytes], Any] | None:
    """A function from bytes to the datum written with `writer` (fastavro-parsed, its
    named types in `writer_named`) from `offset` on, in `reader`'s shape (None: the
    writer's); None where the native decoder is not built or not given these schemas.
    `fallback` decodes what is nested too deep.

    The function raises EOFError for data that ends early, fastavro's
    SchemaResolutionError where fastavro would, and IndexError, ValueError or
    UnicodeDecodeError for data that is not a datum of the schema.
    """
    if _NativeDecoder is None:
        return None
    program = _Program(writer_named, reader_named)
    try:
        root = program.read(writer, reader)
    except (Unsupported, RecursionError, KeyError, TypeError):
        return None
    return _NativeDecoder(program.nodes, root, offset, fallback).decode  # type: ignore[no-any-return]


__all__ = ["AVAILABLE", "Unsupported", "native_decoder"]
