"""Avro schema resolution: can a reader schema read data written with a writer schema?

Each case is checked twice: by `AvroSchema.read_errors`, and, where fastavro resolves
the case strictly, by writing a datum with the writer schema and reading it back with
fastavro using the reader schema. fastavro is lax in places (for example it lets an
empty reader union "read" an int); those cases are marked LAX and checked by
`read_errors` alone.
"""
from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass
from typing import Any

import fastavro
import pytest
from fastavro.read import SchemaResolutionError

from registry.schema_types.avro import AVRO, AvroSchema


def record(name: str, *fields: dict[str, Any], **attributes: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields), **attributes}


def f(name: str, field_type: Any, **attributes: Any) -> dict[str, Any]:
    return {"name": name, "type": field_type, **attributes}


def enum(name: str, *symbols: str, **attributes: Any) -> dict[str, Any]:
    return {"type": "enum", "name": name, "symbols": list(symbols), **attributes}


def fixed(name: str, size: int, **attributes: Any) -> dict[str, Any]:
    return {"type": "fixed", "name": name, "size": size, **attributes}


def array(items: Any) -> dict[str, Any]:
    return {"type": "array", "items": items}


def amap(values: Any) -> dict[str, Any]:
    return {"type": "map", "values": values}


def parse(schema: Any) -> AvroSchema:
    return AVRO.parse(json.dumps(schema), {})


AUTO = object()
CHECK, LAX, SKIP = "check", "lax", "skip"


@dataclass(frozen=True)
class Case:
    id: str
    reader: Any
    writer: Any
    compatible: bool
    datum: Any = AUTO
    """What the writer writes for the fastavro cross-check (AUTO: a generated sample)."""
    expected: Any = AUTO
    """What the reader should decode (AUTO: not compared)."""
    fastavro: str = CHECK
    """CHECK: fastavro must read it (compatible) or raise (incompatible); LAX: fastavro
    is known to accept an incompatible case; SKIP: nothing fastavro can show."""


USER_V1 = record("User", f("id", "long"), f("name", "string"))
USER_V2_DEFAULTED = record("User", f("id", "long"), f("name", "string"),
                           f("email", ["null", "string"], default=None))
USER_V2_REQUIRED = record("User", f("id", "long"), f("name", "string"), f("email", "string"))
LIST_INT = record("Node", f("value", "int"), f("next", ["null", "Node"], default=None))
LIST_LONG = record("Node", f("value", "long"), f("next", ["null", "Node"], default=None))
LIST_INT_TAGGED = record("Node", f("value", "int"), f("next", ["null", "Node"], default=None),
                         f("tag", "string", default="t"))
LINKED_DATUM = {"value": 1, "next": {"value": 2, "next": None}}

