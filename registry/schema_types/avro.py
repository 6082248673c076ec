"""Avro schemas: validation, the stored (canonical) text, and schema resolution.

    schema = AVRO.parse('{"type": "record", "name": "User", "fields": []}', {})
    schema.canonical()            # '{"type":"record","name":"User","fields":[]}'
    schema.read_errors(older)     # [] when `schema` can read data written with `older`

Parsing builds a small tree of nodes (`_Record`, `_Union`, ...) that every other
operation walks. The rules follow the Avro specification and, where the
specification leaves room, Avro Java's `Schema.Parser` (what Confluent uses), so that
schemas Confluent accepts are accepted here too. Deliberate differences are marked
"Deviation" below.

Why we validate ourselves instead of relying on `fastavro.parse_schema`: fastavro 1.13
accepts duplicate field names, bad names, nested and duplicate union branches,
negative fixed sizes, union defaults matching a later branch, and record, enum, fixed,
array defaults of the wrong shape; and it rejects schemas Avro Java accepts (a decimal
with scale > precision, which Java ignores as an invalid logical type; an integer
default on {"type": "double"}). Running it on the raw text would therefore both miss
errors and reject valid schemas, and we must walk the tree anyway to build it. The
tests in tests/unit/test_avro_schema.py record, case by case, what fastavro catches,
so they show where our checks agree with it and which ones it misses.
`AvroSchema.fastavro_schema()` hands an accepted schema to fastavro for encoding.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Final, Union

import fastavro
import orjson

from registry.schema_types.base import InvalidSchema, ParsedSchema
from registry.schema_types.json_text import MAX_DEPTH, load_json, shallow_for_certain

JsonValue = Any
"""Whatever `json.loads` returns."""

PRIMITIVE_TYPES: Final = frozenset(
    {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Keys the Avro spec gives a meaning; every other key is a custom property that is
# kept (Confluent keeps them, and tools such as avro.java.string rely on them). These
# are Avro Java's reserved sets: on a primitive, array or map a reserved key such as
# "doc" has no meaning and is dropped, as Java drops it.
_SCHEMA_RESERVED: Final = frozenset(
    {"type", "name", "namespace", "doc", "aliases", "fields", "symbols", "items",
     "values", "size"}
)
_ENUM_RESERVED: Final = _SCHEMA_RESERVED | {"default"}
_FIELD_RESERVED: Final = frozenset({"name", "type", "doc", "default", "order", "aliases"})
_FIELD_ORDERS: Final = frozenset({"ascending", "descending", "ignore"})

_INT_RANGE: Final = range(-(2**31), 2**31)
_LONG_RANGE: Final = range(-(2**63), 2**63)

# Writer type -> reader types that can read it (Avro spec, "Schema Resolution").
_PROMOTIONS: Final = frozenset(
    {("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"),
     ("long", "double"), ("float", "double"), ("string", "bytes"), ("bytes", "string")}
)

# Logical types Avro Java knows, and the base types each may annotate.
_LOGICAL_BASES: Final[Mapping[str, frozenset[str]]] = {
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
class _Primitive:
    kind: str
    props: Props = ()
    logical_type: str | None = None
    """The logical type if Avro Java would honour it, else None (annotation kept in props)."""


@dataclass(eq=False, slots=True)
class _Array:
    items: _Node
    props: Props
    kind: ClassVar[str] = "array"


@dataclass(eq=False, slots=True)
class _Map:
    values: _Node
    props: Props
    kind: ClassVar[str] = "map"


@dataclass(eq=False, slots=True)
class _Union:
    branches: tuple[_Node, ...]
    kind: ClassVar[str] = "union"
    props: ClassVar[Props] = ()


@dataclass(eq=False, slots=True)
class _Field:
    name: str
    type: _Node
    doc: str | None
    default: JsonValue  # NO_DEFAULT when absent
    order: str
    aliases: tuple[str, ...]
    props: Props


@dataclass(eq=False, slots=True)
class _Record:
    name: str
    namespace: str  # "" is the null namespace
    fullname: str
    doc: str | None
    aliases: tuple[str, ...]  # full names
    props: Props
    is_error: bool
    # Filled in after the record is registered, so that fields can refer to it.
    fields: list[_Field] = field(default_factory=list)
    fields_by_name: dict[str, _Field] = field(default_factory=dict)
    kind: ClassVar[str] = "record"


@dataclass(eq=False, slots=True)
class _Enum:
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
class _Fixed:
    name: str
    namespace: str
    fullname: str
    doc: str | None
    aliases: tuple[str, ...]
    props: Props
    size: int
    logical_type: str | None
    kind: ClassVar[str] = "fixed"


_Named = Union[_Record, _Enum, _Fixed]
_NAMED_TYPES: Final = (_Record, _Enum, _Fixed)
_Node = Union[_Primitive, _Array, _Map, _Union, _Record, _Enum, _Fixed]

# Attribute-free primitives are shared: most leaves of a schema are one of these.
_PLAIN: Final[Mapping[str, _Primitive]] = {kind: _Primitive(kind) for kind in PRIMITIVE_TYPES}


# --- Parsing and validation -------------------------------------------------------


def _load_json(text: str, what: str) -> JsonValue:
    """Decode `text`, raising InvalidSchema (naming `what`) if it is not a JSON document
    within the limits every schema type shares (`json_text`)."""
    return load_json(text, what)


def _at(path: str) -> str:
    return path or "/"


def _sorted_json(value: JsonValue) -> JsonValue:
    """`value` with object keys sorted at every depth, so key order never matters."""
    if isinstance(value, dict):
        return {key: _sorted_json(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted_json(item) for item in value]
    return value


def _props(obj: dict[str, JsonValue], reserved: frozenset[str]) -> Props:
    if obj.keys() <= reserved:  # the common case, answered in C: no custom properties
        return ()
    return tuple(sorted((k, _sorted_json(v)) for k, v in obj.items() if k not in reserved))


# Set while a stored schema is parsed: Confluent reads what it stored with Avro's name
# validation off (`Schema.Parser.setValidate(false)`), so a schema that an older
# release accepted (a namespace `com.acme-corp`, say) stays readable. A ContextVar, so
# that concurrent parses on other threads keep validating.
_LENIENT_NAMES: ContextVar[bool] = ContextVar("avro_lenient_names", default=False)


def _check_name(name: str, path: str, what: str) -> None:
    # The name first: nearly every name is valid, and then leniency need not be asked.
    if _NAME.fullmatch(name) is None and not _LENIENT_NAMES.get():
        raise InvalidSchema(
            f"{_at(path)}: {what} {json.dumps(name)} must match [A-Za-z_][A-Za-z0-9_]*"
        )


def _check_namespace(namespace: str, path: str) -> None:
    """A namespace is "" (none) or dot-separated names."""
    if namespace:
        for part in namespace.split("."):
            if not _NAME.fullmatch(part) and not _LENIENT_NAMES.get():  # the message only then
                _check_name(part, path, f"namespace component of {json.dumps(namespace)}:")


def _split_name(name: str, path: str, what: str) -> tuple[str, str]:
    """(namespace, short name) of a possibly dotted name, every part validated."""
    space, dot, short = name.rpartition(".")
    if dot and not space and not _LENIENT_NAMES.get():
        raise InvalidSchema(f"{_at(path)}: {what} {json.dumps(name)} has an empty namespace part")
    _check_namespace(space, path)
    _check_name(short, path, what)
    return space, short


def _qualify(name: str, namespace: str) -> str:
    """The full name `name` denotes in `namespace` (a dotted name is already full)."""
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


def _decimal_is_valid(props: Mapping[str, JsonValue], size: int | None) -> bool:
    """Avro Java's LogicalTypes.Decimal.validate, without the exception."""
    precision = props.get("precision")
    scale = props.get("scale", 0)
    if type(precision) is not int or type(scale) is not int:
        return False
    if precision <= 0 or scale < 0 or scale > precision:
        return False
    if size is not None:  # fixed: the unscaled value must fit in `size` bytes
        return precision <= math.floor(math.log10(2) * (8 * size - 1))
    return True


