"""JSON Schema compatibility: a table of evolutions, each with its verdict per direction.

Every row gives an old and a new schema, whether BACKWARD holds (the new schema reads
data written with the old: `new.read_errors(old)`) and whether FORWARD holds (the old
reads the new: `old.read_errors(new)`), and the Confluent difference type expected
among the reasons of a refused direction. The verdicts follow Confluent's rules
(io.confluent.kafka.schemaregistry.json.diff), which are conservative: "incompatible"
does not always mean some instance breaks.

The cross-check executes each row with the `jsonschema` library: every sample instance
valid under the writer must validate under the reader wherever our checker says
"compatible"; rows marked with a counter-example must have a writer-valid sample the
reader rejects, so those verdicts are shown to be real breaks, not just conservatism.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from registry.schema_types.json_schema import JSON, JsonSchema

B, F = "backward", "forward"


@dataclass(frozen=True)
class Row:
    name: str
    old: Any
    new: Any
    backward: bool
    forward: bool
    samples: list[Any]
    change: str | None = None
    """A Confluent difference type expected in the reasons of each refused direction."""
    breaks: frozenset[str] = field(default_factory=frozenset)
    """Refused directions for which some sample must actually fail the reader."""
    fills_defaults: frozenset[str] = field(default_factory=frozenset)
    """Accepted directions where Confluent counts on the reader filling in defaults: a
    writer instance may fail the reader as is, but must pass once they are filled in."""


def obj(properties: dict[str, Any] | None = None, **keywords: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    if properties is not None:
        schema["properties"] = properties
    schema.update(keywords)
    return schema


S, N, I = {"type": "string"}, {"type": "number"}, {"type": "integer"}
OBJECTS = [{}, {"a": "x"}, {"a": 1}, {"b": "y"}, {"a": "x", "b": "y"}, {"a": "x", "b": 2},
           {"c": True}, {"a": None}]

ROWS = [
    # --- type changes and widening
    Row("same type", S, S, True, True, ["a", 1]),
    Row("integer widened to number", I, N, True, False, [1, 2.5], "TYPE_NARROWED", frozenset({F})),
    Row("string to number", S, N, False, False, ["a", 1], "TYPE_CHANGED", frozenset({B, F})),
    Row("object to array", {"type": "object"}, {"type": "array"}, False, False, [{}, []],
        "TYPE_CHANGED", frozenset({B, F})),
    Row("string to string-or-null", S, {"type": ["string", "null"]}, True, False, ["a", None],
        "TYPE_CHANGED", frozenset({F})),
    Row("anything to empty schema", S, {}, True, False, ["a", 1], "TYPE_CHANGED", frozenset({F})),
    Row("false to anything", False, S, True, False, ["a", 1], "TYPE_CHANGED", frozenset({F})),
    Row("boolean to true", {"type": "boolean"}, True, True, False, [True, 1], "TYPE_CHANGED",
        frozenset({F})),
    # --- string bounds and patterns
    Row("maxLength increased", {"type": "string", "maxLength": 3}, {"type": "string", "maxLength": 5},
        True, False, ["ab", "abcd"], "MAX_LENGTH_DECREASED", frozenset({F})),
    Row("maxLength added", S, {"type": "string", "maxLength": 3}, False, True, ["ab", "abcd"],
        "MAX_LENGTH_ADDED", frozenset({B})),
    Row("minLength decreased", {"type": "string", "minLength": 3}, {"type": "string", "minLength": 1},
        True, False, ["ab", "abcd"], "MIN_LENGTH_INCREASED", frozenset({F})),
    Row("minLength removed", {"type": "string", "minLength": 2}, S, True, False, ["a", "ab"],
        "MIN_LENGTH_ADDED", frozenset({F})),
    Row("pattern removed", {"type": "string", "pattern": "^a"}, S, True, False, ["ab", "b"],
        "PATTERN_ADDED", frozenset({F})),
    Row("pattern changed", {"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "^b"},
        False, False, ["ab", "ba"], "PATTERN_CHANGED", frozenset({B, F})),
    # --- numeric bounds
    Row("maximum increased", {"type": "number", "maximum": 10}, {"type": "number", "maximum": 20},
        True, False, [5, 15], "MAXIMUM_DECREASED", frozenset({F})),
    Row("maximum added", N, {"type": "number", "maximum": 10}, False, True, [5, 15],
        "MAXIMUM_ADDED", frozenset({B})),
    Row("minimum decreased", {"type": "number", "minimum": 5}, {"type": "number", "minimum": 0},
        True, False, [1, 6], "MINIMUM_INCREASED", frozenset({F})),
    Row("minimum removed", {"type": "number", "minimum": 5}, N, True, False, [1, 6],
        "MINIMUM_ADDED", frozenset({F})),
    Row("exclusiveMaximum increased", {"type": "number", "exclusiveMaximum": 10},
        {"type": "number", "exclusiveMaximum": 20}, True, False, [5, 15],
        "EXCLUSIVE_MAXIMUM_DECREASED", frozenset({F})),
    Row("exclusiveMinimum added", N, {"type": "number", "exclusiveMinimum": 0}, False, True,
        [-1, 1], "EXCLUSIVE_MINIMUM_ADDED", frozenset({B})),
    Row("multipleOf reduced", {"type": "number", "multipleOf": 10}, {"type": "number", "multipleOf": 5},
        True, False, [10, 15], "MULTIPLE_OF_EXPANDED", frozenset({F})),
    Row("multipleOf changed", {"type": "number", "multipleOf": 4}, {"type": "number", "multipleOf": 6},
        False, False, [4, 6, 12], "MULTIPLE_OF_CHANGED", frozenset({B, F})),
    Row("multipleOf equal at another scale", {"type": "number", "multipleOf": 0.5},
        {"type": "number", "multipleOf": 0.50}, True, True, [1.5, 2]),
    # --- enum and const
    Row("enum extended", {"enum": ["a", "b"]}, {"enum": ["a", "b", "c"]}, True, False, ["a", "c"],
        "ENUM_ARRAY_NARROWED", frozenset({F})),
    Row("enum changed", {"enum": ["a", "b"]}, {"enum": ["a", "c"]}, False, False, ["a", "b", "c"],
        "ENUM_ARRAY_CHANGED", frozenset({B, F})),
    Row("enum removed beside type", {"type": "string", "enum": ["a"]}, S, True, False, ["a", "b"],
        "TYPE_CHANGED", frozenset({F})),
    Row("const changed", {"const": "a"}, {"const": "b"}, False, False, ["a", "b"],
        "ENUM_ARRAY_CHANGED", frozenset({B, F})),
    # --- open content model (no additionalProperties)
    Row("optional property added to open model", obj({"a": S}), obj({"a": S, "b": S}), False, True,
        OBJECTS, "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", frozenset({B})),
    Row("required property added to open model", obj({"a": S}), obj({"a": S, "b": S}, required=["b"]),
        False, True, OBJECTS, "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", frozenset({B})),
    Row("property with empty schema added to open model", obj({"a": S}), obj({"a": S, "b": {}}),
        True, True, OBJECTS),
    Row("property type changed", obj({"a": S}), obj({"a": N}), False, False, OBJECTS,
        "TYPE_CHANGED", frozenset({B, F})),
    # --- closed content model
    Row("optional property added to closed model", obj({"a": S}, additionalProperties=False),
        obj({"a": S, "b": S}, additionalProperties=False), True, False, OBJECTS,
        "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", frozenset({F})),
    Row("required property without default added to closed model",
        obj({"a": S}, additionalProperties=False),
        obj({"a": S, "b": S}, additionalProperties=False, required=["b"]), False, False, OBJECTS,
        "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", frozenset({B, F})),
    Row("required property with default added to closed model",
        obj({"a": S}, additionalProperties=False),
        obj({"a": S, "b": {"type": "string", "default": "z"}}, additionalProperties=False,
            required=["b"]), True, False, OBJECTS, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        frozenset({F}), fills_defaults=frozenset({B})),
    Row("property with false removed from closed model",
        obj({"a": S, "b": False}, additionalProperties=False), obj({"a": S}, additionalProperties=False),
        True, True, OBJECTS),
    Row("closed model opened", obj({"a": S}, additionalProperties=False), obj({"a": S}), True, False,
        OBJECTS, "ADDITIONAL_PROPERTIES_REMOVED", frozenset({F})),
    Row("additionalProperties narrowed to a schema", obj({"a": S}),
        obj({"a": S}, additionalProperties=N), False, True, OBJECTS,
        "ADDITIONAL_PROPERTIES_NARROWED", frozenset({B})),
    # --- partially open content model
    Row("property added, covered by additionalProperties", obj({"a": S}, additionalProperties=S),
        obj({"a": S, "b": S}, additionalProperties=S), True, True, OBJECTS),
    Row("property added, not covered by additionalProperties", obj({"a": S}, additionalProperties=S),
        obj({"a": S, "b": N}, additionalProperties=S), False, False, OBJECTS,
        "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", frozenset({B, F})),
    Row("property added, covered by patternProperties",
        obj({"a": S}, additionalProperties=False, patternProperties={"^b": S}),
        obj({"a": S, "b": S}, additionalProperties=False, patternProperties={"^b": S}),
        True, True, OBJECTS),
    Row("property removed, covered by additionalProperties",
        obj({"a": S, "b": S}, additionalProperties=False), obj({"a": S}, additionalProperties=S),
        True, False, OBJECTS + [{"c": "z"}], "ADDITIONAL_PROPERTIES_REMOVED", frozenset({F})),
    # --- required
    Row("required removed", obj({"a": S}, required=["a"]), obj({"a": S}), True, False, OBJECTS,
        "REQUIRED_ATTRIBUTE_ADDED", frozenset({F})),
    Row("required added with default", obj({"a": {"type": "string", "default": "d"}}),
        obj({"a": {"type": "string", "default": "d"}}, required=["a"]), True, True, OBJECTS,
        fills_defaults=frozenset({B})),
    Row("required added without default", obj({"a": S}), obj({"a": S}, required=["a"]), False, True,
        OBJECTS, "REQUIRED_ATTRIBUTE_ADDED", frozenset({B})),
    # --- object bounds and dependencies
    Row("maxProperties decreased", obj(maxProperties=3), obj(maxProperties=1), False, True, OBJECTS,
        "MAX_PROPERTIES_DECREASED", frozenset({B})),
    Row("minProperties added", obj(), obj(minProperties=1), False, True, OBJECTS,
        "MIN_PROPERTIES_ADDED", frozenset({B})),
    Row("property dependency added", obj({"a": S, "b": S}),
        obj({"a": S, "b": S}, dependencies={"a": ["b"]}), False, True, OBJECTS,
        "DEPENDENCY_ARRAY_ADDED", frozenset({B})),
    Row("property dependency narrowed", obj({"a": S, "b": S, "c": S}, dependencies={"a": ["b", "c"]}),
        obj({"a": S, "b": S, "c": S}, dependencies={"a": ["b"]}), True, False,
        OBJECTS + [{"a": "x", "b": "y", "c": "z"}], "DEPENDENCY_ARRAY_EXTENDED", frozenset({F})),
    Row("schema dependency removed", obj({"a": S}, dependencies={"a": {"required": ["b"]}}),
        obj({"a": S}), True, False, OBJECTS, "DEPENDENCY_SCHEMA_ADDED", frozenset({F})),
    # --- arrays
    Row("items added", {"type": "array"}, {"type": "array", "items": S}, False, True,
        [[], ["a"], [1]], "SCHEMA_ADDED", frozenset({B})),
    Row("items type changed", {"type": "array", "items": S}, {"type": "array", "items": N}, False,
        False, [[], ["a"], [1]], "TYPE_CHANGED", frozenset({B, F})),
    Row("maxItems increased", {"type": "array", "maxItems": 1}, {"type": "array", "maxItems": 2},
        True, False, [[], [1], [1, 2]], "MAX_ITEMS_DECREASED", frozenset({F})),
    Row("minItems added", {"type": "array"}, {"type": "array", "minItems": 1}, False, True,
        [[], [1]], "MIN_ITEMS_ADDED", frozenset({B})),
    Row("uniqueItems added", {"type": "array"}, {"type": "array", "uniqueItems": True}, False, True,
        [[1, 1], [1, 2]], "UNIQUE_ITEMS_ADDED", frozenset({B})),
    Row("tuple item added to closed tuple", {"type": "array", "items": [S], "additionalItems": False},
        {"type": "array", "items": [S, N], "additionalItems": False}, True, False,
        [["a"], ["a", 1]], "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", frozenset({F})),
    Row("tuple item added to open tuple", {"type": "array", "items": [S]},
        {"type": "array", "items": [S, N]}, False, True, [["a"], ["a", 1], ["a", "b"]],
        "ITEM_ADDED_TO_OPEN_CONTENT_MODEL", frozenset({B})),
    Row("additionalItems closed", {"type": "array", "items": [S]},
        {"type": "array", "items": [S], "additionalItems": False}, False, True,
        [["a"], ["a", 1]], "ADDITIONAL_ITEMS_REMOVED", frozenset({B})),
    Row("tuple item covered by additionalItems",
        {"type": "array", "items": [S], "additionalItems": N},
        {"type": "array", "items": [S, N], "additionalItems": N}, True, True,
        [["a"], ["a", 1], ["a", 1, 2]]),
    # --- combined schemas
    Row("oneOf branch added", {"oneOf": [S, N]}, {"oneOf": [S, N, {"type": "boolean"}]}, True, False,
        ["a", 1, True], "SUM_TYPE_NARROWED", frozenset({F})),
    Row("anyOf branch changed", {"anyOf": [S, N]}, {"anyOf": [S, {"type": "boolean"}]}, False, False,
        ["a", 1, True], "COMBINED_TYPE_SUBSCHEMAS_CHANGED", frozenset({B, F})),
    Row("allOf subschema added", {"allOf": [obj({"a": S})]},
        {"allOf": [obj({"a": S}), obj(required=["a"])]}, False, True, OBJECTS,
        "PRODUCT_TYPE_EXTENDED", frozenset({B})),
    Row("oneOf to anyOf", {"oneOf": [S, N]}, {"anyOf": [S, N]}, True, False, ["a", 1],
        "COMBINED_TYPE_CHANGED"),
    Row("plain type into a union", N, {"anyOf": [N, S]}, True, False, [1, "a"],
        "TYPE_CHANGED", frozenset({F})),
    Row("union branches reordered", {"oneOf": [S, N]}, {"oneOf": [N, S]}, True, True, ["a", 1]),
    Row("not narrowed", {"not": I}, {"not": N}, False, True, [1, 1.5, "a"], "NOT_TYPE_EXTENDED",
        frozenset({B})),
    # --- references
    Row("moved into a definition", S, {"$ref": "#/definitions/s", "definitions": {"s": S}}, True, True,
        ["a", 1]),
    Row("referenced definition changed",
        {"type": "array", "items": {"$ref": "#/definitions/x"}, "definitions": {"x": S}},
        {"type": "array", "items": {"$ref": "#/definitions/x"}, "definitions": {"x": N}}, False, False,
        [["a"], [1]], "TYPE_CHANGED", frozenset({B, F})),
    Row("recursive schema unchanged",
        {"$ref": "#/definitions/n", "definitions": {"n": obj({"v": S, "next": {"$ref": "#/definitions/n"}})}},
        {"$ref": "#/definitions/n", "definitions": {"n": obj({"v": S, "next": {"$ref": "#/definitions/n"}})}},
        True, True, [{"v": "a", "next": {"v": "b"}}]),
    Row("recursive schema changed deep inside",
        {"$ref": "#/definitions/n", "definitions": {"n": obj({"v": S, "next": {"$ref": "#/definitions/n"}})}},
        {"$ref": "#/definitions/n", "definitions": {"n": obj({"v": N, "next": {"$ref": "#/definitions/n"}})}},
        False, False, [{"v": "a", "next": {"v": "b"}}, {"v": 1}], "TYPE_CHANGED", frozenset({B, F})),
    # --- 2020-12
    Row("2020-12 prefixItems closed by items false",
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "array", "prefixItems": [S]},
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "array", "prefixItems": [S],
         "items": False}, False, True, [["a"], ["a", 1]], "ADDITIONAL_ITEMS_REMOVED", frozenset({B})),
    Row("2020-12 unevaluatedProperties false added",
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"a": S}},
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"a": S},
         "unevaluatedProperties": False}, False, True, OBJECTS, "UNEVALUATED_PROPERTIES_REMOVED",
        frozenset({B})),
    Row("2020-12 dependentRequired added",
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"},
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
         "dependentRequired": {"a": ["b"]}}, False, True, OBJECTS, "DEPENDENCY_ARRAY_ADDED",
        frozenset({B})),
]


def parse(schema: Any) -> JsonSchema:
    return JSON.parse(json.dumps(schema), {})


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_verdicts_follow_confluents_rules(row: Row) -> None:
    old, new = parse(row.old), parse(row.new)
    backward, forward = new.read_errors(old), old.read_errors(new)
    assert (not backward, not forward) == (row.backward, row.forward), (
        f"verdicts (backward, forward) protect the registry's decisions; reasons: "
        f"backward={backward} forward={forward}")
    if row.change is not None:
        assert any(reason.startswith(row.change) for reason in backward + forward), (
            f"a refusal must name Confluent's difference type {row.change}: "
            f"{backward + forward}")
    for reasons in (backward, forward):
        for reason in reasons:
            assert " at '#/" in reason, f"every reason names a JSON path: {reason}"


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_cross_check_with_jsonschema(row: Row) -> None:
    old, new = parse(row.old), parse(row.new)
    for direction, writer, reader, compatible in ((B, old, new, row.backward),
                                                  (F, new, old, row.forward)):
        writer_check, reader_check = writer.validator(), reader.validator()
        written = [sample for sample in row.samples if writer_check.is_valid(sample)]
        assert written or writer.document is False, \
            f"{direction}: the row needs samples valid under the writer"
        rejected = [sample for sample in written if not reader_check.is_valid(sample)]
        if direction in row.fills_defaults:
            assert rejected, f"{direction}: the row says the reader relies on defaults"
            filled = [_with_defaults(sample, reader.document) for sample in rejected]
            assert all(reader_check.is_valid(sample) for sample in filled), (
                f"{direction}: instances must pass the reader once its defaults are filled in")
        elif compatible:
            assert not rejected, (f"{direction}: said compatible, yet the reader rejects "
                                  f"writer-valid instances {rejected}")
        elif direction in row.breaks:
            assert rejected, (f"{direction}: said incompatible and a counter-example is "
                              f"expected, but every writer-valid sample passes the reader")


def _with_defaults(instance: Any, reader: Any) -> Any:
    """`instance` with the reader's top-level property defaults filled in."""
    if not isinstance(instance, dict):
        return instance
    filled = dict(instance)
    for name, schema in reader.get("properties", {}).items():
        if isinstance(schema, dict) and "default" in schema:
            filled.setdefault(name, schema["default"])
    return filled