CASES: list[Case] = [
    # Primitives and promotions (the Avro spec's list, and the directions that fail).
    Case("int reads int", "int", "int", True),
    Case("long reads int", "long", "int", True, datum=5, expected=5),
    Case("float reads int", "float", "int", True, datum=5, expected=5.0),
    Case("double reads int", "double", "int", True, datum=5, expected=5.0),
    Case("float reads long", "float", "long", True, datum=5, expected=5.0),
    Case("double reads long", "double", "long", True, datum=5, expected=5.0),
    Case("double reads float", "double", "float", True, datum=1.5, expected=1.5),
    Case("bytes reads string", "bytes", "string", True, datum="hi", expected=b"hi"),
    Case("string reads bytes", "string", "bytes", True, datum=b"hi", expected="hi"),
    Case("int cannot read long", "int", "long", False),
    Case("long cannot read float", "long", "float", False),
    Case("float cannot read double", "float", "double", False),
    Case("int cannot read double", "int", "double", False),
    Case("long cannot read double", "long", "double", False),
    Case("string cannot read int", "string", "int", False),
    Case("boolean cannot read int", "boolean", "int", False),
    Case("null cannot read string", "null", "string", False),
    Case("int cannot read null", "int", "null", False),
    Case("int cannot read boolean", "int", "boolean", False),
    # Unions.
    Case("optional string reads string", ["null", "string"], "string", True, datum="x", expected="x"),
    Case("union with long reads int", ["null", "long"], "int", True, datum=3, expected=3),
    Case("optional string cannot read int", ["null", "string"], "int", False),
    Case("string cannot read optional string", "string", ["null", "string"], False, datum=None),
    Case("string reads a one-branch string union", "string", ["string"], True),
    Case("wider union reads narrower union", ["null", "string", "int"], ["null", "string"], True),
    Case("narrower union cannot read wider union", ["null", "string"], ["null", "string", "int"], False,
         datum=5),
    Case("branch order does not matter", ["string", "null"], ["null", "string"], True, datum=None),
    Case("long reads union of int and long", "long", ["int", "long"], True, datum=3, expected=3),
    Case("optional long reads optional int", ["null", "long"], ["null", "int"], True),
    Case("anything reads an empty union", "int", [], True, fastavro=SKIP),
    Case("empty union reads nothing", [], "int", False, fastavro=LAX),
    Case("optional record reads its older version", ["null", USER_V2_DEFAULTED], USER_V1, True,
         datum={"id": 1, "name": "a"}, expected={"id": 1, "name": "a", "email": None}),
    Case("optional record cannot read an older version lacking a required field",
         ["null", USER_V2_REQUIRED], USER_V1, False),
    Case("union of string and bytes reads int only if some branch can", ["string", "bytes"], "int", False),
    # Records: fields.
    Case("identical records", USER_V1, USER_V1, True),
    Case("new field with a null default (union)", USER_V2_DEFAULTED, USER_V1, True,
         datum={"id": 1, "name": "a"}, expected={"id": 1, "name": "a", "email": None}),
    Case("new field with a string default", record("User", f("id", "long"), f("name", "string"),
                                                    f("email", "string", default="none")), USER_V1, True,
         datum={"id": 1, "name": "a"}, expected={"id": 1, "name": "a", "email": "none"}),
    Case("new field without a default", USER_V2_REQUIRED, USER_V1, False),
    Case("removed field is ignored", USER_V1, USER_V2_REQUIRED, True,
         datum={"id": 1, "name": "a", "email": "e"}, expected={"id": 1, "name": "a"}),
    Case("field type widened int to long", record("R", f("a", "long")), record("R", f("a", "int")), True),
    Case("field type narrowed long to int", record("R", f("a", "int")), record("R", f("a", "long")), False),
    Case("fields reordered", record("R", f("b", "string"), f("a", "int")),
         record("R", f("a", "int"), f("b", "string")), True, datum={"a": 1, "b": "x"},
         expected={"b": "x", "a": 1}),
    Case("field renamed, reader alias names the old field",
         record("R", f("full_name", "string", aliases=["name"])), record("R", f("name", "string")), True,
         datum={"name": "x"}, expected={"full_name": "x"}),
    Case("field renamed without alias or default", record("R", f("full_name", "string")),
         record("R", f("name", "string")), False),
    Case("field renamed without alias but with a default",
         record("R", f("full_name", "string", default="?")), record("R", f("name", "string")), True,
         datum={"name": "x"}, expected={"full_name": "?"}),
    # Records: names.
    Case("record renamed, reader alias names the writer",
         record("Person", f("a", "int"), aliases=["User"]), record("User", f("a", "int")), True,
         datum={"a": 1}, expected={"a": 1}),
    Case("record renamed without alias",
         record("Person", f("a", "int")), record("User", f("a", "int")), False),
    Case("record namespace changed (unqualified names match, as in Avro Java)",
         record("User", f("a", "int"), namespace="new.ns"),
         record("User", f("a", "int"), namespace="old.ns"), True, datum={"a": 1}, expected={"a": 1}),
    Case("record alias must name the writer's full name",
         record("Person", f("a", "int"), namespace="n", aliases=["User"]),
         record("User", f("a", "int"), namespace="other"), False),
    Case("nested record renamed with alias",
         record("Outer", f("inner", record("NewInner", f("x", "int"), aliases=["OldInner"]))),
         record("Outer", f("inner", record("OldInner", f("x", "int")))), True,
         datum={"inner": {"x": 1}}, expected={"inner": {"x": 1}}),
    Case("nested record renamed without alias",
         record("Outer", f("inner", record("NewInner", f("x", "int")))),
         record("Outer", f("inner", record("OldInner", f("x", "int")))), False, datum={"inner": {"x": 1}}),
    Case("nested record field narrowed", record("Outer", f("inner", record("In", f("x", "int")))),
         record("Outer", f("inner", record("In", f("x", "long")))), False),
    Case("record cannot read a primitive", USER_V1, "string", False),
    Case("record cannot read a map", record("R"), amap("int"), False),
    # Enums.
    Case("enum with more symbols", enum("E", "A", "B", "C"), enum("E", "A", "B"), True,
         datum="B", expected="B"),
    Case("enum symbols reordered", enum("E", "B", "A"), enum("E", "A", "B"), True, datum="A", expected="A"),
    Case("enum missing a writer symbol", enum("E", "A"), enum("E", "A", "B"), False, datum="B"),
    Case("enum missing a writer symbol, reader has a default", enum("E", "A", "U", default="U"),
         enum("E", "A", "B"), True, datum="B", expected="U"),
    Case("enum renamed without alias", enum("F", "A"), enum("E", "A"), False),
    Case("enum renamed, reader alias names the writer", enum("F", "A", aliases=["E"]), enum("E", "A"), True,
         datum="A", expected="A"),
    Case("string cannot read an enum", "string", enum("E", "A"), False),
    Case("enum field with default inside a record",
         record("R", f("e", enum("E", "A", "U", default="U"))),
         record("R", f("e", enum("E", "A", "NEW"))), True, datum={"e": "NEW"}, expected={"e": "U"}),
    # Fixed.
    Case("fixed of the same size", fixed("F", 4), fixed("F", 4), True),
    Case("fixed size changed", fixed("F", 8), fixed("F", 4), False),
    Case("fixed renamed without alias", fixed("G", 4), fixed("F", 4), False),
    Case("bytes cannot read fixed", "bytes", fixed("F", 4), False),
    Case("fixed cannot read bytes", fixed("F", 4), "bytes", False),
    # Arrays and maps.
    Case("array of long reads array of int", array("long"), array("int"), True,
         datum=[1, 2], expected=[1, 2]),
    Case("array of int cannot read array of long", array("int"), array("long"), False),
    Case("map of double reads map of float", amap("double"), amap("float"), True),
    Case("map of string cannot read map of int", amap("string"), amap("int"), False),
    Case("array cannot read map", array("int"), amap("int"), False),
    Case("map of newer records reads map of older records", amap(USER_V2_DEFAULTED), amap(USER_V1), True,
         datum={"k": {"id": 1, "name": "a"}}, expected={"k": {"id": 1, "name": "a", "email": None}}),
    Case("array of records missing a required field", array(USER_V2_REQUIRED), array(USER_V1), False),
    # Recursive types.
    Case("linked list reads itself", LIST_INT, LIST_INT, True, datum=LINKED_DATUM, expected=LINKED_DATUM),
    Case("linked list with a widened value", LIST_LONG, LIST_INT, True,
         datum=LINKED_DATUM, expected=LINKED_DATUM),
    Case("linked list with a narrowed value", LIST_INT, LIST_LONG, False),
    Case("linked list with a new defaulted field", LIST_INT_TAGGED, LIST_INT, True, datum=LINKED_DATUM,
         expected={"value": 1, "next": {"value": 2, "next": None, "tag": "t"}, "tag": "t"}),
    Case("tree with children array", record("T", f("v", "int"), f("kids", array("T"))),
         record("T", f("v", "int"), f("kids", array("T"))), True,
         datum={"v": 1, "kids": [{"v": 2, "kids": []}]}, expected={"v": 1, "kids": [{"v": 2, "kids": []}]}),
    Case("tree whose children became strings", record("T", f("v", "int"), f("kids", array("string"))),
         record("T", f("v", "int"), f("kids", array("T"))), False,
         datum={"v": 1, "kids": [{"v": 2, "kids": []}]}),
]


