"""JSON Schema parsing: validation per draft, stored forms, references, hostile input.

Hostile-input tests assert outcomes and that work stays bounded (budgets count
comparisons, not seconds); timing is measured in bench/compat_json.py, not here.
"""
from __future__ import annotations

import json
import random
from typing import Any

import pytest

from registry.schema_types import SCHEMA_TYPES
from registry.schema_types.base import CheckTooCostly, InvalidSchema
from registry.schema_types.json_schema import JSON, JsonSchema
from registry.schema_types.json_schema.drafts import Draft
from registry.schema_types.json_schema.schema import MAX_SCHEMA_DEPTH

D4 = "http://json-schema.org/draft-04/schema#"
D6 = "http://json-schema.org/draft-06/schema#"
D7 = "http://json-schema.org/draft-07/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D2020 = "https://json-schema.org/draft/2020-12/schema"


def parse(schema: Any, references: dict[str, Any] | None = None, **kw: Any) -> JsonSchema:
    text = schema if isinstance(schema, str) else json.dumps(schema)
    refs = {name: json.dumps(doc) for name, doc in (references or {}).items()}
    return JSON.parse(text, refs, **kw)


def test_registered_under_confluents_name() -> None:
    assert SCHEMA_TYPES["JSON"] is JSON, "requests with schemaType JSON must reach this type"


# --- drafts and meta-schema validation ------------------------------------------------

GOOD = [
    (D4, {"$schema": D4, "type": "number", "minimum": 0, "exclusiveMinimum": True}),
    (D4, {"$schema": D4, "id": "http://x/y", "properties": {"a": {"type": "string"}}}),
    (D6, {"$schema": D6, "type": "number", "exclusiveMinimum": 0, "const": 1}),
    (D7, {"$schema": D7, "if": {"type": "string"}, "then": {"maxLength": 2}}),
    (D7, {"type": "object", "properties": {"a": True, "b": False}}),
    (D2019, {"$schema": D2019, "type": "object", "dependentRequired": {"a": ["b"]},
             "unevaluatedProperties": False}),
    (D2020, {"$schema": D2020, "type": "array", "prefixItems": [{"type": "string"}], "items": False}),
    (D2020, {"$schema": D2020, "$defs": {"a": {"$anchor": "A", "type": "string"}}, "$ref": "#A"}),
]

BAD = [
    (D4, {"$schema": D4, "type": "number", "exclusiveMinimum": 0}, "exclusiveMinimum"),
    (D4, {"$schema": D4, "required": []}, "required"),
    (D6, {"$schema": D6, "type": "number", "exclusiveMinimum": True}, "exclusiveMinimum"),
    (D7, {"type": "strin"}, "type"),
    (D7, {"minLength": -1}, "minLength"),
    (D7, {"properties": {"a": 5}}, "properties/a"),
    (D4, {"enum": [1, 1.0], "$schema": D4}, "enum"),
    (D2019, {"$schema": D2019, "type": "object", "dependentRequired": {"a": "b"}}, "dependentRequired"),
    (D2020, {"$schema": D2020, "prefixItems": {"type": "string"}}, "prefixItems"),
]


@pytest.mark.parametrize("url,schema", GOOD, ids=[f"{u}:{i}" for i, (u, _) in enumerate(GOOD)])
def test_valid_schemas_of_each_draft_are_accepted(url: str, schema: Any) -> None:
    parsed = parse(schema)
    assert parsed.canonical() == json.dumps(schema, separators=(",", ":")), \
        "an accepted schema is stored as compact JSON in its own key order"


@pytest.mark.parametrize("url,schema,where", BAD, ids=[f"{u}:{i}" for i, (u, _, _) in enumerate(BAD)])
def test_meta_schema_violations_are_refused_with_the_place(url: str, schema: Any, where: str) -> None:
    with pytest.raises(InvalidSchema) as refused:
        parse(schema)
    assert where in str(refused.value), "the 42201 message says where the schema is wrong"
    assert parse(schema, lenient=True).canonical(), \
        "a stored schema is read leniently, as Confluent's parser reads it"


