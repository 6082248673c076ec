"""Parsing and validating Avro schema text into the node tree (`avro_tree`).

The rules follow the Avro specification and, where the specification leaves room,
Avro Java's `Schema.Parser` (what Confluent uses), so that schemas Confluent accepts
are accepted here too. Deliberate differences are marked "Deviation" below.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from typing import Final

from registry.schema_types.avro_tree import (
    LOGICAL_BASES,
    NO_DEFAULT,
    PLAIN,
    PRIMITIVE_TYPES,
    ArraySchema,
    EnumSchema,
    Field,
    FixedSchema,
    JsonValue,
    MapSchema,
    NamedSchema,
    Node,
    PrimitiveSchema,
    Props,
    RecordSchema,
    UnionSchema,
    at,
    qualify,
    sorted_json,
)
from registry.schema_types.base import InvalidSchema
from registry.schema_types.json_text import MAX_DEPTH, load_json, shallow_for_certain


def parse_tree(text: str, references: Mapping[str, str], *, lenient: bool = False) -> tuple[Node, frozenset[str]]:
    """The node tree of `text`, and the full names of the types its references define.

    Each reference is parsed in the given order into one shared table of named
    types. A reference identical to an earlier one is skipped (the same type
    reached by two paths); any other redefinition is an error. `lenient` (for
    schemas already stored) skips the checks of names and namespaces, as
    Confluent reads its stored schemas.
    Raises InvalidSchema with a message naming the place in the schema.
    """
    token = _LENIENT_NAMES.set(lenient)
    try:
        return _parse_tree(text, references)
    except RecursionError:
        # Hostile input (thousands of nested arrays) must be a 4xx, not a crash.
        raise InvalidSchema("the schema is nested too deeply") from None
    finally:
        _LENIENT_NAMES.reset(token)


def _parse_tree(text: str, references: Mapping[str, str]) -> tuple[Node, frozenset[str]]:
    names: dict[str, NamedSchema] = {}
    seen_references: list[JsonValue] = []
    for reference_name, reference_text in references.items():
        what = f"reference {reference_name!r}"
        # Within the limits every schema type shares (`json_text`).
        decoded = load_json(reference_text, what)
        if decoded in seen_references:
            continue
        seen_references.append(decoded)
        try:
            _Parser(names).parse(decoded)
        except InvalidSchema as error:
            raise InvalidSchema(f"{what}: {error}") from None
    reference_names = frozenset(names)
    root = _Parser(names).parse(load_json(text, "the schema"))
    # Each level of the node tree is a distinct JSON container of the texts it came
    # from (a named type used again adds its definition's containers, which are
    # other brackets of the same text): without references, a text that is shallow
    # for certain makes a shallow tree, and the walk can be skipped.
    if references or not shallow_for_certain(text):
        _check_nesting(root)
    return root, reference_names


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


def _props(obj: dict[str, JsonValue], reserved: frozenset[str]) -> Props:
    if obj.keys() <= reserved:  # the common case, answered in C: no custom properties
        return ()
    return tuple(sorted((k, sorted_json(v)) for k, v in obj.items() if k not in reserved))


# Set while a stored schema is parsed: Confluent reads what it stored with Avro's name
# validation off (`Schema.Parser.setValidate(false)`), so a schema that an older
# release accepted (a namespace `com.acme-corp`, say) stays readable. A ContextVar, so
# that concurrent parses on other threads keep validating.
_LENIENT_NAMES: ContextVar[bool] = ContextVar("avro_lenient_names", default=False)


def _check_name(name: str, path: str, what: str) -> None:
    # The name first: nearly every name is valid, and then leniency need not be asked.
    if _NAME.fullmatch(name) is None and not _LENIENT_NAMES.get():
        raise InvalidSchema(
            f"{at(path)}: {what} {json.dumps(name)} must match [A-Za-z_][A-Za-z0-9_]*"
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
        raise InvalidSchema(f"{at(path)}: {what} {json.dumps(name)} has an empty namespace part")
    _check_namespace(space, path)
    _check_name(short, path, what)
    return space, short


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
    if not isinstance(logical, str) or kind not in LOGICAL_BASES.get(logical, ()):
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

    def __init__(self, names: dict[str, NamedSchema]) -> None:
        self.names = names
        # Defaults are checked after the whole tree exists: a default may refer to
        # a record whose fields are still being parsed (recursive types).
        self.defaults: list[tuple[Field, str]] = []

    def parse(self, value: JsonValue) -> Node:
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

    def node(self, value: JsonValue, namespace: str, path: str) -> Node:
        if isinstance(value, str):
            return self.reference(value, namespace, path)
        if isinstance(value, dict):
            return self.object(value, namespace, path)
        if isinstance(value, list):
            return self.union(value, namespace, path)
        raise InvalidSchema(
            f"{at(path)}: a schema is a type name, an object or an array (a union), "
            f"not {json.dumps(value)}"
        )

    def reference(self, name: str, namespace: str, path: str) -> Node:
        """Resolve a type name, as Avro Java does: primitives first, then the name in
        the enclosing namespace, then the name in the null namespace."""
        if name in PRIMITIVE_TYPES:
            return PLAIN[name]
        found = self.names.get(qualify(name, namespace))
        if found is None and "." not in name:
            found = self.names.get(name)
        if found is None:
            raise InvalidSchema(f"{at(path)}: unknown type {json.dumps(name)}")
        return found

    def object(self, obj: dict[str, JsonValue], namespace: str, path: str) -> Node:
        kind = obj.get("type")
        if not isinstance(kind, str):
            raise InvalidSchema(f"{at(path)}: a schema object needs a string 'type'")
        if kind in PRIMITIVE_TYPES:
            props = _props(obj, _SCHEMA_RESERVED)
            if not props:
                return PLAIN[kind]
            return PrimitiveSchema(kind, props, _valid_logical_type(kind, props))
        if kind == "record" or kind == "error":
            return self.record(obj, kind == "error", namespace, path)
        if kind == "enum":
            return self.enum(obj, namespace, path)
        if kind == "fixed":
            return self.fixed(obj, namespace, path)
        if kind == "array":
            return ArraySchema(self.child(obj, "items", namespace, path), _props(obj, _SCHEMA_RESERVED))
        if kind == "map":
            return MapSchema(self.child(obj, "values", namespace, path), _props(obj, _SCHEMA_RESERVED))
        # {"type": "SomeRecord"} names a defined type; Avro Java accepts this form.
        return self.reference(kind, namespace, path)

    def child(self, obj: dict[str, JsonValue], key: str, namespace: str, path: str) -> Node:
        if key not in obj:
            raise InvalidSchema(f"{at(path)}: {obj['type']} has no '{key}'")
        return self.node(obj[key], namespace, f"{path}/{key}")

    def union(self, branches: list[JsonValue], namespace: str, path: str) -> UnionSchema:
        nodes: list[Node] = []
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
        return UnionSchema(tuple(nodes))

    def header(
        self, obj: dict[str, JsonValue], namespace: str, path: str
    ) -> tuple[str, str, str, str | None, tuple[str, ...]]:
        """Name, namespace, full name, doc and aliases of a named type.

        A dotted name carries its own namespace (the 'namespace' key is then
        ignored); otherwise 'namespace' applies, else the enclosing namespace.
        """
        name = obj.get("name")
        if not isinstance(name, str):
            raise InvalidSchema(f"{at(path)}: {obj['type']} needs a string 'name'")
        if "." in name:
            space, short = _split_name(name, path, "name")
        else:
            short, given = name, obj.get("namespace")
            if given is not None and not isinstance(given, str):
                raise InvalidSchema(f"{at(path)}: 'namespace' must be a string")
            space = namespace if given is None else given
            _check_namespace(space, path)
            _check_name(short, path, "name")
        fullname = qualify(short, space)
        if fullname in PRIMITIVE_TYPES:
            raise InvalidSchema(f"{at(path)}: cannot redefine primitive type {fullname!r}")
        if fullname in self.names:
            raise InvalidSchema(f"{at(path)}: redefined named type {fullname!r}")
        aliases = tuple(qualify(alias, space) for alias in _aliases(obj, path, dotted=True))
        return short, space, fullname, _doc(obj, path), aliases

    def record(
        self, obj: dict[str, JsonValue], is_error: bool, namespace: str, path: str
    ) -> RecordSchema:
        short, space, fullname, doc, aliases = self.header(obj, namespace, path)
        fields = obj.get("fields")
        if not isinstance(fields, list):
            raise InvalidSchema(f"{at(path)}: record {fullname!r} needs a 'fields' array")
        record = RecordSchema(short, space, fullname, doc, aliases, _props(obj, _SCHEMA_RESERVED), is_error)
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

    def field(self, obj: JsonValue, namespace: str, path: str) -> Field:
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
        schema_field = Field(name, node, doc if doc is None or isinstance(doc, str) else _doc(obj, path),
                              obj.get("default", NO_DEFAULT), order,
                              _aliases(obj, path, dotted=False) if "aliases" in obj else (),
                              _props(obj, _FIELD_RESERVED))
        if schema_field.default is not NO_DEFAULT:
            self.defaults.append((schema_field, path))
        return schema_field

    def enum(self, obj: dict[str, JsonValue], namespace: str, path: str) -> EnumSchema:
        short, space, fullname, doc, aliases = self.header(obj, namespace, path)
        symbols = obj.get("symbols")
        if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
            raise InvalidSchema(f"{at(path)}: enum {fullname!r} needs a 'symbols' array of strings")
        for symbol in symbols:
            _check_name(symbol, path, "enum symbol")
        symbol_set = frozenset(symbols)
        if len(symbol_set) != len(symbols):
            seen: set[str] = set()
            duplicates = sorted({s for s in symbols if s in seen or seen.add(s)})  # type: ignore[func-returns-value]
            raise InvalidSchema(f"{at(path)}: enum {fullname!r} has duplicate symbols {duplicates}")
        default = obj.get("default")
        if default is not None and (not isinstance(default, str) or default not in symbol_set):
            raise InvalidSchema(
                f"{at(path)}: enum {fullname!r} default {json.dumps(default)} is not one of its symbols"
            )
        enum = EnumSchema(short, space, fullname, doc, aliases, _props(obj, _ENUM_RESERVED),
                     tuple(symbols), symbol_set, default)
        self.names[fullname] = enum
        return enum

    def fixed(self, obj: dict[str, JsonValue], namespace: str, path: str) -> FixedSchema:
        short, space, fullname, doc, aliases = self.header(obj, namespace, path)
        size = obj.get("size")
        # Avro Java reads the size as a Java int: anything past 2^31-1 is invalid.
        if type(size) is not int or not 0 <= size <= 2**31 - 1:
            raise InvalidSchema(
                f"{at(path)}: fixed {fullname!r} needs a non-negative integer 'size' below 2^31"
            )
        props = _props(obj, _SCHEMA_RESERVED)
        fixed = FixedSchema(short, space, fullname, doc, aliases, props, size,
                       _valid_logical_type("fixed", props, size))
        self.names[fullname] = fixed
        return fixed


def _check_nesting(root: Node) -> None:
    """Raise InvalidSchema if the schema nests more than MAX_DEPTH levels deep, counting
    through named types, including those its references define.

    Each document is already within MAX_DEPTH JSON levels (`json_text`), but a type
    defined elsewhere adds its own depth where it is used. Resolution and the writers
    recurse along exactly these levels, so any schema accepted here can be walked.
    A record met again on its own path (a recursive type) adds nothing; each record's
    depth is computed once. The walk itself never goes deeper than the limit.
    """
    _nesting_below(root, 0, {}, set())


def _nesting_below(node: Node, level: int, known: dict[int, int], on_path: set[int]) -> int:
    """`_check_nesting`'s walk: the levels at and below `node`, met at `level`. A
    function of its own, not a closure: a recursive closure holds itself through its
    cell, a cycle left for the garbage collector on every parse."""
    if level > MAX_DEPTH:
        raise InvalidSchema(f"the schema nests more than {MAX_DEPTH} levels deep "
                            "(counting the types its references define)")
    if isinstance(node, ArraySchema):
        return 1 + _nesting_below(node.items, level + 1, known, on_path)
    if isinstance(node, MapSchema):
        return 1 + _nesting_below(node.values, level + 1, known, on_path)
    if isinstance(node, UnionSchema):
        deepest = 0
        for branch in node.branches:
            deepest = max(deepest, _nesting_below(branch, level + 1, known, on_path))
        return 1 + deepest
    if not isinstance(node, RecordSchema):
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
        raise InvalidSchema(f"{at(path)}: 'doc' must be a string")
    return doc


def _aliases(obj: dict[str, JsonValue], path: str, *, dotted: bool) -> tuple[str, ...]:
    """The 'aliases' list, validated: names, dotted ones allowed for named types."""
    aliases = obj.get("aliases")
    if aliases is None:
        return ()
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise InvalidSchema(f"{at(path)}: 'aliases' must be an array of strings")
    for alias in aliases:
        if dotted:
            _split_name(alias, path, "alias")
        else:
            _check_name(alias, path, "alias")
    return tuple(aliases)


def _default_problem(node: Node, value: JsonValue) -> str | None:
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
        assert isinstance(node, FixedSchema)
        return _byte_string_problem(value, node.size)
    if kind == "enum":
        assert isinstance(node, EnumSchema)
        if isinstance(value, str) and value in node.symbol_set:
            return None
        return f"{json.dumps(value)} is not a symbol of enum {node.fullname!r}"
    if kind == "array":
        assert isinstance(node, ArraySchema)
        if not isinstance(value, list):
            return "expected an array"
        return _first_problem(node.items, value)
    if kind == "map":
        assert isinstance(node, MapSchema)
        if not isinstance(value, dict):
            return "expected an object"
        return _first_problem(node.values, value.values())
    if kind == "union":
        assert isinstance(node, UnionSchema)
        if not node.branches:
            return "an empty union has no values"
        problem = _default_problem(node.branches[0], value)
        if problem is None:
            return None
        return f"a union's default must match its first branch: {problem}"
    assert isinstance(node, RecordSchema)
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


def _first_problem(node: Node, values: Iterable[JsonValue]) -> str | None:
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
