"""A writer schema compiled for the native Avro decoder (`avro_native/`, built by `make native`).

fastavro's reader walks the schema's dicts for every datum. `native_decoder` walks
them once, here, into a flat program of nodes, one per schema node, that the Rust
decoder runs: a record is its field names (interned str) and their nodes' indexes, a
named type referenced again, even recursively, is the index of its first node. The
decoder gives the values fastavro gives (dicts in field order, and logical types
through fastavro's own reader functions, `fastavro.read.LOGICAL_READERS`), except for
timestamp-millis, timestamp-micros and date while those functions are fastavro's
own: the decoder makes those values itself.

Only writer-shaped reads are compiled. Schema resolution (a reader schema) and
`return_record_name` stay with fastavro, as does any schema this module does not
know (`native_decoder` returns None) and any datum nested past the decoder's depth
limit (it calls the fastavro decoder it was given).
"""
from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import fastavro._logical_readers as fastavro_logical
from fastavro.read import LOGICAL_READERS

try:
    from registry.serde import _avro_native  # type: ignore[attr-defined]
except ImportError:  # not built (no cargo), or a wheel without it: fastavro decodes
    _avro_native = None

AVAILABLE = _avro_native is not None

_PRIMITIVES = {"null": "null", "boolean": "boolean", "int": "long", "long": "long",
               "float": "float", "double": "double", "bytes": "bytes", "string": "string"}
_KINDS = {*_PRIMITIVES, "fixed", "enum", "array", "map", "record", "error"}
# A logical type the decoder makes itself, while fastavro's reader for it is its own:
# a reader a user put in LOGICAL_READERS instead is called like any other.
_MADE_NATIVELY = {
    "long-timestamp-millis": (fastavro_logical.read_timestamp_millis, ("timestamp-millis", datetime.timezone.utc)),
    "long-timestamp-micros": (fastavro_logical.read_timestamp_micros, ("timestamp-micros", datetime.timezone.utc)),
    "int-date": (fastavro_logical.read_date, ("date",)),
}


class Unsupported(Exception):
    """A schema the native decoder is not given (fastavro decodes it)."""


class _Program:
    """The node list being built; a node's index is its position."""

    def __init__(self, named: dict[str, Any]) -> None:
        self.nodes: list[tuple[Any, ...]] = []
        self.named = named
        self.by_name: dict[str, int] = {}
        self.primitive: dict[str, int] = {}

    def add(self, schema: Any) -> int:
        """The index of `schema`'s node, compiling it (and what it contains) if new."""
        if isinstance(schema, str):
            return self._reference(schema)
        if isinstance(schema, list):
            at = self._reserve()
            self.nodes[at] = ("union", tuple(self.add(branch) for branch in schema))
            return at
        if not isinstance(schema, dict) or not isinstance(schema.get("type"), str):
            raise Unsupported(f"not a schema fastavro parsed: {schema!r:.80}")
        kind = schema["type"]
        if kind not in _KINDS:
            # {"type": "some.Named"}: fastavro reads the named type, ignoring the rest
            return self._reference(kind)
        logical = schema.get("logicalType")
        if isinstance(logical, str) and f"{kind}-{logical}" in LOGICAL_READERS:
            return self._logical(schema, f"{kind}-{logical}")
        return self._plain(schema, kind, self._reserve_named(schema))

    def _reference(self, name: str) -> int:
        if name in _PRIMITIVES:
            if name not in self.primitive:
                self.primitive[name] = len(self.nodes)
                self.nodes.append((_PRIMITIVES[name],))
            return self.primitive[name]
        if name in self.by_name:
            return self.by_name[name]
        if name not in self.named:
            raise Unsupported(f"an unknown named type: {name!r:.80}")
        return self.add(self.named[name])

    def _reserve(self) -> int:
        self.nodes.append(("null",))  # replaced once its children are compiled
        return len(self.nodes) - 1

    def _reserve_named(self, schema: dict[str, Any]) -> int:
        """A new node's index, under the schema's name first if it has one, so that a
        reference from inside it (recursion) finds it."""
        at = self._reserve()
        name = schema.get("name")
        if schema["type"] in ("record", "error", "enum", "fixed") and isinstance(name, str):
            self.by_name.setdefault(name, at)
        return at

    def _logical(self, schema: dict[str, Any], key: str) -> int:
        at = self._reserve_named(schema)
        reader = LOGICAL_READERS[key]
        own, node = _MADE_NATIVELY.get(key, (None, None))
        if node is not None and reader is own:
            self.nodes[at] = node
            return at
        # the base type's node, then fastavro's function applied to its value
        base = self._reserve()
        self._plain(schema, schema["type"], base)
        self.nodes[at] = ("logical", base, reader, schema)
        return at

    def _plain(self, schema: dict[str, Any], kind: str, at: int) -> int:
        """Compile `schema`, of type `kind`, ignoring any logical type, into node `at`."""
        if kind in _PRIMITIVES:
            node: tuple[Any, ...] = (_PRIMITIVES[kind],)
        elif kind == "fixed":
            node = ("fixed", _size(schema.get("size")))
        elif kind == "enum":
            symbols = schema.get("symbols")
            if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
                raise Unsupported("enum symbols that are not strings")
            node = ("enum", tuple(symbols))
        elif kind == "array":
            items = self.add(schema.get("items"))
            node = ("array", items, self._takes_a_byte(items))
        elif kind == "map":
            node = ("map", self.add(schema.get("values")))
        elif kind in ("record", "error"):
            fields = schema.get("fields")
            if not isinstance(fields, list):
                raise Unsupported("record fields that are not a list")
            node = ("record", tuple((_field_name(f), self.add(f.get("type"))) for f in fields))
        else:
            raise Unsupported(f"a type fastavro's reader does not know: {kind!r:.80}")
        self.nodes[at] = node
        return at

    def _takes_a_byte(self, at: int, seen: frozenset[int] = frozenset()) -> bool:
        """Whether every encoding of node `at` takes at least one byte (null and empty
        records take none)."""
        node = self.nodes[at]
        if node[0] == "null" or at in seen:
            return False
        if node[0] == "record":
            return any(self._takes_a_byte(field, seen | {at}) for _, field in node[1])
        if node[0] == "fixed":
            return bool(node[1])
        if node[0] == "logical":
            return self._takes_a_byte(node[1], seen | {at})
        return True


def _size(size: Any) -> int:
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise Unsupported(f"a fixed size that is not a count: {size!r:.40}")
    return size


def _field_name(field: Any) -> str:
    if not isinstance(field, dict) or not isinstance(field.get("name"), str):
        raise Unsupported("a record field without a name")
    return field["name"]


def native_decoder(schema: Any, named: dict[str, Any], offset: int,
                   fallback: Callable[[bytes], Any]) -> Callable[[bytes], Any] | None:
    """A function from bytes to the datum written with `schema` (fastavro-parsed, its
    named types in `named`) from `offset` on; None where the native decoder is not
    built or not given this schema. `fallback` decodes what is nested too deep.

    The function raises EOFError for data that ends early, and IndexError, ValueError
    or UnicodeDecodeError for data that is not a datum of the schema.
    """
    if _avro_native is None:
        return None
    program = _Program(named)
    try:
        root = program.add(schema)
    except (Unsupported, RecursionError):
        return None
    return _avro_native.Decoder(program.nodes, root, offset, fallback).decode  # type: ignore[no-any-return]


__all__ = ["AVAILABLE", "Unsupported", "native_decoder"]