@pytest.mark.parametrize("schema,draft", [
    ({}, Draft.DRAFT_7), ({"$schema": "http://example.com/other"}, Draft.DRAFT_7),
    ({"$schema": D4}, Draft.DRAFT_4), ({"$schema": "http://json-schema.org/schema#"}, Draft.DRAFT_4),
    ({"$schema": D6[:-1]}, Draft.DRAFT_6), ({"$schema": D2019 + "#"}, Draft.DRAFT_2019_09),
    ({"$schema": D2020}, Draft.DRAFT_2020_12), (True, Draft.DRAFT_7),
])
def test_schema_keyword_picks_the_draft_as_confluent_does(schema: Any, draft: Draft) -> None:
    assert parse(schema).draft is draft, "draft 7 when $schema is absent or unknown"


# --- canonical and normalized forms ------------------------------------------------------

def test_whitespace_does_not_change_the_stored_text() -> None:
    schema = {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}}
    assert parse(json.dumps(schema, indent=4)).canonical() == parse(schema).canonical(), \
        "reformatted text must dedupe to the same id"


def test_key_order_is_kept_in_canonical_and_sorted_in_normalized() -> None:
    one = parse('{"type": "object", "properties": {"b": {}, "a": {}}}')
    other = parse('{"properties": {"a": {}, "b": {}}, "type": "object"}')
    assert one.canonical() == '{"type":"object","properties":{"b":{},"a":{}}}', \
        "Confluent stores the schema's own key order"
    assert one.canonical() != other.canonical(), "as in Confluent, key order is content"
    assert one.normalized() == other.normalized() == \
        '{"properties":{"a":{},"b":{}},"type":"object"}', "normalize=true sorts keys at every depth"


@pytest.mark.parametrize("text,stored", [
    ('{"maximum": 1.50}', '{"maximum":1.50}'),
    ('{"maximum": 1e2}', '{"maximum":1E+2}'),
    ('{"maximum": 1E-7}', '{"maximum":1E-7}'),
    ('{"maximum": -0.0}', '{"maximum":0.0}'),
    ('{"maximum": 10}', '{"maximum":10}'),
    ('{"description": "é \\u001f \\" \\\\ /"}', '{"description":"é \\u001F \\" \\\\ /"}'),
    ('{"description": "a", "description": "b"}', '{"description":"b"}'),
])
def test_stored_text_matches_jacksons(text: str, stored: str) -> None:
    assert parse(text).canonical() == stored, \
        "numbers as BigDecimal.toString, Jackson's escapes, last duplicate key wins"


def test_document_is_plain_json_for_clients() -> None:
    parsed = parse({"type": "number", "maximum": 1.5})
    assert parsed.document == {"type": "number", "maximum": 1.5}
    assert isinstance(parsed.document["maximum"], float), "serializers get plain floats"


# --- references -----------------------------------------------------------------------

ADDRESS = {"type": "object", "properties": {"street": {"type": "string"}},
           "definitions": {"Zip": {"type": "string", "pattern": "^[0-9]{5}$"}}}


def test_ref_to_another_subjects_schema_by_reference_name() -> None:
    person = parse({"type": "object", "properties": {
        "home": {"$ref": "address.json"}, "zip": {"$ref": "address.json#/definitions/Zip"}}},
        {"address.json": ADDRESS})
    check = person.validator()
    assert check.is_valid({"home": {"street": "Main"}, "zip": "12345"})
    assert not check.is_valid({"zip": "1234"}), "the validator resolves the reference's definitions"
    assert not check.is_valid({"home": {"street": 5}})


def test_ref_to_defs_finds_definitions_as_confluent_bridges_them() -> None:
    parsed = parse({"properties": {"z": {"$ref": "address.json#/$defs/Zip"}}}, {"address.json": ADDRESS})
    assert not parsed.validator().is_valid({"z": "x"}), "#/$defs/Zip finds definitions/Zip"


def test_transitive_references_resolve() -> None:
    parsed = parse({"$ref": "b.json"}, {"a.json": {"type": "string"}, "b.json": {"$ref": "a.json"}})
    assert not parsed.validator().is_valid(5)
    assert parse({"type": "integer"}).read_errors(parsed), "a string is not an integer"


def test_reference_change_is_seen_by_compatibility() -> None:
    old = parse({"$ref": "a.json"}, {"a.json": {"type": "string"}})
    new = parse({"$ref": "a.json"}, {"a.json": {"type": "integer"}})
    assert new.read_errors(old), "a changed referenced schema changes the verdict"