def _valid_logical_type(kind: str, props: Props, size: int | None = None) -> str | None:
    """The logical type Avro Java would honour on this schema, or None.

    An invalid annotation (unknown name, wrong base type, decimal with bad precision or
    scale) is not an error: the Avro spec says to ignore it and use the base type, and
    Avro Java's parser does exactly that (LogicalTypes.fromSchemaIgnoreInvalid), so
    Confluent accepts such schemas and keeps the annotation as a plain property. We
    follow Java: accept, keep the annotation in the stored text, treat as base type.
    """
    if not props:
        return None
    attributes = dict(props)
    logical = attributes.get("logicalType")
    if not isinstance(logical, str) or kind not in _LOGICAL_BASES.get(logical, ()):
        return None
    if logical == "decimal" and not _decimal_is_valid(attributes, size):
        return None
    if kind == "fixed" and logical == "uuid" and size != 16:
        return None
    if kind == "fixed" and logical == "duration" and size != 12:
        return None
    return logical


class _Parser:
    """Turns decoded JSON into a validated node tree. One instance per schema text.

    `names` maps full names to named types; it arrives holding the types defined by
    references and gains the ones this text defines.
    """

    def __init__(self, names: dict[str, _Named]) -> None:
        self.names = names
        # Defaults are checked after the whole tree exists: a default may refer to
        # a record whose fields are still being parsed (recursive types).
        self.defaults: list[tuple[_Field, str]] = []

    def parse(self, value: JsonValue) -> _Node:
        """Build and validate the tree for a whole schema. Raises InvalidSchema."""
        root = self.node(value, "", "")
        for schema_field, path in self.defaults:
            problem = _default_problem(schema_field.type, schema_field.default)
            if problem is not None:
                raise InvalidSchema(
                    f"{path}/default: invalid default for field "
                    f"'{schema_field.name}': {problem}"
                )
        return root

    def node(self, value: JsonValue, namespace: str, path: str) -> _Node:
        if isinstance(value, str):
            return self.reference(value, namespace, path)
        if isinstance(value, dict):
            return self.object(value, namespace, path)
        if isinstance(value, list):
            return self.union(value, namespace, path)
        raise InvalidSchema(
            f"{_at(path)}: a schema is a type name, an object or an array (a union), "
            f"not {json.dumps(value)}"
        )

    def reference(self, name: str, namespace: str, path: str) -> _Node:
        """Resolve a type name, as Avro Java does: primitives first, then the name in
        the enclosing namespace, then the name in the null namespace."""
        if name in PRIMITIVE_TYPES:
            return _PLAIN[name]
        found = self.names.get(_qualify(name, namespace))
        if found is None and "." not in name:
            found = self.names.get(name)
        if found is None:
            raise InvalidSchema(f"{_at(path)}: unknown type {json.dumps(name)}")
        return found

    def object(self, obj: dict[str, JsonValue], namespace: str, path: str) -> _Node:
        kind = obj.get("type")
        if not isinstance(kind, str):
            raise InvalidSchema(f"{_at(path)}: a schema object needs a string 'type'")
        if kind in PRIMITIVE_TYPES:
            props = _props(obj, _SCHEMA_RESERVED)
            if not props:
                return _PLAIN[kind]
            return _Primitive(kind, props, _valid_logical_type(kind, props))
        if kind == "record" or kind == "error":
            return self.record(obj, kind == "error", namespace, path)
        if kind == "enum":
            return self.enum(obj, namespace, path)
        if kind == "fixed":
            return self.fixed(obj, namespace, path)
        if kind == "array":
            return _Array(self.child(obj, "items", namespace, path), _props(obj, _SCHEMA_RESERVED))
        if kind == "map":
            return _Map(self.child(obj, "values", namespace, path), _props(obj, _SCHEMA_RESERVED))
        # {"type": "SomeRecord"} names a defined type; Avro Java accepts this form.
        return self.reference(kind, namespace, path)

    def child(self, obj: dict[str, JsonValue], key: str, namespace: str, path: str) -> _Node:
        if key not in obj:
            raise InvalidSchema(f"{_at(path)}: {obj['type']} has no '{key}'")
        return self.node(obj[key], namespace, f"{path}/{key}")

    def union(self, branches: list[JsonValue], namespace: str, path: str) -> _Union:
        nodes: list[_Node] = []
        seen: set[str] = set()
        for index, branch in enumerate(branches):
            branch_path = f"{path}/{index}"
            if isinstance(branch, list):
                raise InvalidSchema(f"{branch_path}: a union may not directly contain a union")
            node = self.node(branch, namespace, branch_path)
            # Branches are told apart by full name if named, else by type; logical
            # types do not count ("int" and a date are both int), as in Avro Java.
            key = getattr(node, "fullname", node.kind)
            if key in seen:
                raise InvalidSchema(f"{branch_path}: the union already has a branch of type {key!r}")
            seen.add(key)
            nodes.append(node)
        return _Union(tuple(nodes))

    def header(
        self, obj: dict[str, JsonValue], namespace: str, path: str
    ) -> tuple[str, str, str, str | None, tuple[str, ...]]:
        """Name, namespace, full name, doc and aliases of a named type.

        A dotted name carries its own namespace (the 'namespace' key is then
        ignored); otherwise 'namespace' applies, else the enclosing namespace.
        """
        name = obj.get("name")
        if not isinstance(name, str):
            raise InvalidSchema(f"{_at(path)}: {obj['type']} needs a string 'name'")
        if "." in name:
            space, short = _split_name(name, path, "name")
        else:
            short, given = name, obj.get("namespace")
            if given is not None and not isinstance(given, str):
                raise InvalidSchema(f"{_at(path)}: 'namespace' must be a string")
            space = namespace if given is None else given
            _check_namespace(space, path)
            _check_name(short, path, "name")
        fullname = _qualify(short, space)
        if fullname in PRIMITIVE_TYPES:
            raise InvalidSchema(f"{_at(path)}: cannot redefine primitive type {fullname!r}")
        if fullname in self.names:
            raise InvalidSchema(f"{_at(path)}: redefined named type {fullname!r}")
        aliases = tuple(_qualify(alias, space) for alias in _aliases(obj, path, dotted=True))
        return short, space, fullname, _doc(obj, path), aliases

    def record(
        self, obj: dict[str, JsonValue], is_error: bool, namespace: str, path: str
    ) -> _Record:
        short, space, fullname, doc, aliases = self.header(obj, namespace, path)
        fields = obj.get("fields")
        if not isinstance(fields, list):
            raise InvalidSchema(f"{_at(path)}: record {fullname!r} needs a 'fields' array")
        record = _Record(short, space, fullname, doc, aliases, _props(obj, _SCHEMA_RESERVED), is_error)
        self.names[fullname] = record  # before the fields, which may refer to it
        for index, field_obj in enumerate(fields):
            schema_field = self.field(field_obj, space, f"{path}/fields/{index}")
            if schema_field.name in record.fields_by_name:
                raise InvalidSchema(
                    f"{path}/fields/{index}: duplicate field name {schema_field.name!r} "
                    f"in record {fullname!r}"
                )
            record.fields.append(schema_field)
            record.fields_by_name[schema_field.name] = schema_field
        return record

    def field(self, obj: JsonValue, namespace: str, path: str) -> _Field:
        if not isinstance(obj, dict):
            raise InvalidSchema(f"{path}: a field must be an object")
        name = obj.get("name")
        if not isinstance(name, str):
            raise InvalidSchema(f"{path}: a field needs a string 'name'")
        _check_name(name, path, "field name")
        if "type" not in obj:
            raise InvalidSchema(f"{path}: field {name!r} has no 'type'")
        node = self.node(obj["type"], namespace, f"{path}/type")
        order = obj.get("order", "ascending")
        if order != "ascending":
            # Avro Java reads the order case-insensitively (Order.valueOf(upper case)).
            if not isinstance(order, str) or order.lower() not in _FIELD_ORDERS:
                raise InvalidSchema(f"{path}: field order must be ascending, descending or ignore")
            order = order.lower()
        # The common case first, arguments by position, helpers only when needed: every
        # registration parses each field (a 10-field record: 42 -> 35 us in all).
        doc = obj.get("doc")
        schema_field = _Field(name, node, doc if doc is None or isinstance(doc, str) else _doc(obj, path),
                              obj.get("default", NO_DEFAULT), order,
                              _aliases(obj, path, dotted=False) if "aliases" in obj else (),
                              _props(obj, _FIELD_RESERVED))
        if schema_field.default is not NO_DEFAULT:
            self.defaults.append((schema_field, path))
        return schema_field

    def enum(self, obj: dict[str, JsonValue], namespace: str, path: str) -> _Enum:
        short, space, fullname, doc, aliases = self.header(obj, namespace, path)
        symbols = obj.get("symbols")
        if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
            raise InvalidSchema(f"{_at(path)}: enum {fullname!r} needs a 'symbols' array of strings")
        for symbol in symbols:
            _check_name(symbol, path, "enum symbol")
        symbol_set = frozenset(symbols)
        if len(symbol_set) != len(symbols):
            seen: set[str] = set()
            duplicates = sorted({s for s in symbols if s in seen or seen.add(s)})  # type: ignore[func-returns-value]
            raise InvalidSchema(f"{_at(path)}: enum {fullname!r} has duplicate symbols {duplicates}")
        default = obj.get("default")
        if default is not None and (not isinstance(default, str) or default not in symbol_set):
            raise InvalidSchema(
                f"{_at(path)}: enum {fullname!r} default {json.dumps(default)} is not one of its symbols"
            )
        enum = _Enum(short, space, fullname, doc, aliases, _props(obj, _ENUM_RESERVED),
                     tuple(symbols), symbol_set, default)
        self.names[fullname] = enum
        return enum

    def fixed(self, obj: dict[str, JsonValue], namespace: str, path: str) -> _Fixed:
        short, space, fullname, doc, aliases = self.header(obj, namespace, path)
        size = obj.get("size")
        # Avro Java reads the size as a Java int: anything past 2^31-1 is invalid.
        if type(size) is not int or not 0 <= size <= 2**31 - 1:
            raise InvalidSchema(
                f"{_at(path)}: fixed {fullname!r} needs a non-negative integer 'size' below 2^31"
            )
        props = _props(obj, _SCHEMA_RESERVED)
        fixed = _Fixed(short, space, fullname, doc, aliases, props, size,
                       _valid_logical_type("fixed", props, size))
        self.names[fullname] = fixed
        return fixed


