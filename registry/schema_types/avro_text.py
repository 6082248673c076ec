"""Writing an Avro node tree back as JSON: the stored (canonical) text, the normalized
one, and the form handed to fastavro."""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import orjson

from registry.schema_types.avro_tree import (
    LOGICAL_BASES,
    NO_DEFAULT,
    PRIMITIVE_TYPES,
    ArraySchema,
    EnumSchema,
    Field,
    JsonValue,
    MapSchema,
    Node,
    PrimitiveSchema,
    Props,
    RecordSchema,
    UnionSchema,
    qualify,
    sorted_json,
)


def write_text(root: Node, by_name: Iterable[str] = (), *, normalized: bool = False) -> str:
    """`root` as compact JSON in Avro Java's `Schema.toString()` layout (`_Writer`);
    the types named in `by_name` (those references define) are written by name. With
    `normalized`, every name is fully qualified and no "namespace" key is written."""
    return _dump(_Writer(_NORMALIZED if normalized else _CANONICAL, by_name), root)


def fastavro_form(root: Node) -> JsonValue:
    """`root` as JSON values for `fastavro.parse_schema`: everything spelled out (full
    names, every type inline), logical types Avro Java ignores left out."""
    return _Writer(_FASTAVRO, ()).node(root, "")


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

    def node(self, node: Node, space: str) -> JsonValue:
        """`node` as JSON; `space` is the enclosing namespace names are relative to."""
        if isinstance(node, PrimitiveSchema):
            props = self.props(node.props, node.logical_type)
            return {"type": node.kind, **props} if props else node.kind
        if isinstance(node, UnionSchema):
            return [self.node(branch, space) for branch in node.branches]
        if isinstance(node, ArraySchema):
            return {"type": "array", "items": self.node(node.items, space), **self.props(node.props)}
        if isinstance(node, MapSchema):
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
        if isinstance(node, RecordSchema):
            out["fields"] = [self.field(f, node.namespace) for f in node.fields]
            out.update(self.props(node.props))
        elif isinstance(node, EnumSchema):
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

    def field(self, schema_field: Field, space: str) -> dict[str, JsonValue]:
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
        return qualify(name, namespace)

    def alias(self, alias: str, space: str) -> str:
        alias_space, _, short = alias.rpartition(".")
        return self.name(alias_space, short, space)

    def props(self, props: Props, logical_type: str | None = None) -> dict[str, JsonValue]:
        if not props:
            return {}
        self.floats = True
        out = dict(props)
        if self.style.for_fastavro and logical_type is None and out.get("logicalType") in LOGICAL_BASES:
            del out["logicalType"]  # Java ignores it; fastavro would act on it or reject it
        return out

    def default(self, node: Node, value: JsonValue) -> JsonValue:
        """A (validated) default, with object keys in a fixed order: a record's in
        field order, a map's sorted; so reordering keys does not change the text."""
        if isinstance(node, UnionSchema):
            return self.default(node.branches[0], value)
        if isinstance(node, RecordSchema):
            out = {}
            for schema_field in node.fields:
                if schema_field.name in value:
                    out[schema_field.name] = self.default(schema_field.type, value[schema_field.name])
            out.update((k, sorted_json(value[k])) for k in sorted(value) if k not in out)
            return out
        if isinstance(node, MapSchema):
            return {k: self.default(node.values, value[k]) for k in sorted(value)}
        if isinstance(node, ArraySchema):
            return [self.default(node.items, item) for item in value]
        if self.style.for_fastavro and node.kind in ("float", "double"):
            return float(value)
        return value


_FLOATLESS = (str, int, bool)


def _dump(writer: _Writer, root: Node) -> str:
    """The compact text of `root` as `writer` writes it: by orjson where it holds no
    float (a 10-field record's whole canonical text: 8-9 against 18 us), else by the
    stdlib. The two write every string and integer alike (tests/unit/store/test_compact_json.py)
    and floats differently (`1e-07` against `1e-7`): the text is always the stdlib's."""
    form = writer.node(root, "")
    if not writer.floats:
        try:
            return orjson.dumps(form).decode("utf-8")
        except orjson.JSONEncodeError:  # an integer past 64 bits: the stdlib's text, below
            pass
    return json.dumps(form, separators=(",", ":"), ensure_ascii=False)
