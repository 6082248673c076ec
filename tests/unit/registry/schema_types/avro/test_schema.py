"""Avro parsing, validation, canonical and normalized text (registry/schema_types/avro.py)."""
from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest

from registry.schema_types import SCHEMA_TYPES, InvalidSchema
from registry.schema_types.avro import AVRO, AvroSchema


def parse(schema: Any, references: dict[str, Any] | None = None) -> AvroSchema:
    """Parse a schema given as a JSON value (or as text, if it is a str of JSON)."""
    refs = {name: json.dumps(value) for name, value in (references or {}).items()}
    return AVRO.parse(json.dumps(schema), refs)


def record(name: str, *fields: Any, **attributes: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields), **attributes}


def rec_with(field_type: Any, **field_attributes: Any) -> dict[str, Any]:
    """A record with one field `a` of `field_type`."""
    return record("R", {"name": "a", "type": field_type, **field_attributes})


# --- Validation ---------------------------------------------------------------------

# (id, schema as a JSON value, fragment of our message, does fastavro 1.13 reject it?)
INVALID: list[tuple[str, Any, str, bool]] = [
    ("int default is a string", rec_with("int", default="x"), "invalid default", True),
    ("int default is fractional", rec_with("int", default=1.5), "invalid default", True),
    ("int default overflows", rec_with("int", default=2**31), "int range", False),
    ("long default overflows", rec_with("long", default=2**63), "long range", False),
    ("int default is a boolean", rec_with("int", default=True), "invalid default", False),
    ("boolean default is a number", rec_with("boolean", default=1), "true or false", True),
    ("null default is a string", rec_with("null", default="x"), "expected null", True),
    ("double default is a string", rec_with("double", default="1.0"), "expected a number", False),
    ("union default matches only the second branch", rec_with(["null", "int"], default=1),
     "first branch", False),
    ("union default for a non-null first branch is null", rec_with(["int", "null"], default=None),
     "first branch", False),
    ("enum field default is not a symbol",
     rec_with({"type": "enum", "name": "E", "symbols": ["A"]}, default="B"), "not a symbol", False),
    ("fixed default has the wrong length",
     rec_with({"type": "fixed", "name": "F", "size": 2}, default="abc"), "expected 2 bytes", False),
    ("bytes default has a code point above 255", rec_with("bytes", default="\u0100"), "0-255", False),
    ("record default lacks a field without default",
     rec_with(record("S", {"name": "x", "type": "int"}), default={}), "'x' is missing", False),
    ("record default has a field of the wrong type",
     rec_with(record("S", {"name": "x", "type": "int"}), default={"x": "no"}), "field 'x'", False),
    ("array default has a bad element", rec_with({"type": "array", "items": "int"}, default=["x"]),
     "invalid default", False),
    ("map default has a bad value", rec_with({"type": "map", "values": "int"}, default={"k": "x"}),
     "invalid default", False),
    ("duplicate field names", record("R", {"name": "a", "type": "int"}, {"name": "a", "type": "long"}),
     "duplicate field name 'a'", False),
    ("duplicate enum symbols", {"type": "enum", "name": "E", "symbols": ["A", "A"]},
     "duplicate symbols", True),
    ("enum symbol is not a name", {"type": "enum", "name": "E", "symbols": ["a-b"]}, "enum symbol", True),
    ("record name starts with a digit", record("1R"), "name", False),
    ("record name has a dash", record("a-b"), "name", False),
    ("namespace has an empty part", record("R", namespace="a..b"), "namespace component", False),
    ("dotted name has a bad part", record("a.1b.R"), "namespace component", False),
    ("dotted name starts with a dot", record(".R"), "empty namespace part", False),
    ("field name has a dash", record("R", {"name": "a-b", "type": "int"}), "field name", False),
    ("alias is not a name", record("R", aliases=["a-b"]), "alias", False),
    ("field alias is not a name", record("R", {"name": "a", "type": "int", "aliases": ["x.y"]}),
     "alias", False),
    ("union directly inside a union", ["null", ["int", "string"]], "may not directly contain a union",
     False),
    ("union with two strings", ["string", "string"], "already has a branch of type 'string'", False),
    ("union with two maps", [{"type": "map", "values": "int"}, {"type": "map", "values": "string"}],
     "'map'", False),
    ("union with two arrays", [{"type": "array", "items": "int"}, {"type": "array", "items": "long"}],
     "'array'", False),
    ("union with int and a date (logical types do not count)",
     ["int", {"type": "int", "logicalType": "date"}], "'int'", False),
    ("union with a record twice", [record("A"), "A"], "'A'", False),
    ("unknown type name", rec_with("Foo"), 'unknown type "Foo"', True),
    ("unknown primitive spelling", "strin", "unknown type", True),
    ("array as a bare string is not a type", rec_with("array"), "unknown type", True),
    ("named type defined twice", rec_with({"type": "fixed", "name": "R", "size": 1}),
     "redefined named type 'R'", True),
    ("record named like a primitive", record("int"), "cannot redefine primitive", False),
    ("fixed without size", {"type": "fixed", "name": "F"}, "non-negative integer 'size'", True),
    ("fixed with negative size", {"type": "fixed", "name": "F", "size": -1}, "non-negative", False),
    ("fixed with fractional size", {"type": "fixed", "name": "F", "size": 1.5}, "non-negative", False),
    ("enum default is not a symbol", {"type": "enum", "name": "E", "symbols": ["A"], "default": "B"},
     "not one of its symbols", True),
    ("record without fields", {"type": "record", "name": "R"}, "'fields' array", False),
    ("enum symbols is not an array", {"type": "enum", "name": "E", "symbols": "A"}, "'symbols' array",
     False),
    ("record without name", {"type": "record", "fields": []}, "needs a string 'name'", True),
    ("field without type", record("R", {"name": "a"}), "has no 'type'", True),
    ("field is not an object", record("R", "a"), "must be an object", True),
    ("unknown field order", rec_with("int", order="up"), "field order", False),
    ("array without items", {"type": "array"}, "has no 'items'", True),
    ("object without type", {"name": "x"}, "string 'type'", True),
    ("schema is a number", 5, "a schema is a type name", True),
    ("doc is not a string", record("R", doc=5), "'doc' must be a string", False),
]