def _check_nesting(root: _Node) -> None:
    """Raise InvalidSchema if the schema nests more than MAX_DEPTH levels deep, counting
    through named types, including those its references define.

    Each document is already within MAX_DEPTH JSON levels (`json_text`), but a type
    defined elsewhere adds its own depth where it is used. Resolution and the writers
    recurse along exactly these levels, so any schema accepted here can be walked.
    A record met again on its own path (a recursive type) adds nothing; each record's
    depth is computed once. The walk itself never goes deeper than the limit.
    """
    _nesting_below(root, 0, {}, set())


def _nesting_below(node: _Node, level: int, known: dict[int, int], on_path: set[int]) -> int:
    """`_check_nesting`'s walk: the levels at and below `node`, met at `level`. A
    function of its own, not a closure: a recursive closure holds itself through its
    cell, a cycle left for the garbage collector on every parse."""
    if level > MAX_DEPTH:
        raise InvalidSchema(f"the schema nests more than {MAX_DEPTH} levels deep "
                            "(counting the types its references define)")
    if isinstance(node, _Array):
        return 1 + _nesting_below(node.items, level + 1, known, on_path)
    if isinstance(node, _Map):
        return 1 + _nesting_below(node.values, level + 1, known, on_path)
    if isinstance(node, _Union):
        deepest = 0
        for branch in node.branches:
            deepest = max(deepest, _nesting_below(branch, level + 1, known, on_path))
        return 1 + deepest
    if not isinstance(node, _Record):
        return 1
    key = id(node)
    if key in on_path:
        return 0
    below = known.get(key)
    if below is None:
        on_path.add(key)
        below = 0
        for schema_field in node.fields:
            below = max(below, _nesting_below(schema_field.type, level + 1, known, on_path))
        on_path.discard(key)
        known[key] = below
    if level + below > MAX_DEPTH:
        raise InvalidSchema(f"the schema nests more than {MAX_DEPTH} levels deep "
                            "(counting the types its references define)")
    return 1 + below


