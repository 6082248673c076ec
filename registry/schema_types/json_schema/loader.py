"""Builds the `model.Node` graph of a schema the way Confluent's loaders see it.

    root, size = load(document, resolver, draft, lenient=False)

Drafts 4, 6 and 7 follow Everit's `SchemaLoader` (what Confluent uses for them):
- a `$ref` hides its siblings: the node is the referenced schema;
- `enum`, each of `allOf`/`anyOf`/`oneOf`, `not`, `const` (draft 6+), and `type` each
  make a schema; a string `type` also takes the keywords of its kind (`{"type":
  "string", "maxLength": 3}` is one string schema), an array `type` makes an anyOf
  of one schema per type;
- keywords of a kind that `type` did not claim each make a schema of that kind
  ("properties" without "type" is an object schema);
- no schema is an empty schema, one is itself, several are an allOf of them.
Drafts 2019-09 and 2020-12 follow Confluent's `SchemaTranslator` over json-sKema, which
differs where it matters for comparisons: `$ref` may have siblings, `prefixItems` and
`items` replace tuple `items` and `additionalItems`, `dependentRequired` and
`dependentSchemas` replace `dependencies`, `unevaluatedProperties`/`unevaluatedItems`
count, and an empty `properties` or a lone `format` make no schema.

Loading is iterative (a worklist, not recursion), so a long chain of `$ref`s cannot
exhaust the stack; each JSON object becomes nodes once (memoized per object and base
URI), so the work is linear in the size of the documents.

With `lenient=True` (schemas already in the log) nothing is refused: an unresolvable
`$ref` reads as an empty schema, ill-typed keyword values are ignored, a `$ref` cycle
becomes a node that only equals itself. With `lenient=False` those raise InvalidSchema
(after the meta-schema check has already refused ill-typed keywords).
"""
from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

from registry.schema_types.base import InvalidSchema
from registry.schema_types.json_schema.drafts import Draft
from registry.schema_types.json_schema.jackson_text import JsonValue, json_key
from registry.schema_types.json_schema.model import Criterion, Kind, Node
from registry.schema_types.json_schema.references import Resolver, Target

_V4_OBJECT: Final = ("properties", "required", "minProperties", "maxProperties",
                     "dependencies", "patternProperties", "additionalProperties")
_V6_OBJECT: Final = _V4_OBJECT + ("propertyNames",)
_V4_ARRAY: Final = ("items", "additionalItems", "minItems", "maxItems", "uniqueItems")
_V6_ARRAY: Final = _V4_ARRAY + ("contains",)
_NUMBER: Final = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_STRING_EVERIT: Final = ("minLength", "maxLength", "pattern", "format")
_STRING_MODERN: Final = ("minLength", "maxLength", "pattern")
_MODERN_OBJECT: Final = ("additionalProperties", "required", "dependentRequired",
                         "dependentSchemas", "propertyNames", "minProperties",
                         "maxProperties", "unevaluatedProperties")
_MODERN_ARRAY: Final = ("items", "prefixItems", "contains", "minItems", "maxItems",
                        "uniqueItems", "unevaluatedItems")
_COMBINERS: Final = (("allOf", Criterion.ALL), ("anyOf", Criterion.ANY), ("oneOf", Criterion.ONE))
_MODERN_SIBLINGS: Final = frozenset(
    _MODERN_OBJECT + _MODERN_ARRAY + ("additionalItems",) + _NUMBER + _STRING_MODERN
    + ("type", "enum", "allOf", "anyOf", "oneOf", "not", "const", "if"))
_TYPE_KINDS: Final = {"string": Kind.STRING, "integer": Kind.NUMBER, "number": Kind.NUMBER,
                      "boolean": Kind.BOOLEAN, "null": Kind.NULL, "array": Kind.ARRAY,
                      "object": Kind.OBJECT}


def _is_number(value: object) -> bool:
    return isinstance(value, (int, Decimal)) and not isinstance(value, bool)


def _count(value: object) -> int | Decimal | None:
    """A non-negative integer keyword's value (minLength, maxItems, ...), else None."""
    if isinstance(value, bool) or not _is_number(value):
        return None
    if isinstance(value, Decimal):
        if not value.is_finite() or value != value.to_integral_value():
            return None
        # Small values become ints; a huge one stays a Decimal (comparisons still work,
        # and expanding 1E+999999999 to an int would take gigabytes).
        return int(value) if value.adjusted() < 18 else value
    return value