@pytest.mark.parametrize(
    ("schema", "fragment", "fastavro_rejects"),
    [case[1:] for case in INVALID],
    ids=[case[0] for case in INVALID],
)
def test_invalid_schemas_are_rejected(schema: Any, fragment: str, fastavro_rejects: bool) -> None:
    with pytest.raises(InvalidSchema) as raised:
        parse(schema)
    assert fragment in str(raised.value), f"the message should say why: {raised.value}"
    # Record where fastavro agrees, and prove the checks it misses are needed.
    try:
        fastavro.parse_schema(schema)
        fastavro_rejected = False
    except Exception:
        fastavro_rejected = True
    assert fastavro_rejected == fastavro_rejects, (
        "fastavro 1.13's verdict changed: if it now rejects this, our extra check may be "
        "redundant; if it no longer does, we are the only line of defence"
    )


def test_invalid_schema_message_names_the_place() -> None:
    schema = record("R", {"name": "a", "type": "int"}, {"name": "b", "type": ["string", "string"]})
    with pytest.raises(InvalidSchema, match=r"^/fields/1/type/1: "):
        parse(schema)


@pytest.mark.parametrize("text", ["{not json", "", '{"type": "double", "default": NaN}', "[1,"])
def test_text_that_is_not_json_is_rejected(text: str) -> None:
    with pytest.raises(InvalidSchema, match="not valid JSON"):
        AVRO.parse(text, {})


def test_absurdly_deep_nesting_is_invalid_not_a_crash() -> None:
    text = '{"type":"array","items":' * 5000 + '"int"' + "}" * 5000
    with pytest.raises(InvalidSchema, match="deeper than 128 levels"):
        AVRO.parse(text, {})