def _doc(obj: dict[str, JsonValue], path: str) -> str | None:
    doc = obj.get("doc")
    if doc is not None and not isinstance(doc, str):
        raise InvalidSchema(f"{_at(path)}: 'doc' must be a string")
    return doc


def _aliases(obj: dict[str, JsonValue], path: str, *, dotted: bool) -> tuple[str, ...]:
    """The 'aliases' list, validated: names, dotted ones allowed for named types."""
    aliases = obj.get("aliases")
    if aliases is None:
        return ()
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise InvalidSchema(f"{_at(path)}: 'aliases' must be an array of strings")
    for alias in aliases:
        if dotted:
            _split_name(alias, path, "alias")
        else:
            _check_name(alias, path, "alias")
    return tuple(aliases)


def _default_problem(node: _Node, value: JsonValue) -> str | None:
    """Why `value` is not a valid default for `node`, or None if it is.

    Follows Avro Java's Schema.isValidDefault (a union's default matches its FIRST
    branch; a record default must give every field without a default of its own).
    Deviation, stricter than Java, which only checks for a JSON string: an enum
    default must be one of the symbols, and bytes/fixed defaults may hold only code
    points 0-255 (each one byte), with exactly `size` of them for fixed. Java accepts
    these schemas but fails when the default is used, so rejecting them early is safer.
    """
    kind = node.kind
    if kind == "null":
        return None if value is None else "expected null"
    if kind == "boolean":
        return None if isinstance(value, bool) else "expected true or false"
    if kind == "int" or kind == "long":
        bounds = _INT_RANGE if kind == "int" else _LONG_RANGE
        if type(value) is int and value in bounds:
            return None
        return f"expected an integer in the {kind} range"
    if kind == "float" or kind == "double":
        return None if type(value) in (int, float) else "expected a number"
    if kind == "string":
        return None if isinstance(value, str) else "expected a string"
    if kind == "bytes":
        return _byte_string_problem(value, None)
    if kind == "fixed":
        assert isinstance(node, _Fixed)
        return _byte_string_problem(value, node.size)
    if kind == "enum":
        assert isinstance(node, _Enum)
        if isinstance(value, str) and value in node.symbol_set:
            return None
        return f"{json.dumps(value)} is not a symbol of enum {node.fullname!r}"
    if kind == "array":
        assert isinstance(node, _Array)
        if not isinstance(value, list):
            return "expected an array"
        return _first_problem(node.items, value)
    if kind == "map":
        assert isinstance(node, _Map)
        if not isinstance(value, dict):
            return "expected an object"
        return _first_problem(node.values, value.values())
    if kind == "union":
        assert isinstance(node, _Union)
        if not node.branches:
            return "an empty union has no values"
        problem = _default_problem(node.branches[0], value)
        if problem is None:
            return None
        return f"a union's default must match its first branch: {problem}"
    assert isinstance(node, _Record)
    if not isinstance(value, dict):
        return "expected an object"
    for schema_field in node.fields:
        if schema_field.name in value:
            problem = _default_problem(schema_field.type, value[schema_field.name])
            if problem is not None:
                return f"field {schema_field.name!r}: {problem}"
        elif schema_field.default is NO_DEFAULT:
            return f"field {schema_field.name!r} is missing and has no default"
    return None


