"""Avro schemas: validation, the stored (canonical) text, and schema resolution.

    schema = AVRO.parse('{"type": "record", "name": "User", "fields": []}', {})
    schema.canonical()            # '{"type":"record","name":"User","fields":[]}'
    schema.read_errors(older)     # [] when `schema` can read data written with `older`

Parsing (`avro_parser`) builds a small tree of nodes (`avro_tree`: `RecordSchema`,
`UnionSchema`, ...) that every other operation walks: the texts (`avro_text`) and
schema resolution (`avro_resolution`). The rules follow the Avro specification and,
where the specification leaves room, Avro Java's `Schema.Parser` (what Confluent
uses), so that schemas Confluent accepts are accepted here too. Deliberate
differences are marked "Deviation" in those modules.

Why we validate ourselves instead of relying on `fastavro.parse_schema`: fastavro 1.13
accepts duplicate field names, bad names, nested and duplicate union branches,
negative fixed sizes, union defaults matching a later branch, and record, enum, fixed,
array defaults of the wrong shape; and it rejects schemas Avro Java accepts (a decimal
with scale > precision, which Java ignores as an invalid logical type; an integer
default on {"type": "double"}). Running it on the raw text would therefore both miss
errors and reject valid schemas, and we must walk the tree anyway to build it. The
tests in tests/unit/registry/schema_types/avro/test_schema.py record, case by case, what fastavro catches,
so they show where our checks agree with it and which ones it misses.
`AvroSchema.fastavro_schema()` hands an accepted schema to fastavro for encoding.
"""
from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Final

import fastavro

from registry.schema_types.avro_parser import parse_tree
from registry.schema_types.avro_resolution import read_problems
from registry.schema_types.avro_text import fastavro_form, write_text
from registry.schema_types.avro_tree import PRIMITIVE_TYPES, JsonValue, Node, at
from registry.schema_types.base import InvalidSchema, ParsedSchema

__all__ = ["AVRO", "PRIMITIVE_TYPES", "AvroSchema", "AvroType", "InvalidSchema", "JsonValue"]



class AvroSchema:
    """A validated Avro schema (see `ParsedSchema`). Immutable; safe to share.

    Create through `AVRO.parse`.
    """

    def __init__(self, root: Node, reference_names: frozenset[str]) -> None:
        self._root = root
        self._reference_names = reference_names

    @property
    def schema_type(self) -> str:
        return "AVRO"

    def fastavro_schema(self) -> JsonValue:
        """This schema parsed by `fastavro.parse_schema`, ready for fastavro's readers
        and writers; types defined by references are included. Do not mutate it.

        Everything is spelled out (full names, reference types inline), so fastavro
        needs no named-schema table; logical types Avro Java ignores are left out.
        Raises ValueError for the rare valid schema fastavro cannot represent, e.g. a
        type in the null namespace referred to from inside a namespace (fastavro,
        unlike Avro Java, does not fall back to the null namespace).
        """
        return self._fastavro

    @cached_property
    def _fastavro(self) -> JsonValue:
        form = fastavro_form(self._root)
        try:
            return fastavro.parse_schema(form)
        except Exception as error:  # fastavro raises assorted types for bad schemas
            raise ValueError(f"fastavro cannot use this schema: {error}") from None

    @cached_property
    def _canonical(self) -> str:
        return write_text(self._root, self._reference_names)

    @cached_property
    def _normalized(self) -> str:
        return write_text(self._root, self._reference_names, normalized=True)

    def canonical(self) -> str:
        """Compact JSON in Avro Java's `Schema.toString()` layout (see `avro_text`).

        Keeps docs, defaults, aliases and custom properties; names are written
        relative to the enclosing namespace, as Java writes them; types defined by
        references are written by name.
        """
        return self._canonical

    def resolved(self) -> str:
        """The canonical form with every type its references define written inline, at
        its first use (Confluent's `?format=resolved`, Avro Java's `Schema.toString()`
        of the schema parsed with its references)."""
        return write_text(self._root)

    def normalized(self) -> str:
        """The canonical form with every name fully qualified and no "namespace" keys.

        Confluent's `normalize=true` makes schemas that differ only in "ordering of
        properties" and "non-qualified vs. fully-qualified names" equal; the
        canonical form already removes key-order differences, and this form removes
        the naming ones (e.g. namespace "a" with name "B" equals name "a.B"). It is
        not guaranteed to equal Confluent's normalized text byte for byte.
        """
        return self._normalized

    def read_errors(self, writer: ParsedSchema) -> list[str]:
        """Why this schema, as the reader, cannot read data written with `writer`.

        Each entry is "<path in this schema>: <reason>"; empty means compatible.
        """
        if not isinstance(writer, AvroSchema):
            return [f"/: an Avro reader cannot read data written with a {writer.schema_type} schema"]
        return [f"{at(path)}: {reason}" for path, reason in read_problems(self._root, writer._root)]

    def __repr__(self) -> str:
        return f"AvroSchema({self.canonical()})"


class AvroType:
    """The Avro `SchemaType`: parses schema text into `AvroSchema`."""

    name: str = "AVRO"

    def parse(self, text: str, references: Mapping[str, str], *, lenient: bool = False) -> AvroSchema:
        """Parse and validate `text` (see `SchemaType.parse`).

        Each reference is parsed in the given order into one shared table of named
        types. A reference identical to an earlier one is skipped (the same type
        reached by two paths); any other redefinition is an error. `lenient` (for
        schemas already stored) skips the checks of names and namespaces, as
        Confluent reads its stored schemas.
        Raises InvalidSchema with a message naming the place in the schema.
        """
        root, reference_names = parse_tree(text, references, lenient=lenient)
        return AvroSchema(root, reference_names)


AVRO: Final = AvroType()