VALID: list[Any] = [
    "string",
    {"type": "int"},
    ["null", "string"],
    [],  # Avro Java accepts an empty union
    record("R"),
    rec_with(["null", "int"], default=None),
    rec_with(["int", "null"], default=3),
    rec_with("double", default=1),  # Avro Java accepts any JSON number for float/double
    rec_with("long", default=2**63 - 1),
    rec_with("bytes", default="\u00ff\u0000"),
    rec_with({"type": "fixed", "name": "F", "size": 2}, default="ab"),
    rec_with({"type": "enum", "name": "E", "symbols": ["A", "B"]}, default="B"),
    rec_with(record("S", {"name": "x", "type": "int"}, {"name": "y", "type": "int", "default": 1}),
             default={"x": 1}),
    rec_with({"type": "map", "values": "int"}, default={"b": 1, "a": 2}),
    rec_with("int", order="DESCENDING"),
    {"type": "enum", "name": "E", "symbols": ["A", "B"], "default": "A"},
    {"type": "enum", "name": "E", "symbols": []},
    {"type": "fixed", "name": "F", "size": 0},
    {"type": "error", "name": "Oops", "fields": [{"name": "why", "type": "string"}]},
    # A recursive linked list.
    record("Node", {"name": "value", "type": "int"},
           {"name": "next", "type": ["null", "Node"], "default": None}),
    # {"type": "Name"} refers to a defined type, as Avro Java allows.
    record("R", {"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["X"]}},
           {"name": "b", "type": {"type": "E"}}),
    # Java's fallback: a name not found in the enclosing namespace is looked up in the null one.
    record("Outer", {"name": "a", "type": {"type": "fixed", "name": "F", "size": 1, "namespace": ""}},
           {"name": "b", "type": "F"}, namespace="n"),
    record("R", {"name": "a", "type": "int", "x-custom": {"b": 1, "a": [1, 2]}}, doc="d",
           aliases=["OldR", "other.Name"], **{"x-owner": "team"}),
]


@pytest.mark.parametrize("schema", VALID, ids=[json.dumps(v)[:60] for v in VALID])
def test_valid_schemas_parse_and_canonical_text_is_stable(schema: Any) -> None:
    parsed = parse(schema)
    reparsed = AVRO.parse(parsed.canonical(), {})
    assert reparsed.canonical() == parsed.canonical(), "canonical text must parse back to itself"
    assert AVRO.parse(parsed.normalized(), {}).normalized() == parsed.normalized(), (
        "normalized text must parse back to itself"
    )
    assert AVRO.parse(parsed.normalized(), {}).canonical() == parsed.canonical(), (
        "normalizing must not change what the schema means"
    )
    assert json.loads(parsed.canonical()) is not None


def test_schema_type_is_registered_as_avro() -> None:
    assert SCHEMA_TYPES["AVRO"] is AVRO, "the service finds Avro by its schemaType name"
    assert AVRO.name == "AVRO"
    assert parse("int").schema_type == "AVRO"


# --- Logical types ------------------------------------------------------------------

BAD_DECIMAL = {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 3}


@pytest.mark.parametrize(
    "schema",
    [
        BAD_DECIMAL,
        {"type": "bytes", "logicalType": "decimal", "precision": 0},
        {"type": "bytes", "logicalType": "decimal"},
        {"type": "fixed", "name": "F", "size": 1, "logicalType": "decimal", "precision": 10},
        {"type": "string", "logicalType": "date"},
        {"type": "int", "logicalType": "no-such-type"},
    ],
)
def test_invalid_logical_types_are_ignored_like_avro_java(schema: dict[str, Any]) -> None:
    # Avro Java (LogicalTypes.fromSchemaIgnoreInvalid) parses these as the base type
    # and keeps the annotation as a property; Confluent therefore accepts them.
    parsed = parse(schema)
    assert json.loads(parsed.canonical())["logicalType"] == schema["logicalType"], (
        "the annotation is kept in the stored text, as Confluent keeps it"
    )


def test_fastavro_alone_would_wrongly_reject_an_invalid_decimal() -> None:
    with pytest.raises(Exception):
        fastavro.parse_schema(BAD_DECIMAL)
    parsed = parse(rec_with(BAD_DECIMAL))
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed.fastavro_schema(), {"a": b"\x01\x02"})
    out.seek(0)
    assert fastavro.schemaless_reader(out, parsed.fastavro_schema(), None) == {"a": b"\x01\x02"}, (
        "fastavro_schema() must treat an invalid decimal as plain bytes, as Avro Java does"
    )


def test_valid_logical_types_survive_into_fastavro() -> None:
    parsed = parse(rec_with({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}))
    assert parsed.fastavro_schema()["fields"][0]["type"]["logicalType"] == "decimal"