def _first_problem(node: _Node, values: Iterable[JsonValue]) -> str | None:
    for value in values:
        problem = _default_problem(node, value)
        if problem is not None:
            return problem
    return None


def _byte_string_problem(value: JsonValue, size: int | None) -> str | None:
    # JSON has no bytes: the spec encodes each byte as one code point 0-255.
    if not isinstance(value, str):
        return "expected a string"
    if any(ord(c) > 0xFF for c in value):
        return "bytes defaults may only contain code points 0-255"
    if size is not None and len(value) != size:
        return f"expected {size} bytes, got {len(value)}"
    return None


# --- Writing the tree back as JSON ----------------------------------------------


@dataclass(frozen=True, slots=True)
class _Style:
    """How `_Writer` spells a schema."""

    qualify: bool
    """Full names everywhere and no "namespace" keys (normalized and fastavro forms)."""
    for_fastavro: bool = False
    """Drop logical types Avro Java ignores (fastavro would reject an invalid decimal)
    and write float/double defaults as floats (fastavro insists on them)."""


_CANONICAL: Final = _Style(qualify=False)
_NORMALIZED: Final = _Style(qualify=True)
_FASTAVRO: Final = _Style(qualify=True, for_fastavro=True)

# A short name equal to one of these would read back as something else.
_TYPE_WORDS: Final = PRIMITIVE_TYPES | {"record", "error", "enum", "fixed", "array", "map"}


