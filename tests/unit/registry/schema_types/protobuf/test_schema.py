"""Protobuf parsing, stored text and descriptors (registry/schema_types/protobuf)."""
from __future__ import annotations

import base64
import random

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from registry.schema_types import SCHEMA_TYPES, InvalidSchema
from registry.schema_types.protobuf import PROTOBUF, ProtobufType
from registry.schema_types.protobuf.compiler import MAX_NESTING, CompileError, ProtocPool

USER = '''syntax = "proto3";
package shop;

import "google/protobuf/timestamp.proto";

message User {
  int64 id = 1;
  string email = 2;
  google.protobuf.Timestamp created = 3;
  map<string, int32> scores = 4;
  optional string nickname = 7;
  Kind kind = 8;

  oneof contact {
    string phone = 5;
    string fax = 6;
  }

  enum Kind {
    UNKNOWN = 0;
    ADMIN = 1;
  }
}
'''


@pytest.fixture
def pool():
    """A private worker pool, closed afterwards (tests that must see its workers)."""
    the_pool = ProtocPool(size=1)
    yield the_pool
    the_pool.close()


def test_protobuf_is_a_registered_schema_type():
    assert SCHEMA_TYPES["PROTOBUF"] is PROTOBUF, "the service finds Protobuf by its schemaType name"


# --- Parsing --------------------------------------------------------------------------


def test_proto3_with_well_known_type_parses_and_names_its_messages():
    schema = PROTOBUF.parse(USER, {})
    assert schema.schema_type == "PROTOBUF"
    assert schema.message_names() == ["shop.User"], "top-level messages in declaration order"


def test_proto2_with_required_default_and_group_parses():
    text = '''syntax = "proto2";
message Order {
  required int32 id = 1;
  optional string note = 2 [default = "none"];
  repeated group Line = 3 { required string sku = 1; }
}
'''
    schema = PROTOBUF.parse(text, {})
    field = schema.file_descriptor_proto().message_type[0].field[1]
    assert field.default_value == "none", "proto2 defaults reach the descriptor"


def test_file_without_syntax_is_proto2():
    schema = PROTOBUF.parse("message M { optional int32 a = 1; }", {})
    assert schema.canonical() == "\nmessage M {\n  optional int32 a = 1;\n}\n", \
        "no syntax line when none was written (Wire's syntax is null); the types' blank line stays"


def test_import_resolved_by_reference_name_including_transitive_references():
    base = 'syntax = "proto3"; package base; message Money { int64 units = 1; }'
    middle = 'syntax = "proto3"; package mid; import "base.proto"; message Price { base.Money amount = 1; }'
    top = 'syntax = "proto3"; import "mid/price.proto"; message Item { mid.Price price = 1; }'
    schema = PROTOBUF.parse(top, {"base.proto": base, "mid/price.proto": middle})
    names = [f.name for f in schema.file_descriptor_set().file]
    assert names == ["base.proto", "mid/price.proto", "default"], \
        "the descriptor set holds every dependency first and the schema last, named 'default' as in Confluent"


def test_missing_import_is_invalid_and_names_the_file():
    with pytest.raises(InvalidSchema, match="other.proto"):
        PROTOBUF.parse('syntax = "proto3"; import "other.proto"; message M {}', {})


@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "a//b.proto", "./x.proto",
                                  "a\\b.proto", "nul\x00.proto", ""])
def test_reference_names_that_could_leave_the_compile_directory_are_refused(name):
    with pytest.raises(InvalidSchema, match="reference name"):
        PROTOBUF.parse(f'syntax = "proto3"; import "{name}"; message M {{}}', {name: 'syntax = "proto3";'})


def test_an_import_of_a_host_file_is_not_found():
    with pytest.raises(InvalidSchema, match="not found"):
        PROTOBUF.parse('syntax = "proto3"; import "/etc/passwd"; message M {}', {})


@pytest.mark.parametrize("text, fragment", [
    ("message {", "Expected message name"),
    ('syntax = "proto3"; message M { int32 a = 1; int32 b = 1; }', "already been used"),
    ('syntax = "proto3"; message M { Missing a = 1; }', '"Missing" is not defined'),
    ('syntax = "proto3"; enum E { A = 1; }', "first enum value"),
    ('syntax = "proto4";', "proto4"),
    ('syntax = "proto3"; message M { required int32 a = 1; }', "Required fields"),
    ("", None),
])
def test_bad_schemas_are_invalid_with_the_compilers_reason(text, fragment):
    if fragment is None:
        # An empty file is valid protobuf (Confluent accepts it too).
        assert PROTOBUF.parse(text, {}).canonical() == ""
        return
    with pytest.raises(InvalidSchema) as raised:
        PROTOBUF.parse(text, {})
    assert fragment in str(raised.value), "the reason is protoc's own message"
    assert "line 1, column" in str(raised.value), "the reason says where"