@pytest.mark.parametrize("ref", ["http://example.com/schema.json", "https://example.com/s#/a",
                                 "other.json", "#/definitions/missing", "#Anchor"])
def test_unresolvable_refs_are_refused_and_never_fetched(ref: str) -> None:
    with pytest.raises(InvalidSchema) as refused:
        parse({"properties": {"a": {"$ref": ref}}})
    assert "$ref" in str(refused.value)
    lenient = parse({"properties": {"a": {"$ref": ref}}}, lenient=True)
    assert lenient.read_errors(lenient) == [], "a stored schema with a dangling $ref stays usable"


def test_ref_to_a_bundled_meta_schema_resolves_offline() -> None:
    parsed = parse({"properties": {"s": {"$ref": "http://json-schema.org/draft-07/schema#"}}})
    assert parsed.validator().is_valid({"s": {"type": "string"}})


def test_ref_cycle_without_a_schema_is_refused() -> None:
    with pytest.raises(InvalidSchema):
        parse({"$ref": "#"})
    assert parse({"$ref": "#"}, lenient=True).canonical() == '{"$ref":"#"}'


def test_recursive_schema_compares_with_itself() -> None:
    tree = {"$ref": "#/definitions/t", "definitions": {"t": {
        "type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/t"}}}}}}
    parsed = parse(tree)
    assert parsed.read_errors(parse(tree)) == [], "recursion terminates and finds no change"


# --- hostile input --------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "", "   ", "{", "5", '"x"', "null", "[]", "NaN", '{"a": NaN}', '{"a": Infinity}',
    '{"title": "\\ud800"}', '{"\\udfff": 1}', '{"maximum": 1' + "0" * 1000 + "}",
    "[" * 5000 + "]" * 5000, '{"a":' * 200 + "1" + "}" * 200,
])
def test_bad_text_is_invalid_schema_in_both_modes(text: str) -> None:
    for lenient in (False, True):
        with pytest.raises(InvalidSchema):
            JSON.parse(text, {}, lenient=lenient)


def test_bad_reference_text_is_invalid_schema() -> None:
    with pytest.raises(InvalidSchema, match="reference 'a.json'"):
        JSON.parse('{"$ref": "a.json"}', {"a.json": "{not json"})


@pytest.mark.parametrize("text,stored", [
    ('{"type": "number", "maximum": 1e999}', '{"type":"number","maximum":1E+999}'),
    ('{"type": "number", "multipleOf": 1E-999999999}', '{"type":"number","multipleOf":1E-999999999}'),
    ('{"type": "number", "multipleOf": 1E+999999999}', '{"type":"number","multipleOf":1E+999999999}'),
    ('{"type": "string", "maxLength": 1E+999999999}', '{"type":"string","maxLength":1E+999999999}'),
    ('{"type": "array", "maxItems": 1E+20}', '{"type":"array","maxItems":1E+20}'),
])
def test_huge_numbers_are_kept_exactly_and_compare(text: str, stored: str) -> None:
    parsed = JSON.parse(text, {})
    assert parsed.canonical() == stored, "numbers are stored as Jackson writes BigDecimals"
    small = parse({"type": json.loads(text)["type"], "multipleOf": 3, "maxLength": 2, "maxItems": 1})
    assert isinstance(small.read_errors(parsed), list) and isinstance(parsed.read_errors(small), list), \
        "comparing huge bounds neither overflows nor expands them"


def test_nesting_limit_is_the_same_for_registration_and_checks() -> None:
    def nested(depth: int) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        for _ in range(depth - 1):
            schema = {"type": "object", "properties": {"a": schema}}
        return schema

    deepest = parse(nested(MAX_SCHEMA_DEPTH))
    changed = nested(MAX_SCHEMA_DEPTH)
    leaf = changed
    while "properties" in leaf:
        leaf = leaf["properties"]["a"]
    leaf["type"] = "integer"
    assert parse(changed).read_errors(deepest), "a schema at the limit can be compared"
    with pytest.raises(InvalidSchema, match="nested more than"):
        parse(nested(MAX_SCHEMA_DEPTH + 1))
    stored = parse(nested(MAX_SCHEMA_DEPTH + 1), lenient=True)
    assert stored.read_errors(parse(nested(MAX_SCHEMA_DEPTH + 1), lenient=True)) == [], \
        "a stored schema past the new-schema limit still compares"