# --- Canonical text -----------------------------------------------------------------

PRETTY = """
{
  "fields": [
    {"default": 0, "type": {"type": "int"}, "doc": "count", "name": "n", "order": "ascending"},
    {"name": "tags", "type": {"items": "string", "type": "array"}, "aliases": ["labels"]},
    {"type": {"symbols": ["A", "B"], "name": "Kind", "type": "enum"}, "name": "kind"},
    {"name": "again", "type": "Kind", "x-b": 2, "x-a": 1}
  ],
  "namespace": "com.acme",
  "name": "Thing",
  "type": "record",
  "x-owner": "team",
  "aliases": ["com.acme.OldThing", "other.Thing"],
  "doc": "A thing"
}
"""

PRETTY_CANONICAL = (
    '{"type":"record","name":"Thing","namespace":"com.acme","doc":"A thing","fields":['
    '{"name":"n","type":"int","doc":"count","default":0},'
    '{"name":"tags","type":{"type":"array","items":"string"},"aliases":["labels"]},'
    '{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"]}},'
    '{"name":"again","type":"Kind","x-a":1,"x-b":2}'
    '],"x-owner":"team","aliases":["OldThing","other.Thing"]}'
)


def test_canonical_text_has_avro_java_layout() -> None:
    assert parse(json.loads(PRETTY)).canonical() == PRETTY_CANONICAL, (
        "keys in Avro Java's order, primitives collapsed, default order omitted, a named "
        "type by name after its first use, aliases relative to the namespace"
    )


def test_reformatting_and_reordering_keys_does_not_change_canonical_text() -> None:
    compact = json.dumps(json.loads(PRETTY), separators=(",", ":"))
    reordered = json.dumps(_reverse_keys(json.loads(PRETTY)), indent=7)
    assert AVRO.parse(PRETTY, {}).canonical() == AVRO.parse(compact, {}).canonical() == (
        AVRO.parse(reordered, {}).canonical()
    ), "re-registering reformatted text must dedupe to the same schema"


def _reverse_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reverse_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reverse_keys(v) for v in value]
    return value


def test_reordered_keys_inside_defaults_and_properties_do_not_change_canonical_text() -> None:
    inner = record("S", {"name": "x", "type": "int"}, {"name": "y", "type": "string"})
    first = rec_with(inner, default={"x": 1, "y": "a"}, meta={"p": 1, "q": 2})
    second = rec_with(inner, default={"y": "a", "x": 1}, meta={"q": 2, "p": 1})
    assert parse(first).canonical() == parse(second).canonical()
    assert '"default":{"x":1,"y":"a"}' in parse(second).canonical(), "record defaults in field order"


def test_primitive_objects_collapse_to_their_name() -> None:
    assert parse({"type": "string"}).canonical() == '"string"'
    assert parse(rec_with({"type": "long", "doc": "ignored"})).canonical() == (
        '{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}'
    ), "a doc on a primitive has no meaning in Avro and is dropped, as Java drops it"


def test_primitive_with_properties_stays_an_object() -> None:
    assert parse({"type": "string", "avro.java.string": "String"}).canonical() == (
        '{"type":"string","avro.java.string":"String"}'
    ), "custom properties are part of the schema"
    assert parse({"type": "int", "logicalType": "date"}).canonical() == (
        '{"type":"int","logicalType":"date"}'
    )


def test_schemas_differing_only_in_doc_are_different() -> None:
    assert parse(record("R", doc="one")).canonical() != parse(record("R", doc="two")).canonical(), (
        "Confluent keeps docs, so a doc change is a new schema version"
    )


def test_field_attributes_are_written_in_order() -> None:
    field = {"x-z": 1, "aliases": ["old"], "order": "descending", "default": 1, "doc": "d",
             "type": "int", "name": "a"}
    assert parse(record("R", field)).canonical() == (
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int","doc":"d","default":1,'
        '"order":"descending","aliases":["old"],"x-z":1}]}'
    )


