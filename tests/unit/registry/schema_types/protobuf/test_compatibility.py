"""Protobuf compatibility (registry/schema_types/protobuf/compatibility.py): a table of
schema changes with the verdict per direction, each cross-checked with the protobuf
runtime: a message written with one schema's classes is parsed with the other's.

Directions: BACKWARD asks whether the new schema reads data written with the old
(`new.read_errors(old)`), FORWARD whether the old reads the new (`old.read_errors(new)`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import dataclasses
from dataclasses import dataclass

import pytest
from google.protobuf import descriptor, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message

from registry.schema_types.protobuf import PROTOBUF, ProtobufSchema


def p3(body: str, package: str = "p", imports: str = "") -> str:
    return f'syntax = "proto3";\npackage {package};\n{imports}\n{body}\n'


def p2(body: str, package: str = "p") -> str:
    return f'syntax = "proto2";\npackage {package};\n{body}\n'


@dataclass(frozen=True)
class Row:
    id: str
    old: str
    new: str
    backward: set[str]
    """Confluent difference types that make BACKWARD fail; empty: compatible."""
    forward: set[str]
    """Same for FORWARD."""
    message: str = "p.M"
    """The message the runtime cross-check writes and reads."""
    old_refs: dict[str, str] = dataclasses.field(default_factory=dict)
    new_refs: dict[str, str] = dataclasses.field(default_factory=dict)


OK: set[str] = set()
M_INT = p3("message M { int32 a = 1; }")
MONEY = p3("message Money { int64 units = 1; }", package="base")
MONEY_V2 = p3("message Money { string units = 1; }", package="base")


def scalar_change(old: str, new: str) -> tuple[str, str]:
    return p3(f"message M {{ {old} a = 1; string keep = 2; }}"), p3(f"message M {{ {new} a = 1; string keep = 2; }}")


def scalar_row(old: str, new: str, compatible: bool) -> Row:
    before, after = scalar_change(old, new)
    bad = OK if compatible else {"FIELD_SCALAR_KIND_CHANGED"}
    return Row(f"{old} -> {new}", before, after, bad, bad)


ROWS: list[Row] = [
    # Files, packages, messages
    Row("identical", M_INT, M_INT, OK, OK),
    Row("package changed", M_INT, p3("message M { int32 a = 1; }", package="q"),
        {"PACKAGE_CHANGED"}, {"PACKAGE_CHANGED"}),
    Row("message added", M_INT, p3("message M { int32 a = 1; } message N { int32 b = 1; }"),
        OK, {"MESSAGE_REMOVED"}),
    Row("messages reordered", p3("message M { int32 a = 1; } message N { int32 b = 1; }"),
        p3("message N { int32 b = 1; } message M { int32 a = 1; }"), OK, OK),
    Row("nested message added", M_INT, p3("message M { int32 a = 1; message Inner { int32 x = 1; } }"),
        OK, {"MESSAGE_REMOVED"}),
    Row("nested message moved to top level",
        p3("message M { Inner i = 1; message Inner { int32 x = 1; } }"),
        p3("message M { Inner i = 1; } message Inner { int32 x = 1; }"),
        {"MESSAGE_REMOVED", "FIELD_NAMED_TYPE_CHANGED"}, {"MESSAGE_REMOVED", "FIELD_NAMED_TYPE_CHANGED"}),
    # Fields
    Row("field added", M_INT, p3("message M { int32 a = 1; string b = 2; }"), OK, OK),
    Row("field removed", p3("message M { int32 a = 1; string b = 2; }"), M_INT, OK, OK),
    Row("field renamed", M_INT, p3("message M { int32 renamed = 1; }"), OK, OK),
    Row("field number changed", M_INT, p3("message M { int32 a = 2; }"), OK, OK),
    # Scalars: wire-compatible groups
    scalar_row("int32", "int64", True),
    scalar_row("int32", "uint32", True),
    scalar_row("int64", "uint64", True),
    scalar_row("int32", "bool", True),
    scalar_row("uint64", "bool", True),
    scalar_row("sint32", "sint64", True),
    scalar_row("string", "bytes", True),
    scalar_row("fixed32", "sfixed32", True),
    scalar_row("fixed64", "sfixed64", True),
    scalar_row("int32", "sint32", False),
    scalar_row("int64", "fixed64", False),
    scalar_row("fixed32", "fixed64", False),
    scalar_row("float", "double", False),
    scalar_row("int32", "float", False),
    scalar_row("int32", "string", False),
    scalar_row("bytes", "double", False),
    Row("enum -> int32", p3("message M { E a = 1; } enum E { Z = 0; ONE = 1; }"),
        p3("message M { int32 a = 1; } enum E { Z = 0; ONE = 1; }"), OK, OK),
    Row("enum -> string", p3("message M { E a = 1; } enum E { Z = 0; ONE = 1; }"),
        p3("message M { string a = 1; } enum E { Z = 0; ONE = 1; }"),
        {"FIELD_SCALAR_KIND_CHANGED"}, {"FIELD_SCALAR_KIND_CHANGED"}),
    Row("enum type swapped", p3("message M { E a = 1; } enum E { Z = 0; ONE = 1; } enum F { FZ = 0; FONE = 1; }"),
        p3("message M { F a = 1; } enum E { Z = 0; ONE = 1; } enum F { FZ = 0; FONE = 1; }"), OK, OK),
    # Kinds: scalar, message, map
    Row("scalar -> message", M_INT, p3("message M { N a = 1; } message N { int32 x = 1; }"),
        {"FIELD_KIND_CHANGED"}, {"FIELD_KIND_CHANGED", "MESSAGE_REMOVED"}),
    Row("scalar -> map", M_INT, p3("message M { map<int32, int32> a = 1; }"),
        {"FIELD_KIND_CHANGED"}, {"FIELD_KIND_CHANGED"}),
    Row("message -> map", p3("message M { N a = 1; } message N { int32 x = 1; }"),
        p3("message M { map<string, N> a = 1; } message N { int32 x = 1; }"),
        {"FIELD_KIND_CHANGED"}, {"FIELD_KIND_CHANGED"}),
    Row("message type renamed", p3("message M { N a = 1; } message N { int32 x = 1; }"),
        p3("message M { O a = 1; } message O { int32 x = 1; }"),
        {"FIELD_NAMED_TYPE_CHANGED", "MESSAGE_REMOVED"}, {"FIELD_NAMED_TYPE_CHANGED", "MESSAGE_REMOVED"}),
    Row("field of referenced message made incompatible",
        p3("message M { N a = 1; } message N { int32 x = 1; }"),
        p3("message M { N a = 1; } message N { string x = 1; }"),
        {"FIELD_SCALAR_KIND_CHANGED", "FIELD_NAMED_TYPE_CHANGED"},
        {"FIELD_SCALAR_KIND_CHANGED", "FIELD_NAMED_TYPE_CHANGED"}),
    Row("field added to referenced message", p3("message M { N a = 1; } message N { int32 x = 1; }"),
        p3("message M { N a = 1; } message N { int32 x = 1; int64 y = 2; }"), OK, OK),
    Row("map value int32 -> int64", p3("message M { map<string, int32> a = 1; }"),
        p3("message M { map<string, int64> a = 1; }"), OK, OK),
    Row("map value int32 -> string", p3("message M { map<string, int32> a = 1; }"),
        p3("message M { map<string, string> a = 1; }"),
        {"FIELD_SCALAR_KIND_CHANGED"}, {"FIELD_SCALAR_KIND_CHANGED"}),
    Row("map key string -> int32", p3("message M { map<string, int32> a = 1; }"),
        p3("message M { map<int32, int32> a = 1; }"),
        {"FIELD_SCALAR_KIND_CHANGED"}, {"FIELD_SCALAR_KIND_CHANGED"}),
    # Labels
    Row("proto2 optional -> repeated int32", p2("message M { optional int32 a = 1; }"),
        p2("message M { repeated int32 a = 1; }"),
        {"FIELD_NUMERIC_LABEL_CHANGED"}, {"FIELD_NUMERIC_LABEL_CHANGED"}),
    Row("proto2 optional -> repeated string", p2("message M { optional string a = 1; }"),
        p2("message M { repeated string a = 1; }"), OK, OK),
    Row("proto3 singular -> repeated int32 (stricter than Confluent)", M_INT,
        p3("message M { repeated int32 a = 1; }"),
        {"FIELD_NUMERIC_LABEL_CHANGED"}, {"FIELD_NUMERIC_LABEL_CHANGED"}),
    Row("singular -> repeated message", p3("message M { N a = 1; } message N { int32 x = 1; }"),
        p3("message M { repeated N a = 1; } message N { int32 x = 1; }"), OK, OK),
    Row("required field added", p2("message M { optional int32 a = 1; }"),
        p2("message M { optional int32 a = 1; required int32 b = 2; }"),
        {"REQUIRED_FIELD_ADDED"}, {"REQUIRED_FIELD_REMOVED"}),
    Row("required -> optional", p2("message M { required int32 a = 1; }"),
        p2("message M { optional int32 a = 1; }"),
        {"FIELD_NUMERIC_LABEL_CHANGED"}, {"FIELD_NUMERIC_LABEL_CHANGED"}),
    # Oneofs
    Row("field moved into a new oneof", p3("message M { int32 a = 1; string b = 2; }"),
        p3("message M { oneof o { int32 a = 1; } string b = 2; }"), OK, OK),
    Row("two fields moved into a new oneof", p3("message M { int32 a = 1; string b = 2; }"),
        p3("message M { oneof o { int32 a = 1; string b = 2; } }"),
        {"MULTIPLE_FIELDS_MOVED_TO_ONEOF"}, OK),
    Row("field moved into an existing oneof", p3("message M { oneof o { int32 a = 1; } string b = 2; }"),
        p3("message M { oneof o { int32 a = 1; string b = 2; } }"),
        {"FIELD_MOVED_TO_EXISTING_ONEOF"}, OK),
    Row("oneof member removed", p3("message M { oneof o { int32 a = 1; string b = 2; } }"),
        p3("message M { oneof o { int32 a = 1; } }"), {"ONEOF_FIELD_REMOVED"}, OK),
    Row("oneof member added", p3("message M { oneof o { int32 a = 1; } }"),
        p3("message M { oneof o { int32 a = 1; string b = 2; } }"), OK, {"ONEOF_FIELD_REMOVED"}),
    Row("whole oneof removed", p3("message M { int32 k = 3; oneof o { int32 a = 1; string b = 2; } }"),
        p3("message M { int32 k = 3; }"), OK, OK),
    Row("oneof renamed", p3("message M { oneof o { int32 a = 1; string b = 2; } }"),
        p3("message M { oneof renamed { int32 a = 1; string b = 2; } }"), OK, OK),
    Row("oneof member type changed", p3("message M { oneof o { int32 a = 1; } }"),
        p3("message M { oneof o { string a = 1; } }"),
        {"FIELD_SCALAR_KIND_CHANGED"}, {"FIELD_SCALAR_KIND_CHANGED"}),
    Row("field left its oneof", p3("message M { oneof o { int32 a = 1; string b = 2; } }"),
        p3("message M { int32 a = 1; oneof o { string b = 2; } }"), OK, {"FIELD_MOVED_TO_EXISTING_ONEOF"}),
    # Enums
    Row("enum constant added", p3("message M { E a = 1; } enum E { Z = 0; ONE = 1; }"),
        p3("message M { E a = 1; } enum E { Z = 0; ONE = 1; TWO = 2; }"), OK, OK),
    Row("enum constant renamed", p3("message M { E a = 1; } enum E { Z = 0; ONE = 1; }"),
        p3("message M { E a = 1; } enum E { Z = 0; UNO = 1; }"), OK, OK),
    Row("unused enum removed", p3("message M { int32 a = 1; } enum E { Z = 0; }"), M_INT, OK, OK),
    # Imports and well-known types
    Row("Timestamp -> Duration",
        p3("message M { google.protobuf.Timestamp a = 1; }", imports='import "google/protobuf/timestamp.proto";'),
        p3("message M { google.protobuf.Duration a = 1; }", imports='import "google/protobuf/duration.proto";'),
        {"FIELD_NAMED_TYPE_CHANGED"}, {"FIELD_NAMED_TYPE_CHANGED"}),
    Row("same referenced type on both sides",
        p3("message M { base.Money a = 1; }", imports='import "money.proto";'),
        p3("message M { base.Money a = 1; int32 b = 2; }", imports='import "money.proto";'), OK, OK,
        old_refs={"money.proto": MONEY}, new_refs={"money.proto": MONEY}),
    Row("referenced type changed incompatibly",
        p3("message M { base.Money a = 1; }", imports='import "money.proto";'),
        p3("message M { base.Money a = 1; }", imports='import "money.proto";'),
        {"FIELD_SCALAR_KIND_CHANGED", "FIELD_NAMED_TYPE_CHANGED"},
        {"FIELD_SCALAR_KIND_CHANGED", "FIELD_NAMED_TYPE_CHANGED"},
        old_refs={"money.proto": MONEY}, new_refs={"money.proto": MONEY_V2}),
    # Recursion
    Row("recursive message, compatible change", p3("message M { M child = 1; int32 a = 2; }"),
        p3("message M { M child = 1; int64 a = 2; }"), OK, OK),
    Row("recursive message, incompatible change", p3("message M { M child = 1; int32 a = 2; }"),
        p3("message M { M child = 1; string a = 2; }"),
        {"FIELD_SCALAR_KIND_CHANGED"}, {"FIELD_SCALAR_KIND_CHANGED"}),
    Row("mutually recursive messages", p3("message M { N n = 1; int32 a = 2; } message N { M m = 1; }"),
        p3("message M { N n = 1; int32 a = 2; } message N { M m = 1; sint32 z = 2; }"), OK, OK),
    # Groups (proto2): compared as message-typed fields, unlike Confluent
    Row("group -> message field", p2("message M { optional group G = 1 { optional int32 x = 1; } }"),
        p2("message M { optional G g = 1; message G { optional int32 x = 1; } }"),
        {"FIELD_KIND_CHANGED"}, {"FIELD_KIND_CHANGED", "MESSAGE_REMOVED"}),
    Row("group member changed compatibly", p2("message M { optional group G = 1 { optional int32 x = 1; } }"),
        p2("message M { optional group G = 1 { optional int64 x = 1; } }"), OK, OK),
]


def parse(text: str, refs: dict[str, str]) -> ProtobufSchema:
    return PROTOBUF.parse(text, refs)


def error_types(errors: list[str]) -> set[str]:
    return {error.split('"')[1] for error in errors}


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_verdict_per_direction(row: Row):
    old, new = parse(row.old, row.old_refs), parse(row.new, row.new_refs)
    assert error_types(new.read_errors(old)) == row.backward, "BACKWARD: the new schema reading old data"
    assert error_types(old.read_errors(new)) == row.forward, "FORWARD: the old schema reading new data"


def test_the_table_covers_the_rule_families():
    covered = {kind for row in ROWS for kind in row.backward | row.forward}
    assert len(ROWS) >= 50
    assert {"PACKAGE_CHANGED", "MESSAGE_REMOVED", "FIELD_KIND_CHANGED", "FIELD_SCALAR_KIND_CHANGED",
            "FIELD_NAMED_TYPE_CHANGED", "FIELD_NUMERIC_LABEL_CHANGED", "REQUIRED_FIELD_ADDED",
            "REQUIRED_FIELD_REMOVED", "ONEOF_FIELD_REMOVED", "MULTIPLE_FIELDS_MOVED_TO_ONEOF",
            "FIELD_MOVED_TO_EXISTING_ONEOF"} <= covered, "every incompatible difference type has a row"


def test_reasons_name_the_difference_type_and_path():
    old, new = scalar_change("int32", "string")
    errors = parse(new, {}).read_errors(parse(old, {}))
    assert errors == ['{errorType:"FIELD_SCALAR_KIND_CHANGED", description:"At \'#/M/1\': the field\'s '
                      'scalar type is not wire-compatible between reader and writer"}']


def test_a_non_protobuf_writer_is_incompatible():
    from registry.schema_types.avro import AVRO
    avro = AVRO.parse('{"type": "record", "name": "M", "fields": []}', {})
    assert parse(M_INT, {}).read_errors(avro), "a Protobuf reader cannot read Avro data"


# --- Runtime cross-check ----------------------------------------------------------------


def message_class(schema: ProtobufSchema, name: str) -> type[Message]:
    pool = descriptor_pool.DescriptorPool()
    for file in schema.file_descriptor_set().file:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


F = descriptor.FieldDescriptor


def sample(field: F):
    """A non-default value every wire-compatible reader type represents unchanged."""
    if field.type == F.TYPE_ENUM:
        numbers = [v.number for v in field.enum_type.values]
        return 1 if 1 in numbers else numbers[0]
    if field.type == F.TYPE_BOOL:
        return True
    if field.type in (F.TYPE_FLOAT, F.TYPE_DOUBLE):
        return 1.0
    if field.type == F.TYPE_STRING:
        return "s"
    if field.type == F.TYPE_BYTES:
        return b"s"
    return 1


def populate(message: Message, depth: int = 0) -> None:
    """Set every field (the first member of each oneof), nested messages to depth 3."""
    seen_oneofs = set()
    for field in message.DESCRIPTOR.fields:
        oneof = field.containing_oneof
        if oneof is not None:
            if oneof.name in seen_oneofs:
                continue
            seen_oneofs.add(oneof.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            key_field, value_field = field.message_type.fields_by_name["key"], field.message_type.fields_by_name["value"]
            container = getattr(message, field.name)
            key = sample(key_field)
            if value_field.message_type is not None:
                if depth < 3:
                    populate(container[key], depth + 1)
            else:
                container[key] = sample(value_field)
        elif field.message_type is not None:
            if depth >= 3:
                continue
            if field.is_repeated:
                populate(getattr(message, field.name).add(), depth + 1)
            else:
                target = getattr(message, field.name)
                populate(target, depth + 1)
                target.SetInParent()
        elif field.is_repeated:
            getattr(message, field.name).append(sample(field))
        else:
            setattr(message, field.name, sample(field))


def canonical_value(value):
    """A value comparable across wire-compatible types: bytes for strings, numbers as
    floats, messages as {number: value}, the last element standing for a list."""
    if isinstance(value, Message):
        return {f.number: canonical_value(v) for f, v in value.ListFields()}
    if isinstance(value, Mapping):  # a map field
        return {canonical_value(k): canonical_value(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):  # a repeated field
        items = list(value)
        return canonical_value(items[-1]) if items else None
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    return value


def assert_common_fields_kept(written: Message, read: Message, path: str) -> None:
    reader_fields = {f.number: f for f in read.DESCRIPTOR.fields}
    for field, value in written.ListFields():
        if field.number not in reader_fields:
            continue
        reader_field = reader_fields[field.number]
        got = getattr(read, reader_field.name)
        if isinstance(value, Message) and isinstance(got, Message):
            assert_common_fields_kept(value, got, f"{path}/{field.number}")
            continue
        assert canonical_value(got) == canonical_value(value), \
            f"{path}/{field.number}: the reader must see the value the writer wrote"


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_runtime_agrees_where_the_checker_says_compatible(row: Row):
    old, new = parse(row.old, row.old_refs), parse(row.new, row.new_refs)
    for writer, reader, verdict, direction in ((old, new, row.backward, "BACKWARD"),
                                               (new, old, row.forward, "FORWARD")):
        if verdict:
            continue  # incompatible: the runtime may or may not notice, nothing to check
        writer_name = row.message
        reader_name = row.message
        written = message_class(writer, writer_name)()
        populate(written)
        data = written.SerializeToString()
        try:
            read = message_class(reader, reader_name).FromString(data)
        except DecodeError as error:
            pytest.fail(f"{direction}: the checker says compatible but parsing failed: {error}")
        assert_common_fields_kept(written, read, f"{direction} #")


@pytest.mark.parametrize("old_type, new_type", [("int32", "sint32"), ("float", "double"), ("int32", "string")])
def test_the_cross_check_notices_data_a_reader_gets_wrong(old_type, new_type):
    """The runtime check above can fail: across a change the checker refuses, the value
    read differs from the value written (zigzag vs plain varint, float bits as double,
    a varint where a string is expected)."""
    before, after = scalar_change(old_type, new_type)
    written = message_class(parse(before, {}), "p.M")()
    populate(written)
    read = message_class(parse(after, {}), "p.M").FromString(written.SerializeToString())
    with pytest.raises(AssertionError):
        assert_common_fields_kept(written, read, "#")