class _Writer:
    """Writes a node tree as JSON values in Avro Java's `Schema.toString()` layout.

    Key order: type, name, namespace, doc, fields/symbols/size, default, custom
    properties, aliases (Java writes custom properties before aliases); fields: name,
    type, doc, default, order (only if not ascending), aliases, custom properties.
    Deviation: custom properties are sorted by key, where Java keeps source order,
    because reordering JSON keys must not change the stored text. A named type is
    written in full the first time it is met and by name afterwards; `written`
    starts with the types defined by references, so those stay by name.
    """

    def __init__(self, style: _Style, written: Iterable[str]) -> None:
        self.style = style
        self.written = set(written)
        # Whether a default or a property written may hold a float (`_dump`): only they
        # can. Told without walking them: any but a plain one (null, a string, a number
        # that is no float, a boolean), and any property, may.
        self.floats = False

    def node(self, node: _Node, space: str) -> JsonValue:
        """`node` as JSON; `space` is the enclosing namespace names are relative to."""
        if isinstance(node, _Primitive):
            props = self.props(node.props, node.logical_type)
            return {"type": node.kind, **props} if props else node.kind
        if isinstance(node, _Union):
            return [self.node(branch, space) for branch in node.branches]
        if isinstance(node, _Array):
            return {"type": "array", "items": self.node(node.items, space), **self.props(node.props)}
        if isinstance(node, _Map):
            return {"type": "map", "values": self.node(node.values, space), **self.props(node.props)}
        if node.fullname in self.written:
            return self.name(node.namespace, node.name, space)
        self.written.add(node.fullname)
        out: dict[str, JsonValue] = {"type": "error" if getattr(node, "is_error", False) else node.kind}
        if self.style.qualify:
            out["name"] = node.fullname
            if not node.namespace and space:
                out["namespace"] = ""  # else the name would read back inside `space`
        else:
            out["name"] = node.name
            if node.namespace != space:
                out["namespace"] = node.namespace
        if node.doc is not None:
            out["doc"] = node.doc
        if isinstance(node, _Record):
            out["fields"] = [self.field(f, node.namespace) for f in node.fields]
            out.update(self.props(node.props))
        elif isinstance(node, _Enum):
            out["symbols"] = list(node.symbols)
            if node.default is not None:
                out["default"] = node.default
            out.update(self.props(node.props))
        else:
            out["size"] = node.size
            out.update(self.props(node.props, node.logical_type))
        if node.aliases:
            out["aliases"] = [self.alias(alias, node.namespace) for alias in node.aliases]
        return out

    def field(self, schema_field: _Field, space: str) -> dict[str, JsonValue]:
        out: dict[str, JsonValue] = {"name": schema_field.name, "type": self.node(schema_field.type, space)}
        if schema_field.doc is not None:
            out["doc"] = schema_field.doc
        if schema_field.default is not NO_DEFAULT:
            out["default"] = default = self.default(schema_field.type, schema_field.default)
            if default is not None and type(default) not in _FLOATLESS:
                self.floats = True
        if schema_field.order != "ascending":
            out["order"] = schema_field.order
        if schema_field.aliases:
            out["aliases"] = list(schema_field.aliases)
        if schema_field.props:
            out.update(schema_field.props)
            self.floats = True
        return out

    def name(self, namespace: str, name: str, space: str) -> str:
        """How to refer to a named type from inside `space`."""
        if namespace == space and not self.style.qualify and name not in _TYPE_WORDS:
            return name
        return _qualify(name, namespace)

    def alias(self, alias: str, space: str) -> str:
        alias_space, _, short = alias.rpartition(".")
        return self.name(alias_space, short, space)

    def props(self, props: Props, logical_type: str | None = None) -> dict[str, JsonValue]:
        if not props:
            return {}
        self.floats = True
        out = dict(props)
        if self.style.for_fastavro and logical_type is None and out.get("logicalType") in _LOGICAL_BASES:
            del out["logicalType"]  # Java ignores it; fastavro would act on it or reject it
        return out

    def default(self, node: _Node, value: JsonValue) -> JsonValue:
        """A (validated) default, with object keys in a fixed order: a record's in
        field order, a map's sorted; so reordering keys does not change the text."""
        if isinstance(node, _Union):
            return self.default(node.branches[0], value)
        if isinstance(node, _Record):
            out = {}
            for schema_field in node.fields:
                if schema_field.name in value:
                    out[schema_field.name] = self.default(schema_field.type, value[schema_field.name])
            out.update((k, _sorted_json(value[k])) for k in sorted(value) if k not in out)
            return out
        if isinstance(node, _Map):
            return {k: self.default(node.values, value[k]) for k in sorted(value)}
        if isinstance(node, _Array):
            return [self.default(node.items, item) for item in value]
        if self.style.for_fastavro and node.kind in ("float", "double"):
            return float(value)
        return value


_FLOATLESS = (str, int, bool)


def _dump(writer: _Writer, root: _Node) -> str:
    """The compact text of `root` as `writer` writes it: by orjson where it holds no
    float (a 10-field record's whole canonical text: 8-9 against 18 us), else by the
    stdlib. The two write every string and integer alike (tests/unit/test_compact_json.py)
    and floats differently (`1e-07` against `1e-7`): the text is always the stdlib's."""
    form = writer.node(root, "")
    if not writer.floats:
        try:
            return orjson.dumps(form).decode("utf-8")
        except orjson.JSONEncodeError:  # an integer past 64 bits: the stdlib's text, below
            pass
    return json.dumps(form, separators=(",", ":"), ensure_ascii=False)


# --- Schema resolution (compatibility) --------------------------------------------


def _describe(node: _Node) -> str:
    fullname = getattr(node, "fullname", None)
    return f"{node.kind} {fullname!r}" if fullname else repr(node.kind)