def test_namespaces_are_written_only_where_they_change() -> None:
    schema = record(
        "a.Outer",
        {"name": "same", "type": {"type": "fixed", "name": "S", "namespace": "a", "size": 1}},
        {"name": "other", "type": {"type": "fixed", "name": "b.O", "size": 1}},
        {"name": "none", "type": {"type": "fixed", "name": "N", "namespace": "", "size": 1}},
        {"name": "refs", "type": ["S", "b.O", "N"]},
    )
    assert parse(schema).canonical() == (
        '{"type":"record","name":"Outer","namespace":"a","fields":['
        '{"name":"same","type":{"type":"fixed","name":"S","size":1}},'
        '{"name":"other","type":{"type":"fixed","name":"O","namespace":"b","size":1}},'
        '{"name":"none","type":{"type":"fixed","name":"N","namespace":"","size":1}},'
        '{"name":"refs","type":["S","b.O","N"]}]}'
    ), "as Avro Java writes them: namespace only where it differs from the enclosing one"


def test_enum_default_and_order_of_enum_keys() -> None:
    schema = {"default": "B", "symbols": ["A", "B"], "name": "E", "type": "enum", "doc": "e"}
    assert parse(schema).canonical() == (
        '{"type":"enum","name":"E","doc":"e","symbols":["A","B"],"default":"B"}'
    )


def test_non_ascii_text_is_kept_as_is() -> None:
    assert parse(record("R", doc="café ☕")).canonical() == (
        '{"type":"record","name":"R","doc":"café ☕","fields":[]}'
    )


# --- Normalized text ----------------------------------------------------------------


def test_normalized_text_uses_full_names_everywhere() -> None:
    normalized = AVRO.parse(PRETTY, {}).normalized()
    assert '"name":"com.acme.Thing"' in normalized and '"namespace"' not in normalized
    assert '"type":"com.acme.Kind"' in normalized, "references by full name"
    assert '"aliases":["com.acme.OldThing","other.Thing"]' in normalized


def test_qualified_and_unqualified_spellings_normalize_equal() -> None:
    short = record("Outer", {"name": "k", "type": {"type": "enum", "name": "K", "symbols": ["A"]}},
                   {"name": "k2", "type": "K"}, namespace="n")
    full = record("n.Outer", {"name": "k", "type": {"type": "enum", "name": "n.K", "symbols": ["A"]}},
                  {"name": "k2", "type": "n.K"})
    assert parse(short).normalized() == parse(full).normalized()


def test_null_namespace_survives_normalization() -> None:
    schema = record("n.Outer", {"name": "a", "type": {"type": "fixed", "name": "F", "namespace": "",
                                                      "size": 1}})
    renormalized = AVRO.parse(parse(schema).normalized(), {})
    assert '"name":"F","namespace":""' in renormalized.canonical(), (
        "a type in the null namespace must not move into the enclosing one"
    )


# --- References ---------------------------------------------------------------------

ADDRESS = record("Address", {"name": "street", "type": "string"}, namespace="com.acme")
COUNTRY = {"type": "enum", "name": "Country", "namespace": "com.acme", "symbols": ["NL", "FR"]}


def test_named_types_from_references_are_usable_and_stay_by_name() -> None:
    schema = record("Person", {"name": "home", "type": "Address"},
                    {"name": "work", "type": ["null", "com.acme.Address"], "default": None},
                    {"name": "country", "type": "Country"}, namespace="com.acme")
    parsed = parse(schema, {"address.avsc": ADDRESS, "country.avsc": COUNTRY})
    assert parsed.canonical() == (
        '{"type":"record","name":"Person","namespace":"com.acme","fields":['
        '{"name":"home","type":"Address"},'
        '{"name":"work","type":["null","Address"],"default":null},'
        '{"name":"country","type":"Country"}]}'
    ), "types from references are written by name, as Confluent writes them"
    fields = parsed.fastavro_schema()["fields"]
    assert fields[0]["type"]["name"] == "com.acme.Address", "fastavro's form includes reference types"


def test_reference_types_can_depend_on_earlier_references() -> None:
    holder = record("Holder", {"name": "a", "type": "com.acme.Address"}, namespace="x")
    parsed = parse(record("Top", {"name": "h", "type": "x.Holder"}),
                   {"address": ADDRESS, "holder": holder})
    assert parsed.canonical() == '{"type":"record","name":"Top","fields":[{"name":"h","type":"x.Holder"}]}'


