"""The loaded form of a JSON schema that compatibility checks walk.

It mirrors the object model Confluent compares (Everit's `Schema` classes: StringSchema,
NumberSchema, ObjectSchema, ArraySchema, EnumSchema, CombinedSchema, ...), because
Confluent's rules are written against that model: a schema's *kind* is what Everit's
loader makes of its keywords (`{"properties": {}}` is an object schema even without
"type"; `{"type": "string", "enum": [...]}` is an allOf of a string and an enum
schema), and two schemas of different kinds are a TYPE_CHANGED. `$ref`s are resolved
while loading: a node's children point at the nodes their references name, so the
graph may have cycles (a recursive schema).
"""
from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

Number = int | Decimal


class Kind(enum.Enum):
    """Everit's schema classes; schemas of different kinds never compare as equal types."""

    EMPTY = "empty"        # {} (and a schema whose keywords make no constraint)
    TRUE = "true"          # true; behaves as EMPTY, but is a different class in Everit
    FALSE = "false"
    STRING = "string"
    NUMBER = "number"      # also "integer" (requires_integer)
    BOOLEAN = "boolean"
    NULL = "null"
    OBJECT = "object"
    ARRAY = "array"
    ENUM = "enum"
    CONST = "const"
    COMBINED = "combined"  # allOf / anyOf / oneOf, and Everit's synthetic allOf
    NOT = "not"
    CONDITIONAL = "conditional"  # if/then/else: Confluent compares none of it
    REF_CYCLE = "$ref cycle"     # a $ref chain that never reaches a schema


class Criterion(enum.Enum):
    ALL = "allOf"
    ANY = "anyOf"
    ONE = "oneOf"


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
"""No "default" keyword (None is the JSON default null)."""


@dataclass(eq=False, slots=True)
class Node:
    """One schema. Fields that do not apply to `kind` keep their defaults.

    Built by `loader.load` and never changed afterwards; compared by identity.
    """

    kind: Kind
    # Annotations every kind carries (Confluent reports their changes as compatible).
    id: str | None = None
    title: str | None = None
    description: str | None = None
    default: Any = ABSENT            # json_key of the default value
    connect_type: str | None = None  # the "connect.type" property (Kafka Connect)

    # STRING
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None

    # NUMBER
    minimum: Number | None = None
    maximum: Number | None = None
    exclusive_minimum: Number | None = None  # the numeric limit (draft 6+)
    exclusive_maximum: Number | None = None
    multiple_of: Number | None = None
    requires_integer: bool = False

    # OBJECT
    properties: dict[str, Node] = field(default_factory=dict)
    properties_with_default: frozenset[str] = frozenset()
    required: frozenset[str] = frozenset()
    additional_properties: bool = True
    additional_properties_schema: Node | None = None
    pattern_properties: list[tuple[str, Node]] = field(default_factory=list)
    property_dependencies: dict[str, frozenset[str]] = field(default_factory=dict)
    schema_dependencies: dict[str, Node] = field(default_factory=dict)
    min_properties: int | None = None
    max_properties: int | None = None
    unevaluated_properties: Node | None = None  # 2019-09 and later only

    # ARRAY
    all_items: Node | None = None
    item_schemas: list[Node] | None = None
    additional_items: bool = True
    additional_items_schema: Node | None = None
    min_items: int | None = None
    max_items: int | None = None
    unique_items: bool = False
    min_contains: Number | None = None
    max_contains: Number | None = None
    unevaluated_items: Node | None = None  # 2019-09 and later only

    # ENUM (json_keys of the values) and CONST (json_key of the value)
    enum_values: frozenset[Any] = frozenset()
    const_value: Any = None

    # COMBINED
    criterion: Criterion | None = None
    subschemas: list[Node] = field(default_factory=list)

    # NOT
    negated: Node | None = None

    fingerprint: bytes | None = None
    """A digest of everything the node and the nodes it reaches hold, so equal digests
    mean identical schemas; None for a node that reaches a cycle (see `fingerprint_all`)."""

    @property
    def is_emptyish(self) -> bool:
        """Everit's `instanceof EmptySchema` (TrueSchema extends EmptySchema)."""
        return self.kind is Kind.EMPTY or self.kind is Kind.TRUE

    def children(self) -> list[Node]:
        """Every node this one refers to directly."""
        found: list[Node] = []
        found += self.properties.values()
        found += self.schema_dependencies.values()
        found += [schema for _, schema in self.pattern_properties]
        found += self.subschemas
        if self.item_schemas:
            found += self.item_schemas
        for single in (self.additional_properties_schema, self.unevaluated_properties,
                       self.all_items, self.additional_items_schema,
                       self.unevaluated_items, self.negated):
            if single is not None:
                found.append(single)
        return found


def _local(node: Node) -> tuple[Any, ...]:
    """Everything of `node` except its children (which `fingerprint_all` adds)."""
    return (
        node.kind.value, node.id, node.title, node.description, repr(node.default),
        node.connect_type, node.min_length, node.max_length, node.pattern, repr(node.minimum),
        repr(node.maximum), repr(node.exclusive_minimum), repr(node.exclusive_maximum),
        repr(node.multiple_of), node.requires_integer, list(node.properties),
        sorted(node.properties_with_default), sorted(node.required), node.additional_properties,
        node.additional_properties_schema is None, [p for p, _ in node.pattern_properties],
        sorted((k, sorted(v)) for k, v in node.property_dependencies.items()),
        list(node.schema_dependencies), repr(node.min_properties), repr(node.max_properties),
        node.unevaluated_properties is None, node.all_items is None,
        None if node.item_schemas is None else len(node.item_schemas), node.additional_items,
        node.additional_items_schema is None, repr(node.min_items), repr(node.max_items),
        node.unique_items, repr(node.min_contains), repr(node.max_contains),
        node.unevaluated_items is None, sorted(repr(v) for v in node.enum_values),
        repr(node.const_value), node.criterion.value if node.criterion else None,
        len(node.subschemas), node.negated is None,
    )


def fingerprint_all(root: Node) -> None:
    """Set `fingerprint` on every node reachable from `root`, iteratively.

    A node whose graph has no cycle gets sha256 of its own content and its children's
    digests (shared sub-schemas are digested once, so this is linear); a node that
    reaches a cycle keeps None.
    """
    WHITE, GREY, BLACK = 0, 1, 2
    state: dict[int, int] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if expanded:
            children = node.children()
            prints = [child.fingerprint for child in children]
            if all(p is not None for p in prints) and not any(
                    state.get(id(child)) == GREY for child in children):
                digest = hashlib.sha256(repr(_local(node)).encode("utf-8", "surrogatepass"))
                for p in prints:
                    digest.update(p)  # type: ignore[arg-type]
                node.fingerprint = digest.digest()
            state[key] = BLACK
            continue
        if state.get(key, WHITE) != WHITE:
            continue
        state[key] = GREY
        stack.append((node, True))
        for child in node.children():
            if state.get(id(child), WHITE) == WHITE:
                stack.append((child, False))