# --- Helpers: a sample datum for a (fastavro-parsed) writer schema ---------------------

SAMPLES = {"null": None, "boolean": True, "int": 7, "long": 7, "float": 1.5, "double": 1.5,
           "bytes": b"ab", "string": "ab"}


def sample(schema: Any, named: dict[str, Any], depth: int = 0) -> Any:
    """A valid datum for `schema`; unions pick a non-null branch until depth 3."""
    if isinstance(schema, list):
        non_null = [branch for branch in schema if branch != "null"]
        branch = non_null[0] if non_null and (depth < 3 or "null" not in schema) else "null"
        return sample(branch, named, depth + 1)
    if isinstance(schema, str):
        return SAMPLES[schema] if schema in SAMPLES else sample(named[schema], named, depth + 1)
    kind = schema["type"]
    if kind in SAMPLES:
        return SAMPLES[kind]
    if "name" in schema:
        named[schema["name"]] = schema
    if kind == "record":
        return {field["name"]: sample(field["type"], named, depth + 1) for field in schema["fields"]}
    if kind == "enum":
        return schema["symbols"][0]
    if kind == "fixed":
        return b"\x00" * schema["size"]
    if kind == "array":
        return [sample(schema["items"], named, depth + 1)] if depth < 3 else []
    return {"k": sample(schema["values"], named, depth + 1)} if depth < 3 else {}