# --- Hostile input: refused by the bounds before protoc runs, or contained if not -------


@pytest.mark.parametrize("what, text", [
    ("10,000 nested messages", 'syntax = "proto3";' + "message M {" * 10_000 + "}" * 10_000),
    ("nested aggregate option", 'syntax = "proto3"; option (x) = ' + "{a:" * 100_000 + "}" * 100_000 + ";"),
    ("100,000 fields", 'syntax = "proto3"; message M {'
     + "".join(f"int32 f{i} = {i + 1}; string g{i} = {i + 200_001};" for i in range(100_000)) + "}"),
    ("huge string literal", 'syntax = "proto3"; option java_package = "' + "a" * 5_000_000 + '";'),
    ("lone surrogate", 'syntax = "proto3"; message M { string a = 1 [json_name = "\ud800"]; }'),
])
def test_hostile_input_is_refused_before_the_compiler_starts(pool, what, text):
    with pytest.raises(InvalidSchema):
        ProtobufType(pool).parse(text, {})
    assert pool._started == 0, f"{what}: the bounds must refuse it without starting protoc"


@pytest.mark.parametrize("what, text", [
    ("garbage bytes", bytes(random.Random(7).randrange(256) for _ in range(20_000)).decode("latin-1")),
    ("NUL bytes", 'syntax = "proto3";\x00 message M {\x00}'),
    ("brackets inside strings do not count", 'syntax = "proto3"; option java_package = "'
     + "{" * 10_000 + '"; message M {'),
])
def test_garbage_reaches_protoc_and_is_invalid(pool, what, text):
    with pytest.raises(InvalidSchema):
        ProtobufType(pool).parse(text, {})


def test_nesting_at_the_bound_is_accepted_by_the_bounds():
    # 31 nested messages plus one aggregate option stay under MAX_NESTING and compile.
    depth = 31
    text = 'syntax = "proto3";' + "message M {" * depth + "int32 a = 1;" + "}" * depth
    assert depth < MAX_NESTING
    PROTOBUF.parse(text, {})


def test_a_protoc_crash_kills_only_its_worker(pool):
    """Input that overflows protoc's stack (sent to the pool directly: the bounds, which
    hold leniently too, refuse it before any compile): the worker dies, the schema is
    refused, and the next compile gets a new worker."""
    crashing = ('syntax = "proto3"; import "google/protobuf/descriptor.proto";'
                'extend google.protobuf.MessageOptions { M x = 50000; }'
                'message M { M m = 1; option (x) = ' + "{m:" * 100_000 + "}" * 100_000 + ";}")
    with pytest.raises(InvalidSchema, match="nests brackets"):
        ProtobufType(pool).parse(crashing, {}, lenient=True)
    with pytest.raises(CompileError, match="crashed"):
        pool.compile([("default", crashing.encode())])
    assert ProtobufType(pool).parse(USER, {}).message_names() == ["shop.User"], \
        "the pool replaces the dead worker and compiles again"


def test_workers_run_in_parallel_threads_safely(pool):
    from concurrent.futures import ThreadPoolExecutor
    two = ProtocPool(size=2)
    try:
        texts = [USER.replace("User", f"User{i}") for i in range(20)]
        with ThreadPoolExecutor(4) as threads:
            names = list(threads.map(lambda t: ProtobufType(two).parse(t, {}).message_names()[0], texts))
        assert names == [f"shop.User{i}" for i in range(20)], "each thread gets its own schema's result"
    finally:
        two.close()


# --- Canonical and normalized text -----------------------------------------------------

REFORMATTED_USER = '''// A user of the shop.
syntax="proto3"; package shop;
import "google/protobuf/timestamp.proto";
message User { int64 id=1; /* the address */ string email = 2 ;
  google.protobuf.Timestamp   created = 3; map< string ,int32 > scores = 4;
  oneof contact { string phone = 5; string fax = 6; }
  optional string nickname = 7; Kind kind = 8;
  enum Kind { UNKNOWN = 0; ADMIN = 1; } }
'''


def test_canonical_form_is_confluents_layout():
    assert PROTOBUF.parse(USER, {}).canonical() == USER, \
        "a schema already in Confluent's layout is stored unchanged"


def test_reformatted_text_has_the_same_canonical_form():
    assert PROTOBUF.parse(REFORMATTED_USER, {}).canonical() == PROTOBUF.parse(USER, {}).canonical(), \
        "comments and layout must not change the stored text, so re-registering dedupes"