def test_fan_out_of_refs_is_compared_once_per_pair() -> None:
    # 100 references per level, 5 levels: 10^10 paths, 500 definitions.
    definitions: dict[str, Any] = {}
    for level in range(5):
        for i in range(100):
            definitions[f"d{level}_{i}"] = {"type": "string"} if level == 4 else {
                "type": "object",
                "properties": {f"p{j}": {"$ref": f"#/definitions/d{level + 1}_{j}"} for j in range(100)}}
    schema = {"definitions": definitions, "$ref": "#/definitions/d0_0"}
    old = parse(schema, lenient=True)  # (the meta-schema check is not under test here)
    schema["definitions"]["d4_42"] = {"type": "integer"}
    new = parse(schema, lenient=True)
    reasons = new.read_errors(old)
    assert reasons and all("TYPE_CHANGED" in r for r in reasons), \
        "the change four levels down is found without walking every path"
    assert len(reasons) <= 20, "reasons are capped instead of multiplying through shared refs"


def test_three_thousand_branch_union() -> None:
    branches = [{"type": "object", "properties": {"kind": {"const": f"k{i}"}, "x": {"type": "string"}}}
                for i in range(3_000)]
    old = parse({"oneOf": branches}, lenient=True)
    assert old.read_errors(parse({"oneOf": branches}, lenient=True)) == [], \
        "identical branches are paired by structure, not compared 9 million times"
    extended = parse({"oneOf": branches + [{"type": "null"}]}, lenient=True)
    assert extended.read_errors(old) == [], "adding a branch is compatible"
    assert old.read_errors(extended), "removing one is not"
    # All branches different: the pairwise search is quadratic, so it stops at the work
    # budget (proportional to the schemas' sizes). 2,000 branches keep this test quick.
    few = parse({"oneOf": branches[:2000]}, lenient=True)
    others = parse({"oneOf": [{"type": "object", "properties": {"kind": {"const": f"other{i}"}}}
                              for i in range(2000)]}, lenient=True)
    with pytest.raises(CheckTooCostly, match="more than"):
        others.read_errors(few)  # all-different unions hit the work budget and are refused (422)


def test_mutated_schemas_never_raise_anything_but_invalid_schema() -> None:
    """A fixed-seed fuzz: random edits of valid schemas either parse or raise
    InvalidSchema, and compare without exceptions."""
    rng = random.Random(13)
    seeds = [schema for _, schema in GOOD] + [
        {"type": "object", "properties": {"a": {"$ref": "#/definitions/x"}},
         "definitions": {"x": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
        {"type": "array", "items": [{"enum": [1, "a", None]}], "additionalItems": {"not": {}}},
    ]
    junk = [None, True, False, 0, -1, 1.5, "", "x", "#", "#/definitions/x", [], {}, [1], {"a": 1},
            {"$ref": "#"}, {"type": ["string", 5]}, "http://example.com/"]
    keywords = ["type", "properties", "items", "$ref", "enum", "const", "allOf", "anyOf", "oneOf",
                "not", "required", "additionalProperties", "patternProperties", "dependencies",
                "minimum", "maxLength", "multipleOf", "prefixItems", "$id", "$schema", "if",
                "unevaluatedProperties", "definitions", "$defs"]
    parsed_ok = 0
    for _ in range(1500):
        schema = json.loads(json.dumps(rng.choice(seeds)))
        target = schema if isinstance(schema, dict) else {}
        for _ in range(rng.randint(1, 3)):
            target[rng.choice(keywords)] = rng.choice(junk)
        for lenient in (False, True):
            try:
                parsed = JSON.parse(json.dumps(schema), {}, lenient=lenient)
            except InvalidSchema:
                continue
            parsed_ok += 1
            assert isinstance(parsed.read_errors(parsed), list)
            assert isinstance(parsed.read_errors(parse(rng.choice(seeds))), list)
            parsed.canonical()
            parsed.normalized()
    assert parsed_ok > 1000, "the fuzz exercises parsing and comparison, not only refusals"