def fastavro_round_trip(reader: AvroSchema, writer: AvroSchema, datum: Any) -> Any:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, writer.fastavro_schema(), datum)
    out.seek(0)
    return fastavro.schemaless_reader(out, writer.fastavro_schema(), reader.fastavro_schema())


# --- Tests ---------------------------------------------------------------------------


def test_the_table_is_big_enough() -> None:
    assert len(CASES) >= 60, "the brief asks for at least ~60 resolution cases"
    assert len({case.id for case in CASES}) == len(CASES), "case ids must be unique"


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_read_errors(case: Case) -> None:
    reader, writer = parse(case.reader), parse(case.writer)
    errors = reader.read_errors(writer)
    if case.compatible:
        assert errors == [], f"{case.id}: the reader must be able to read the writer's data"
    else:
        assert errors, f"{case.id}: the reader cannot read the writer's data, so it must say why"
        assert all(e.startswith("/") and ": " in e for e in errors), (
            f"each reason starts with a path: {errors}"
        )


CROSS_CHECKED = [case for case in CASES if case.fastavro != SKIP]


@pytest.mark.parametrize("case", CROSS_CHECKED, ids=[case.id for case in CROSS_CHECKED])
def test_fastavro_agrees_where_it_is_strict(case: Case) -> None:
    reader, writer = parse(case.reader), parse(case.writer)
    datum = sample(writer.fastavro_schema(), {}) if case.datum is AUTO else case.datum
    if case.compatible:
        decoded = fastavro_round_trip(reader, writer, datum)
        if case.expected is not AUTO:
            assert decoded == case.expected, f"{case.id}: fastavro decoded {decoded!r}"
    elif case.fastavro == CHECK:
        with pytest.raises(SchemaResolutionError):
            fastavro_round_trip(reader, writer, datum)
    else:  # LAX: document that fastavro resolves it anyway, so read_errors is our only check
        fastavro_round_trip(reader, writer, datum)


def test_reasons_name_the_place_and_the_types() -> None:
    reader = parse(record("R", f("a", "int"), f("b", "int"), f("c", "int")))
    writer = parse(record("R", f("a", "int"), f("b", "int"), f("c", "long")))
    assert reader.read_errors(writer) == [
        "/fields/2/type: reader type 'int' cannot read writer type 'long'"
    ]


def test_reason_for_a_missing_field_without_default() -> None:
    errors = parse(USER_V2_REQUIRED).read_errors(parse(USER_V1))
    assert errors == [
        "/fields/2: reader field 'email' is missing from the writer record and has no default"
    ]


def test_reason_inside_a_reader_union_points_into_the_matching_branch() -> None:
    errors = parse(["null", USER_V2_REQUIRED]).read_errors(parse(USER_V1))
    assert errors == [
        "/1/fields/2: reader field 'email' is missing from the writer record and has no default"
    ], "the record branch is the one resolution would pick, so its reasons are the useful ones"


def test_reason_for_an_unreadable_writer_union_branch() -> None:
    errors = parse("string").read_errors(parse(["null", "string"]))
    assert errors == ["/: writer union branch 0: reader type 'string' cannot read writer type 'null'"]