def _names_match(reader: _Named, writer: _Named) -> bool:
    """Avro Java's SchemaCompatibility.schemaNameEquals: unqualified names are equal,
    or a reader alias is the writer's full name."""
    return reader.name == writer.name or writer.fullname in reader.aliases


Problems = list[tuple[str, str]]
"""(path relative to the node checked, reason) pairs."""

# Writer type -> the reader types it can be promoted to.
_PROMOTED_TO: Final[Mapping[str, tuple[str, ...]]] = {
    writer: tuple(reader for w, reader in sorted(_PROMOTIONS) if w == writer)
    for writer in {w for w, _ in _PROMOTIONS}
}


class _BranchIndex:
    """A reader union's branches by what resolution would try them for (same type,
    same name for named types, or a promotion), so finding
    the candidates for one writer type is a few dict lookups, not a scan: a union
    checked against a union stays linear in their sizes."""

    def __init__(self, union: _Union) -> None:
        self.by_kind: dict[str, list[tuple[int, _Node]]] = {}
        self.by_name: dict[tuple[str, str], list[tuple[int, _Node]]] = {}
        for position, branch in enumerate(union.branches):
            if isinstance(branch, _NAMED_TYPES):
                self.by_name.setdefault((branch.kind, branch.name), []).append((position, branch))
                for alias in branch.aliases:
                    self.by_name.setdefault((branch.kind, alias), []).append((position, branch))
            else:
                self.by_kind.setdefault(branch.kind, []).append((position, branch))

    def candidates(self, writer: _Node) -> list[tuple[int, _Node]]:
        """Branches resolution would try for `writer`, in branch order."""
        if isinstance(writer, _NAMED_TYPES):
            found = self.by_name.get((writer.kind, writer.name), []) + \
                self.by_name.get((writer.kind, writer.fullname), [])
        else:
            found = list(self.by_kind.get(writer.kind, ()))
            for reader_kind in _PROMOTED_TO.get(writer.kind, ()):
                found += self.by_kind.get(reader_kind, ())
        if len(found) < 2:
            return found
        unique = {position: branch for position, branch in found}
        return sorted(unique.items(), key=lambda item: item[0])


class _Resolution:
    """Checks whether a reader tree can read data written with a writer tree.

    Hand-written: fastavro resolves schemas only while decoding data and has no
    compatibility checker. Rules are the Avro spec's "Schema Resolution", checked the
    way Avro Java's SchemaCompatibility checks them. Paths are locations in the
    reader schema.

    Recursive types: a (reader record, writer record) pair already being checked
    further up is assumed compatible (its own check reports any problem). Results
    for record pairs are memoized, so a type used many times is checked once: a
    problem found is always real, while "no problems" is memoized only if it did
    not lean on such an assumption about a pair further up.
    """

    def __init__(self) -> None:
        self.memo: dict[tuple[int, int], Problems] = {}
        self.branch_indexes: dict[int, _BranchIndex] = {}  # id(reader union) -> its index
        self.active: dict[tuple[int, int], int] = {}  # pair -> depth on the check stack
        self.leaned_on = math.inf  # shallowest active depth assumed compatible

    def check(self, reader: _Node, writer: _Node) -> Problems:
        if reader is writer:
            return []
        if isinstance(writer, _Union):
            return self.writer_union(reader, writer)
        if isinstance(reader, _Union):
            return self.reader_union(reader, writer)
        if reader.kind != writer.kind:
            if (writer.kind, reader.kind) in _PROMOTIONS:
                return []
            return [("", f"reader type {_describe(reader)} cannot read writer type {_describe(writer)}")]
        # From here on both sides are of the same kind.
        if isinstance(reader, _Primitive):
            return []
        if isinstance(reader, _Array) and isinstance(writer, _Array):
            return _under("/items", self.check(reader.items, writer.items))
        if isinstance(reader, _Map) and isinstance(writer, _Map):
            return _under("/values", self.check(reader.values, writer.values))
        assert isinstance(reader, _NAMED_TYPES) and isinstance(writer, _NAMED_TYPES)
        if not _names_match(reader, writer):
            return [("", f"reader {reader.kind} {reader.fullname!r} does not match writer "
                         f"{writer.kind} {writer.fullname!r}: names differ and no reader "
                         f"alias names the writer type")]
        if isinstance(reader, _Fixed) and isinstance(writer, _Fixed):
            if reader.size != writer.size:
                return [("", f"reader fixed {reader.fullname!r} has size {reader.size} "
                             f"but writer fixed has size {writer.size}")]
            return []
        if isinstance(reader, _Enum) and isinstance(writer, _Enum):
            return _enum_problems(reader, writer)
        assert isinstance(reader, _Record) and isinstance(writer, _Record)
        return self.record(reader, writer)

    def writer_union(self, reader: _Node, writer: _Union) -> Problems:
        """Every writer branch may have been written, so each must be readable."""
        problems: Problems = []
        for index, branch in enumerate(writer.branches):
            for path, reason in self.check(reader, branch):
                problems.append((path, f"writer union branch {index}: {reason}"))
        return problems

    def reader_union(self, reader: _Union, writer: _Node) -> Problems:
        """Some reader branch must be able to read the (non-union) writer."""
        index = self.branch_indexes.get(id(reader))
        if index is None:
            index = self.branch_indexes[id(reader)] = _BranchIndex(reader)
        candidates = index.candidates(writer)
        for _, branch in candidates:
            if not self.check(branch, writer):
                return []
        if candidates:  # explain why the closest branch fails (results are memoized)
            position, branch = candidates[0]
            return _under(f"/{position}", self.check(branch, writer))
        return [("", f"no branch of the reader union can read writer type {_describe(writer)}")]

    def record(self, reader: _Record, writer: _Record) -> Problems:
        pair = (id(reader), id(writer))
        known = self.memo.get(pair)
        if known is not None:
            return known
        depth = self.active.get(pair)
        if depth is not None:
            self.leaned_on = min(self.leaned_on, depth)
            return []
        depth = len(self.active)
        self.active[pair] = depth
        outer_leaned_on, self.leaned_on = self.leaned_on, math.inf
        problems: Problems = []
        for index, reader_field in enumerate(reader.fields):
            writer_field = _writer_field(reader_field, writer)
            if writer_field is not None:
                found = self.check(reader_field.type, writer_field.type)
                problems += _under(f"/fields/{index}/type", found)
            elif reader_field.default is NO_DEFAULT:
                problems.append((f"/fields/{index}", f"reader field {reader_field.name!r} is "
                                 f"missing from the writer record and has no default"))
        del self.active[pair]
        if problems or self.leaned_on >= depth:
            self.memo[pair] = problems
        self.leaned_on = min(outer_leaned_on, self.leaned_on)
        return problems