class _Loader:
    def __init__(self, resolver: Resolver, lenient: bool) -> None:
        self.resolver = resolver
        self.lenient = lenient
        self.memo: dict[tuple[int, str, Draft], Node] = {}
        self.work: list[Callable[[], None]] = []
        self.size = 0

    def problem(self, message: str) -> None:
        if not self.lenient:
            raise InvalidSchema(message)

    def run(self, value: JsonValue, base: str, draft: Draft) -> Node:
        root = self.node(value, base, draft, "")
        while self.work:
            self.work.pop()()
        return root

    # --- one JSON value -> its node (children filled later from the worklist) -------

    def node(self, value: JsonValue, base: str, draft: Draft, where: str) -> Node:
        key = (id(value), base, draft)
        known = self.memo.get(key)
        if known is not None:
            return known
        if value is True or value is False:
            made = self.new(Kind.TRUE if value else Kind.FALSE)
            self.memo[key] = made
            return made
        if not isinstance(value, dict):
            self.problem(f"{where or '/'}: a schema must be an object or a boolean")
            made = self.new(Kind.EMPTY)
            self.memo[key] = made
            return made
        if _is_pure_reference(value, draft):
            return self.reference_chain(value, base, draft, where)
        inner = self.resolver.inner_base(value, base, draft)
        made = self.object(value, inner, draft, where)
        self.memo[key] = made
        return made

    def reference_chain(self, value: dict[str, JsonValue], base: str, draft: Draft,
                        where: str) -> Node:
        """Follow `$ref`s to a real schema (a `$ref` object is the schema it names)."""
        chain: list[tuple[int, str, Draft]] = []
        seen: set[tuple[int, str, Draft]] = set()
        current: JsonValue = value
        while isinstance(current, dict) and _is_pure_reference(current, draft):
            key = (id(current), base, draft)
            known = self.memo.get(key)
            if known is not None:
                current = None
                found = known
                break
            if key in seen:
                self.problem(f"{where or '/'}: $ref chain {current['$ref']!r} refers back to "
                             f"itself without reaching a schema")
                found = self.new(Kind.REF_CYCLE)
                current = None
                break
            seen.add(key)
            chain.append(key)
            target = self.resolve(current.get("$ref"), base, where)
            if target is None:
                found = self.new(Kind.EMPTY)
                current = None
                break
            current, base, draft = target.value, target.base, target.draft
        else:
            found = self.node(current, base, draft, where)
        for key in chain:
            self.memo[key] = found
        return found

    def resolve(self, ref: JsonValue, base: str, where: str) -> Target | None:
        if not isinstance(ref, str):
            self.problem(f"{where or '/'}: $ref must be a string")
            return None
        try:
            return self.resolver.resolve(ref, base, where or "/")
        except InvalidSchema:
            if not self.lenient:
                raise
            return None

    def new(self, kind: Kind) -> Node:
        self.size += 1
        return Node(kind)

    def object(self, o: dict[str, JsonValue], base: str, draft: Draft, where: str) -> Node:
        parts = (self.modern_parts if draft.modern else self.everit_parts)(o, base, draft, where)
        if not parts:
            made = self.new(Kind.EMPTY)
        elif len(parts) == 1:
            made = parts[0]
        else:  # Everit's synthetic allOf of the schemas one object makes
            made = self.new(Kind.COMBINED)
            made.criterion = Criterion.ALL
            made.subschemas = parts
        self.annotate(made, o, draft)
        return made

    def annotate(self, made: Node, o: dict[str, JsonValue], draft: Draft) -> None:
        if made.kind is Kind.REF_CYCLE:
            return
        if not draft.modern:
            declared = o.get(draft.id_keyword)
            made.id = declared if isinstance(declared, str) else made.id
        for name in ("title", "description"):
            text = o.get(name)
            if isinstance(text, str):
                setattr(made, name, text)
        if "default" in o:
            made.default = json_key(o["default"])
        connect_type = o.get("connect.type")
        if isinstance(connect_type, str):
            made.connect_type = connect_type

    # --- Everit (drafts 4, 6, 7) -------------------------------------------------------

    def everit_parts(self, o: dict[str, JsonValue], base: str, draft: Draft, where: str
                     ) -> list[Node]:
        parts: list[Node] = []
        claimed: set[str] = set()
        object_keywords = _V4_OBJECT if draft is Draft.DRAFT_4 else _V6_OBJECT
        array_keywords = _V4_ARRAY if draft is Draft.DRAFT_4 else _V6_ARRAY
        groups = {Kind.OBJECT: object_keywords, Kind.ARRAY: array_keywords,
                  Kind.NUMBER: _NUMBER, Kind.STRING: _STRING_EVERIT}
        self.common_parts(o, base, draft, where, parts)
        if "type" in o:
            declared = o["type"]
            names = [declared] if isinstance(declared, str) else declared
            typed: list[Node] = []
            if isinstance(names, list):
                for name in names:
                    kind = _TYPE_KINDS.get(name) if isinstance(name, str) else None
                    if kind is None:
                        self.problem(f"{where or '/'}: unknown type {name!r}")
                        continue
                    typed.append(self.typed(kind, name == "integer", o, base, draft, where))
                    claimed.update(groups.get(kind, ()))
            else:
                self.problem(f"{where or '/'}: 'type' must be a string or an array")
            if isinstance(declared, list):
                anyof = self.new(Kind.COMBINED)
                anyof.criterion = Criterion.ANY
                anyof.subschemas = typed
                parts.append(anyof)
            else:
                parts.extend(typed)
        for kind in (Kind.ARRAY, Kind.OBJECT, Kind.NUMBER, Kind.STRING):
            if any(keyword in o and keyword not in claimed for keyword in groups[kind]):
                parts.append(self.typed(kind, False, o, base, draft, where))
        if draft is Draft.DRAFT_7 and any(k in o for k in ("if", "then", "else")):
            parts.append(self.new(Kind.CONDITIONAL))
        return parts

    def common_parts(self, o: dict[str, JsonValue], base: str, draft: Draft, where: str,
                     parts: list[Node]) -> None:
        """enum, allOf/anyOf/oneOf, not and const: the same in every draft."""
        if "enum" in o:
            if isinstance(o["enum"], list):
                made = self.new(Kind.ENUM)
                made.enum_values = frozenset(json_key(item) for item in o["enum"])
                parts.append(made)
            else:
                self.problem(f"{where or '/'}: 'enum' must be an array")
        for keyword, criterion in _COMBINERS:
            if keyword in o:
                if isinstance(o[keyword], list):
                    made = self.new(Kind.COMBINED)
                    made.criterion = criterion
                    parts.append(made)
                    self.later(self.fill_combined, made, o[keyword], base, draft, f"{where}/{keyword}")
                else:
                    self.problem(f"{where or '/'}: '{keyword}' must be an array")
        if "not" in o:
            made = self.new(Kind.NOT)
            parts.append(made)
            self.later(self.fill_not, made, o["not"], base, draft, f"{where}/not")
        if "const" in o and draft is not Draft.DRAFT_4:
            made = self.new(Kind.CONST)
            made.const_value = json_key(o["const"])
            parts.append(made)

    def typed(self, kind: Kind, integer: bool, o: dict[str, JsonValue], base: str,
              draft: Draft, where: str) -> Node:
        made = self.new(kind)
        if kind is Kind.NUMBER:
            made.requires_integer = integer
            self.fill_number(made, o, draft)
        elif kind is Kind.STRING:
            self.fill_string(made, o)
        elif kind is Kind.OBJECT:
            self.later(self.fill_object, made, o, base, draft, where)
        elif kind is Kind.ARRAY:
            self.later(self.fill_array, made, o, base, draft, where)
        return made

    # --- json-sKema + SchemaTranslator (2019-09, 2020-12) ------------------------------

    def modern_parts(self, o: dict[str, JsonValue], base: str, draft: Draft, where: str
                     ) -> list[Node]:
        partial: dict[Kind, Node] = {}
        if _nonempty_map(o.get("properties")) or _nonempty_map(o.get("patternProperties")) or any(
                keyword in o for keyword in _MODERN_OBJECT):
            partial[Kind.OBJECT] = self.typed(Kind.OBJECT, False, o, base, draft, where)
        array_keywords = _MODERN_ARRAY + (("additionalItems",) if draft is Draft.DRAFT_2019_09 else ())
        if any(keyword in o for keyword in array_keywords):
            partial[Kind.ARRAY] = self.typed(Kind.ARRAY, False, o, base, draft, where)
        if any(keyword in o for keyword in _NUMBER):
            partial[Kind.NUMBER] = self.typed(Kind.NUMBER, False, o, base, draft, where)
        if any(keyword in o for keyword in _STRING_MODERN):
            partial[Kind.STRING] = self.typed(Kind.STRING, False, o, base, draft, where)
        parts: list[Node] = []
        declared = o.get("type")
        if isinstance(declared, str) or isinstance(declared, list):
            names = [declared] if isinstance(declared, str) else declared
            typed: list[Node] = []
            for name in names:
                kind = _TYPE_KINDS.get(name) if isinstance(name, str) else None
                if kind is None:
                    self.problem(f"{where or '/'}: unknown type {name!r}")
                    continue
                # The translator merges a kind's keywords into the first type of that kind.
                made = partial.pop(kind, None) or self.new(kind)
                made.requires_integer = made.requires_integer or name == "integer"
                typed.append(made)
            if isinstance(declared, list):
                anyof = self.new(Kind.COMBINED)
                anyof.criterion = Criterion.ANY
                anyof.subschemas = typed
                parts.append(anyof)
            else:
                parts.extend(typed)
        elif "type" in o:
            self.problem(f"{where or '/'}: 'type' must be a string or an array")
        parts.extend(partial.values())
        self.common_parts(o, base, draft, where, parts)
        if "if" in o:
            parts.append(self.new(Kind.CONDITIONAL))
        if "$ref" in o:
            # A $ref beside other keywords: an allOf of them and the referenced schema,
            # resolved later so that chains of references never recurse.
            combined = self.new(Kind.COMBINED)
            combined.criterion = Criterion.ALL
            combined.subschemas = parts
            self.later(self.fill_reference, combined, o["$ref"], base, where)
            return [combined]
        return parts

    def fill_reference(self, made: Node, ref: JsonValue, base: str, where: str) -> None:
        target = self.resolve(ref, base, where)
        if target is not None:
            made.subschemas.append(self.node(target.value, target.base, target.draft, where))

    # --- filling children ------------------------------------------------------------

    def later(self, fill: Callable[..., None], *args: Any) -> None:
        self.work.append(lambda: fill(*args))

    def child(self, value: JsonValue, base: str, draft: Draft, where: str) -> Node:
        return self.node(value, base, draft, where)

    def fill_combined(self, made: Node, items: list[JsonValue], base: str, draft: Draft,
                      where: str) -> None:
        made.subschemas = [self.child(item, base, draft, f"{where}/{index}")
                           for index, item in enumerate(items)]

    def fill_not(self, made: Node, value: JsonValue, base: str, draft: Draft, where: str) -> None:
        made.negated = self.child(value, base, draft, where)

    def fill_number(self, made: Node, o: dict[str, JsonValue], draft: Draft) -> None:
        for name in ("minimum", "maximum", "multipleOf"):
            value = o.get(name)
            if _is_number(value):
                setattr(made, "multiple_of" if name == "multipleOf" else name, value)
        if draft is not Draft.DRAFT_4:  # draft 4's exclusive limits are booleans on min/max
            for name, attribute in (("exclusiveMinimum", "exclusive_minimum"),
                                    ("exclusiveMaximum", "exclusive_maximum")):
                value = o.get(name)
                if _is_number(value):
                    setattr(made, attribute, value)

    def fill_string(self, made: Node, o: dict[str, JsonValue]) -> None:
        made.min_length = _count(o.get("minLength"))
        made.max_length = _count(o.get("maxLength"))
        pattern = o.get("pattern")
        made.pattern = pattern if isinstance(pattern, str) else None

    def fill_object(self, made: Node, o: dict[str, JsonValue], base: str, draft: Draft,
                    where: str) -> None:
        made.min_properties = _count(o.get("minProperties"))
        made.max_properties = _count(o.get("maxProperties"))
        properties = o.get("properties")
        if isinstance(properties, dict):
            with_default = []
            for name, value in properties.items():
                if name == draft.id_keyword and not isinstance(value, dict) and not draft.modern:
                    continue  # Everit skips a property named like the id keyword
                made.properties[name] = self.child(value, base, draft, f"{where}/properties/{_escape(name)}")
                if isinstance(value, dict) and "default" in value:
                    with_default.append(name)
            made.properties_with_default = frozenset(with_default)
        required = o.get("required")
        if isinstance(required, list):
            made.required = frozenset(name for name in required if isinstance(name, str))
        additional = o.get("additionalProperties", True)
        if additional is False:
            made.additional_properties = False
        elif additional is not True:
            made.additional_properties_schema = self.child(additional, base, draft,
                                                           f"{where}/additionalProperties")
        patterns = o.get("patternProperties")
        if isinstance(patterns, dict):
            made.pattern_properties = [
                (pattern, self.child(value, base, draft, f"{where}/patternProperties/{_escape(pattern)}"))
                for pattern, value in patterns.items()]
        if draft.modern:
            self.fill_modern_dependencies(made, o, base, draft, where)
            uneval = o.get("unevaluatedProperties")
            if uneval is not None:
                made.unevaluated_properties = self.child(uneval, base, draft,
                                                         f"{where}/unevaluatedProperties")
        else:
            dependencies = o.get("dependencies")
            if isinstance(dependencies, dict):
                for name, value in dependencies.items():
                    if isinstance(value, list):
                        made.property_dependencies[name] = frozenset(
                            item for item in value if isinstance(item, str))
                    else:
                        made.schema_dependencies[name] = self.child(
                            value, base, draft, f"{where}/dependencies/{_escape(name)}")

    def fill_modern_dependencies(self, made: Node, o: dict[str, JsonValue], base: str,
                                 draft: Draft, where: str) -> None:
        required = o.get("dependentRequired")
        if isinstance(required, dict):
            for name, value in required.items():
                if isinstance(value, list):
                    made.property_dependencies[name] = frozenset(
                        item for item in value if isinstance(item, str))
        schemas = o.get("dependentSchemas")
        if isinstance(schemas, dict):
            for name, value in schemas.items():
                made.schema_dependencies[name] = self.child(
                    value, base, draft, f"{where}/dependentSchemas/{_escape(name)}")

    def fill_array(self, made: Node, o: dict[str, JsonValue], base: str, draft: Draft,
                   where: str) -> None:
        made.min_items = _count(o.get("minItems"))
        made.max_items = _count(o.get("maxItems"))
        made.unique_items = o.get("uniqueItems") is True
        items = o.get("items")
        if draft is Draft.DRAFT_2020_12:
            prefix = o.get("prefixItems")
            if isinstance(prefix, list):
                made.item_schemas = [self.child(item, base, draft, f"{where}/prefixItems/{index}")
                                     for index, item in enumerate(prefix)]
            if items is False:
                made.additional_items = False
            elif items is not None and items is not True:
                node = self.child(items, base, draft, f"{where}/items")
                if made.item_schemas:
                    made.additional_items_schema = node
                else:
                    made.all_items = node
        else:
            if isinstance(items, list):
                made.item_schemas = [self.child(item, base, draft, f"{where}/items/{index}")
                                     for index, item in enumerate(items)]
            elif items is not None:
                made.all_items = self.child(items, base, draft, f"{where}/items")
            additional = o.get("additionalItems", True)
            if additional is False:
                made.additional_items = False
            elif additional is not True:
                made.additional_items_schema = self.child(additional, base, draft,
                                                          f"{where}/additionalItems")
        if draft.modern:
            if "contains" in o:
                minimum = o.get("minContains", 1)
                made.min_contains = minimum if _is_number(minimum) else 1
                maximum = o.get("maxContains")
                made.max_contains = maximum if _is_number(maximum) else None
            uneval = o.get("unevaluatedItems")
            if uneval is not None:
                made.unevaluated_items = self.child(uneval, base, draft, f"{where}/unevaluatedItems")
        else:
            # Everit does not know minContains/maxContains; Confluent reads them from the
            # properties Everit left unprocessed.
            for name, attribute in (("minContains", "min_contains"), ("maxContains", "max_contains")):
                value = o.get(name)
                if _is_number(value):
                    setattr(made, attribute, value)


def _is_pure_reference(o: dict[str, JsonValue], draft: Draft) -> bool:
    """A `$ref` that stands for the schema it names: always before 2019-09 (siblings are
    ignored), and later when no sibling keyword makes a schema of its own."""
    if "$ref" not in o:
        return False
    if not draft.modern:
        return True
    return not (_nonempty_map(o.get("properties")) or _nonempty_map(o.get("patternProperties"))
                or any(keyword in o for keyword in _MODERN_SIBLINGS))


def _nonempty_map(value: object) -> bool:
    return isinstance(value, dict) and bool(value)


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def load(document: JsonValue, resolver: Resolver, draft: Draft, *, lenient: bool
         ) -> tuple[Node, int]:
    """The root node of `document` and the number of nodes made.

    Raises InvalidSchema (only when not `lenient`) for an unresolvable `$ref`, a `$ref`
    cycle, an unknown type or an ill-typed keyword the meta-schema let through.
    """
    loader = _Loader(resolver, lenient)
    root = loader.run(document, "mem://input", draft)
    return root, loader.size