def test_reason_for_missing_enum_symbols() -> None:
    errors = parse(enum("E", "A")).read_errors(parse(enum("E", "A", "B", "C")))
    assert errors == [
        "/: writer enum symbols ['B', 'C'] are missing from reader enum 'E', which has no default"
    ]


def test_reasons_in_nested_arrays_and_maps() -> None:
    errors = parse(amap(array("int"))).read_errors(parse(amap(array("long"))))
    assert errors == ["/values/items: reader type 'int' cannot read writer type 'long'"]


def test_every_valid_schema_reads_itself() -> None:
    schemas = [USER_V1, LIST_INT, enum("E", "A"), fixed("F", 2), ["null", USER_V1], amap(array(LIST_INT))]
    for schema in schemas:
        parsed = parse(schema)
        assert parsed.read_errors(parsed) == [], f"{schema} must read its own data"
        assert parsed.read_errors(parse(schema)) == [], f"a separately parsed copy of {schema} too"


def test_a_type_used_in_many_places_reports_problems_at_each_place() -> None:
    # The second use of In is checked via the memo; its problem must still be reported.
    reader = parse(record("Outer", f("a", record("In", f("x", "int"))), f("b", "In")))
    writer = parse(record("Outer", f("a", record("In", f("x", "long"))), f("b", "In")))
    assert reader.read_errors(writer) == [
        "/fields/0/type/fields/0/type: reader type 'int' cannot read writer type 'long'",
        "/fields/1/type/fields/0/type: reader type 'int' cannot read writer type 'long'",
    ]


def test_failed_union_branch_trial_does_not_hide_a_later_problem() -> None:
    # Trying reader branch In against the writer marks the pair as checked; the failure
    # must still be reported where the same pair appears outside the union.
    inner_reader = record("In", f("x", "int"))
    reader = parse(record("Outer", f("a", ["null", inner_reader]), f("b", "In")))
    writer = parse(record("Outer", f("a", record("In", f("x", "long"))), f("b", "In")))
    errors = reader.read_errors(writer)
    assert "/fields/1/type/fields/0/type: reader type 'int' cannot read writer type 'long'" in errors


def test_mutual_recursion_terminates_and_finds_deep_problems() -> None:
    def schema(leaf: str) -> Any:
        return record("A", f("b", ["null", record("B", f("a", ["null", "A"]), f("leaf", leaf))]))

    assert parse(schema("long")).read_errors(parse(schema("int"))) == []
    assert parse(schema("int")).read_errors(parse(schema("long"))) == [
        "/fields/0/type/1/fields/1/type: writer union branch 1: "
        "reader type 'int' cannot read writer type 'long'"
    ]


def test_a_result_that_assumed_an_unfinished_check_is_not_reused() -> None:
    # Checking A reaches X, whose check reaches A again (still unfinished, so assumed
    # readable). A then fails on `bad`; X, met again at field `x`, must not be
    # remembered as readable, since it contains A.
    def schema(bad: str) -> Any:
        a = record("A", f("inner", record("X", f("a", ["null", "A"]))), f("bad", bad))
        return record("Outer", f("a", a), f("x", "X"))

    errors = parse(schema("int")).read_errors(parse(schema("long")))
    assert errors == [
        "/fields/0/type/fields/1/type: reader type 'int' cannot read writer type 'long'",
        "/fields/1/type/fields/0/type/1/fields/1/type: writer union branch 1: "
        "reader type 'int' cannot read writer type 'long'",
    ], "every place that leads to the problem is reported"


def test_shared_types_are_checked_once_so_wide_schemas_stay_fast() -> None:
    # Each level uses the next type twice: without memoization this is 2**40 checks.
    levels = 40
    schema: Any = record("L0", f("v", "int"))
    for level in range(1, levels):
        schema = record(f"L{level}", f("x", schema), f("y", f"L{level - 1}"))
    reader, writer = parse(schema), parse(schema)
    started = time.perf_counter()
    assert reader.read_errors(writer) == []
    assert time.perf_counter() - started < 0.1, "compatibility runs on every registration"


def test_a_non_avro_writer_is_unreadable() -> None:
    class JsonSchemaStandIn:
        schema_type = "JSON"

    errors = parse("string").read_errors(JsonSchemaStandIn())  # type: ignore[arg-type]
    assert errors and "JSON" in errors[0], "schemas of another type can never be compatible"
