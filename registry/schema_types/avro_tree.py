"""The tree a parsed Avro schema is: one node per type, built once by the parser
(`avro_parser`) and never changed afterwards, walked by everything else (the texts in
`avro_text`, resolution in `avro_resolution`). Node classes follow Avro Java's
`Schema` subclasses (`RecordSchema`, `UnionSchema`, ...)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Union


JsonValue = Any
"""Whatever `json.loads` returns."""

PRIMITIVE_TYPES: Final = frozenset(
    {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
)


# Logical types Avro Java knows, and the base types each may annotate.
LOGICAL_BASES: Final[Mapping[str, frozenset[str]]] = {
    "date": frozenset({"int"}),
    "time-millis": frozenset({"int"}),
    "time-micros": frozenset({"long"}),
    "timestamp-millis": frozenset({"long"}),
    "timestamp-micros": frozenset({"long"}),
    "timestamp-nanos": frozenset({"long"}),
    "local-timestamp-millis": frozenset({"long"}),
    "local-timestamp-micros": frozenset({"long"}),
    "local-timestamp-nanos": frozenset({"long"}),
    "uuid": frozenset({"string", "fixed"}),
    "duration": frozenset({"fixed"}),
    "decimal": frozenset({"bytes", "fixed"}),
    "big-decimal": frozenset({"bytes"}),
}


class _NoDefault:
    """Marks a field without a default; `None` is the JSON default `null`."""

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Final = _NoDefault()

Props = tuple[tuple[str, JsonValue], ...]
"""Custom properties, sorted by key so that key order in the source text is irrelevant."""


# --- The parsed tree. Built once by `_Parser`, never changed afterwards. ------------


@dataclass(eq=False, slots=True)
class PrimitiveSchema:
    kind: str
    props: Props = ()
    logical_type: str | None = None
    """The logical type if Avro Java would honour it, else None (annotation kept in props)."""


@dataclass(eq=False, slots=True)
class ArraySchema:
    items: Node
    props: Props
    kind: ClassVar[str] = "array"


@dataclass(eq=False, slots=True)
class MapSchema:
    values: Node
    props: Props
    kind: ClassVar[str] = "map"


@dataclass(eq=False, slots=True)
class UnionSchema:
    branches: tuple[Node, ...]
    kind: ClassVar[str] = "union"
    props: ClassVar[Props] = ()


@dataclass(eq=False, slots=True)
class Field:
    name: str
    type: Node
    doc: str | None
    default: JsonValue  # NO_DEFAULT when absent
    order: str
    aliases: tuple[str, ...]
    props: Props


@dataclass(eq=False, slots=True)
class RecordSchema:
    name: str
    namespace: str  # "" is the null namespace
    fullname: str
    doc: str | None
    aliases: tuple[str, ...]  # full names
    props: Props
    is_error: bool
    # Filled in after the record is registered, so that fields can refer to it.
    fields: list[Field] = field(default_factory=list)
    fields_by_name: dict[str, Field] = field(default_factory=dict)
    kind: ClassVar[str] = "record"


@dataclass(eq=False, slots=True)
class EnumSchema:
    name: str
    namespace: str
    fullname: str
    doc: str | None
    aliases: tuple[str, ...]
    props: Props
    symbols: tuple[str, ...]
    symbol_set: frozenset[str]
    default: str | None
    kind: ClassVar[str] = "enum"


@dataclass(eq=False, slots=True)
class FixedSchema:
    name: str
    namespace: str
    fullname: str
    doc: str | None
    aliases: tuple[str, ...]
    props: Props
    size: int
    logical_type: str | None
    kind: ClassVar[str] = "fixed"


NamedSchema = Union[RecordSchema, EnumSchema, FixedSchema]
NAMED_TYPES: Final = (RecordSchema, EnumSchema, FixedSchema)
Node = Union[PrimitiveSchema, ArraySchema, MapSchema, UnionSchema, RecordSchema, EnumSchema, FixedSchema]

# Attribute-free primitives are shared: most leaves of a schema are one of these.
PLAIN: Final[Mapping[str, PrimitiveSchema]] = {kind: PrimitiveSchema(kind) for kind in PRIMITIVE_TYPES}


def at(path: str) -> str:
    return path or "/"


def sorted_json(value: JsonValue) -> JsonValue:
    """`value` with object keys sorted at every depth, so key order never matters."""
    if isinstance(value, dict):
        return {key: sorted_json(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [sorted_json(item) for item in value]
    return value


def qualify(name: str, namespace: str) -> str:
    """The full name `name` denotes in `namespace` (a dotted name is already full)."""
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"