def _writer_field(reader_field: _Field, writer: _Record) -> _Field | None:
    """The writer field a reader field reads: same name, else one of its aliases."""
    found = writer.fields_by_name.get(reader_field.name)
    if found is None:
        for alias in reader_field.aliases:
            found = writer.fields_by_name.get(alias)
            if found is not None:
                break
    return found


def _enum_problems(reader: _Enum, writer: _Enum) -> Problems:
    missing = [symbol for symbol in writer.symbols if symbol not in reader.symbol_set]
    if not missing or reader.default is not None:
        return []  # a reader default stands in for unknown symbols
    return [("", f"writer enum symbols {missing} are missing from reader enum "
                 f"{reader.fullname!r}, which has no default")]


def _under(prefix: str, problems: Problems) -> Problems:
    return [(prefix + path, reason) for path, reason in problems] if problems else problems


# --- Public interface ----------------------------------------------------------------


class AvroSchema:
    """A validated Avro schema (see `ParsedSchema`). Immutable; safe to share.

    Create through `AVRO.parse`.
    """

    def __init__(self, root: _Node, reference_names: frozenset[str]) -> None:
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
        form = _Writer(_FASTAVRO, ()).node(self._root, "")
        try:
            return fastavro.parse_schema(form)
        except Exception as error:  # fastavro raises assorted types for bad schemas
            raise ValueError(f"fastavro cannot use this schema: {error}") from None

    @cached_property
    def _canonical(self) -> str:
        return _dump(_Writer(_CANONICAL, self._reference_names), self._root)

    @cached_property
    def _normalized(self) -> str:
        return _dump(_Writer(_NORMALIZED, self._reference_names), self._root)

    def canonical(self) -> str:
        """Compact JSON in Avro Java's `Schema.toString()` layout (see `_Writer`).

        Keeps docs, defaults, aliases and custom properties; names are written
        relative to the enclosing namespace, as Java writes them; types defined by
        references are written by name.
        """
        return self._canonical

    def resolved(self) -> str:
        """The canonical form with every type its references define written inline, at
        its first use (Confluent's `?format=resolved`, Avro Java's `Schema.toString()`
        of the schema parsed with its references)."""
        return _dump(_Writer(_CANONICAL, ()), self._root)

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
        return [f"{_at(path)}: {reason}" for path, reason in _Resolution().check(self._root, writer._root)]

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
        token = _LENIENT_NAMES.set(lenient)
        try:
            return self._parse(text, references)
        except RecursionError:
            # Hostile input (thousands of nested arrays) must be a 4xx, not a crash.
            raise InvalidSchema("the schema is nested too deeply") from None
        finally:
            _LENIENT_NAMES.reset(token)

    def _parse(self, text: str, references: Mapping[str, str]) -> AvroSchema:
        names: dict[str, _Named] = {}
        seen_references: list[JsonValue] = []
        for reference_name, reference_text in references.items():
            what = f"reference {reference_name!r}"
            decoded = _load_json(reference_text, what)
            if decoded in seen_references:
                continue
            seen_references.append(decoded)
            try:
                _Parser(names).parse(decoded)
            except InvalidSchema as error:
                raise InvalidSchema(f"{what}: {error}") from None
        reference_names = frozenset(names)
        root = _Parser(names).parse(_load_json(text, "the schema"))
        # Each level of the node tree is a distinct JSON container of the texts it came
        # from (a named type used again adds its definition's containers, which are
        # other brackets of the same text): without references, a text that is shallow
        # for certain makes a shallow tree, and the walk can be skipped.
        if references or not shallow_for_certain(text):
            _check_nesting(root)
        return AvroSchema(root, reference_names)


AVRO: Final = AvroType()