def test_table_is_large_enough_and_covers_both_verdicts() -> None:
    assert len(ROWS) >= 60, "the issue asks for at least ~60 evolutions"
    assert {(row.backward, row.forward) for row in ROWS} == {
        (True, True), (True, False), (False, True), (False, False)}, \
        "every combination of verdicts appears"


def test_backward_means_new_reads_old_and_forward_the_reverse() -> None:
    # Adding a string maxLength: old data may be longer, so the new schema (reader)
    # cannot read it; new data is readable by the old schema.
    old = parse(S)
    new = parse({"type": "string", "maxLength": 3})
    assert new.read_errors(old), "backward: new reading old data must be refused"
    assert old.read_errors(new) == [], "forward: old reading new data is fine"


def test_reason_is_a_readable_sentence_with_type_and_path() -> None:
    old, new = parse(obj({"a": S})), parse(obj({"a": N}))
    (reason,) = new.read_errors(old)
    assert reason == ("TYPE_CHANGED at '#/properties/a': the reader's type differs from "
                      "the writer's"), "verbose answers show Confluent's type, the path and why"


def test_other_schema_type_is_incompatible() -> None:
    from registry.schema_types.avro import AVRO
    avro = AVRO.parse('"string"', {})
    assert parse(S).read_errors(avro), "a JSON reader cannot read Avro-written data"