def test_canonical_keeps_names_and_option_spelling_as_written():
    text = '''syntax = "proto2";
package p;

option java_package = "com.example";
option optimize_for = SPEED;

message M {
  reserved 2, 9 to 11, 1000 to max;
  reserved "old";

  optional int32 a = 1 [deprecated = true, default = 0x10, json_name = "A"];
  optional .p.M b = 3;
  extensions 100 to 199;
}
'''
    assert PROTOBUF.parse(text, {}).canonical() == '''syntax = "proto2";
package p;

option java_package = "com.example";
option optimize_for = SPEED;

message M {
  reserved 2, 9 to 11, 1000 to max;
  reserved "old";

  optional int32 a = 1 [
    deprecated = true,
    default = 0x10,
    json_name = "A"
  ];
  optional .p.M b = 3;

  extensions 100 to 199;
}
''', "options keep their order and spelling; default and json_name go last, as Confluent prints them"


def test_custom_option_aggregate_is_printed_as_a_map():
    text = '''syntax = "proto3";
package p;
import "google/protobuf/descriptor.proto";
message Rule { string name = 1; repeated int32 codes = 2; }
extend google.protobuf.MessageOptions { Rule rule = 50001; }
message M {
  option (rule) = { name: "x\\ty" codes: 1 codes: 2 };
  int32 a = 1;
}
'''
    canonical = PROTOBUF.parse(text, {}).canonical()
    assert '  option (rule) = {\n    name: "x\\ty",\n    codes: [\n      1,\n      2\n    ]\n  };\n' in canonical, \
        "aggregate values print as Confluent's option maps, a repeated key as a list"
    normalized = PROTOBUF.parse(text, {}).normalized()
    assert '  option (p.rule) = {\n    codes: [\n      1,\n      2\n    ],\n    name: "x\\ty"\n  };\n' in normalized, \
        "normalized: the option's name fully qualified and its keys sorted"


def test_normalized_form_qualifies_names_sorts_fields_and_drops_proto2_syntax():
    text = '''syntax = "proto2";
package p;
import "z.proto";
import "a.proto";
message M {
  optional N second = 2;
  optional int32 first = 1;
  message N { optional int32 x = 1; }
  enum E { B = 1; A = 0; }
}
'''
    references = {"a.proto": 'syntax = "proto2";', "z.proto": 'syntax = "proto2";'}
    assert PROTOBUF.parse(text, references).normalized() == '''package p;

import "a.proto";
import "z.proto";

message M {
  optional int32 first = 1;
  optional .p.M.N second = 2;

  message N {
    optional int32 x = 1;
  }
  enum E {
    A = 0;
    B = 1;
  }
}
'''


def test_reordered_fields_normalize_equal_but_stay_distinct_canonically():
    one = 'syntax = "proto3"; message M { int32 a = 1; string b = 2; }'
    two = 'syntax = "proto3"; message M { string b = 2; int32 a = 1; }'
    first, second = PROTOBUF.parse(one, {}), PROTOBUF.parse(two, {})
    assert first.normalized() == second.normalized(), "normalize=true dedupes field order"
    assert first.canonical() != second.canonical(), "the canonical form keeps declaration order"


def test_map_types_qualified_in_normalized_form():
    text = 'syntax = "proto3"; package p; message V {} message M { map<string, V> m = 1; }'
    assert "  map<string, .p.V> m = 1;\n" in PROTOBUF.parse(text, {}).normalized()


def test_canonical_form_reparses_to_itself():
    canonical = PROTOBUF.parse(REFORMATTED_USER, {}).canonical()
    assert PROTOBUF.parse(canonical, {}).canonical() == canonical, "the stored text is a fixed point"


# --- Descriptors for format=serialized and clients ------------------------------------


def test_serialized_is_base64_file_descriptor_proto_named_default():
    schema = PROTOBUF.parse(USER, {})
    proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(schema.serialized()))
    assert proto.name == "default" and proto.package == "shop"
    assert list(proto.dependency) == ["google/protobuf/timestamp.proto"]
    assert not proto.HasField("source_code_info"), "no source positions in what clients get"
    assert not any(field.HasField("json_name") for field in proto.message_type[0].field), \
        "json_name only where the schema sets one, as Confluent serializes it"


def test_descriptor_set_builds_working_message_classes():
    schema = PROTOBUF.parse(USER, {})
    pool = descriptor_pool.DescriptorPool()
    for file in schema.file_descriptor_set().file:
        pool.Add(file)
    user_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.User"))
    user = user_class(id=7, email="a@b", phone="1", kind=1)
    user.scores["x"] = 3
    user.created.seconds = 10
    again = user_class.FromString(user.SerializeToString())
    assert (again.id, again.email, again.phone, again.scores["x"], again.created.seconds) == \
        (7, "a@b", "1", 3, 10), "the descriptor set is complete enough to encode and decode"