def test_a_top_level_reference_name_is_a_schema() -> None:
    assert parse("com.acme.Address", {"address": ADDRESS}).canonical() == '"com.acme.Address"'


def test_a_type_is_unknown_without_its_reference() -> None:
    with pytest.raises(InvalidSchema, match="unknown type"):
        parse(record("P", {"name": "a", "type": "com.acme.Address"}))


def test_redefining_a_referenced_type_is_an_error() -> None:
    with pytest.raises(InvalidSchema, match="redefined named type 'com.acme.Address'"):
        parse(ADDRESS, {"address": ADDRESS})


def test_the_same_reference_reached_twice_is_accepted() -> None:
    parsed = parse(record("P", {"name": "a", "type": "com.acme.Address"}), {"a1": ADDRESS, "a2": ADDRESS})
    assert parsed.canonical().endswith('"type":"com.acme.Address"}]}')


def test_an_invalid_reference_is_reported_by_name() -> None:
    with pytest.raises(InvalidSchema, match="reference 'bad.avsc'"):
        parse("int", {"bad.avsc": record("1bad")})


# --- fastavro form and speed --------------------------------------------------------


def test_fastavro_schema_round_trips_data() -> None:
    parsed = AVRO.parse(PRETTY, {})
    datum = {"n": 3, "tags": ["x"], "kind": "B", "again": "A"}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed.fastavro_schema(), datum)
    out.seek(0)
    assert fastavro.schemaless_reader(out, parsed.fastavro_schema(), None) == datum


def test_fastavro_schema_writes_float_defaults_as_floats() -> None:
    # fastavro rejects an integer default on {"type": "double"}; Avro Java accepts it.
    with pytest.raises(Exception, match="must match schema type: double"):
        fastavro.parse_schema(rec_with({"type": "double"}, default=1))
    parsed = parse(rec_with({"type": "double"}, default=1))
    assert parsed.fastavro_schema()["fields"][0]["default"] == 1.0



def _reusing(k: int, m: int = 0, j: int | None = None) -> str:
    """A record with two fields: the first defines record A under k arrays (A's own
    field under m arrays), the second uses A by name under j arrays (k by default). A
    named type used again adds its depth where it is used."""
    def arrays(n: int, inside: str) -> str:
        return '{"type":"array","items":' * n + inside + "}" * n

    a = '{"type":"record","name":"A","fields":[{"name":"a","type":' + arrays(m, '"string"') + "}]}"
    return ('{"type":"record","name":"R","fields":[{"name":"f1","type":' + arrays(k, a)
            + '},{"name":"f2","type":' + arrays(k if j is None else j, '"A"') + "}]}")


@pytest.mark.parametrize("text", [_nested for n in range(124, 131)
                                  for _nested in ['{"type":"array","items":' * n + '"int"' + "}" * n]]
                         + [_reusing(k) for k in (30, 60, 61, 62, 63, 64, 65, 66)]
                         + [_reusing(40, 40), _reusing(20, 100), _reusing(0, 64, 64), _reusing(0, 60, 60)])
def test_the_shallow_text_shortcut_never_changes_a_nesting_verdict(text: str) -> None:
    # Parsing skips the depth walks for a text with at most MAX_DEPTH brackets; the
    # verdict must be the one the walks give (here run regardless of the text).
    from registry.schema_types import avro_parser as avro
    from registry.schema_types.json_text import check_document

    def walked() -> bool:
        try:
            document = json.loads(text)
            check_document(document, "the schema")  # no text: the document is walked
            avro._check_nesting(avro._Parser({}).parse(document))
        except InvalidSchema:
            return False
        return True

    def parsed() -> bool:
        try:
            AVRO.parse(text, {})
        except InvalidSchema:
            return False
        return True

    assert parsed() == walked(), f"{text.count('{') + text.count('[')} brackets"


def test_a_named_type_used_again_deeper_still_counts_past_the_limit() -> None:
    # A holds 64 levels; used again under 64 arrays it nests 131 deep, though no JSON
    # path of the text is deeper than 70.
    AVRO.parse(_reusing(0, 60, 60), {})
    with pytest.raises(InvalidSchema, match="more than 128 levels"):
        AVRO.parse(_reusing(0, 64, 64), {})
