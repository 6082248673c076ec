"""Protobuf schemas Confluent's registry accepts and ours refused (issue 48, item 5):
google/type/*.proto without references, imports resolved across all the references
given, undefined custom options. Each through the parser and through the service."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from registry.node import build_node
from registry.schema_types import InvalidSchema
from registry.schema_types.protobuf import PROTOBUF, ProtobufType
from registry.schema_types.protobuf.compiler import ProtocPool
from registry.schema_types.protobuf.includes import GOOGLE_TYPES
from registry.service import NewSchema, RegisterRequest
from registry.settings import load_settings
from store.memory_log import MemoryLog
from store.records import SchemaReference

# What Confluent's ProtobufSchema.KNOWN_DEPENDENCIES lists under google/type/.
CONFLUENT_GOOGLE_TYPES = [
    "calendar_period", "color", "date", "datetime", "dayofweek", "decimal", "expr", "fraction",
    "interval", "latlng", "money", "month", "phone_number", "postal_address", "quaternion",
    "timeofday",
]


@pytest.fixture
def node():
    the_node = build_node(load_settings(environ={}), MemoryLog())
    assert the_node.writer.wait_ready(5)
    yield the_node
    the_node.close()


def register(node, subject: str, text: str, references: tuple[SchemaReference, ...] = ()):
    return node.service.register(subject, RegisterRequest(
        NewSchema(text, schema_type="PROTOBUF", references=references)))


# --- (a) google/type/*.proto, as Confluent bundles them -----------------------------------

GOOGLE_TYPES_USER = '''syntax = "proto3";
package shop;

import "google/type/money.proto";
import "google/type/date.proto";
import "google/type/datetime.proto";

message Order {
  google.type.Money total = 1;
  google.type.Date due = 2;
  google.type.DateTime placed = 3;
}
'''


@pytest.mark.parametrize("name", CONFLUENT_GOOGLE_TYPES)
def test_every_google_type_confluent_bundles_imports_without_a_reference(name):
    schema = PROTOBUF.parse(f'syntax = "proto3"; import "google/type/{name}.proto"; message M {{}}', {})
    files = [f.name for f in schema.file_descriptor_set().file]
    assert f"google/type/{name}.proto" in files, \
        "the bundled file is compiled in, so the descriptor set can build message classes"


def test_google_types_are_fields_and_the_stored_text_keeps_their_names(node):
    registered = register(node, "order", GOOGLE_TYPES_USER)
    stored, _ = node.service.schema_by_id(registered.id)
    assert stored.schema == GOOGLE_TYPES_USER, "the canonical text, without any reference"
    normalized = PROTOBUF.parse(GOOGLE_TYPES_USER, {}).normalized()
    assert ".google.type.Money total = 1;" in normalized, "the type resolves to google.type.Money"


def test_bundled_google_types_are_googleapis_common_protos_files():
    money_pb2 = pytest.importorskip("google.type.money_pb2")
    theirs = Path(money_pb2.__file__).parent
    for name in CONFLUENT_GOOGLE_TYPES:
        assert (GOOGLE_TYPES / f"{name}.proto").read_bytes() == (theirs / f"{name}.proto").read_bytes(), \
            f"google/type/{name}.proto is googleapis-common-protos' file, unchanged"
    assert sorted(p.stem for p in GOOGLE_TYPES.glob("*.proto")) == CONFLUENT_GOOGLE_TYPES, \
        "exactly the google/type files Confluent bundles, no more"


def test_the_bundled_files_are_package_data():
    project = tomllib.loads((Path(__file__).resolve().parents[5] / "pyproject.toml").read_text())
    globs = project["tool"]["setuptools"]["package-data"]["registry.schema_types.protobuf"]
    package = GOOGLE_TYPES.parents[2]
    shipped = {p for pattern in globs for p in package.glob(pattern)}
    assert set(GOOGLE_TYPES.glob("*.proto")) <= shipped, "a wheel ships every bundled .proto file"


# --- (c) imports resolved across all the references given ----------------------------------
# Confluent resolves a schema's types across every schema its references reach, whatever
# file names its imports give (ProtobufSchema's dependencies map, Context.collectTypeInfo),
# and skips an import that names none of them (toDynamicSchema). Karapace's
# test_references ("With reference to nested message") registers this pair.

NESTED = '''syntax = "proto3";

message NoReference {
  message NoReferenceNested {
    string nameNested = 1;
  }
  string name = 1;
  NoReferenceNested ref = 2;
}
'''
WITH_REF_TO_NESTED = '''syntax = "proto3";

import "NoReferenceNested.proto";

message WithReference {
  string name = 1;
  NoReference.NoReferenceNested ref = 2;
}
'''


def test_an_import_named_like_no_reference_resolves_across_the_references_given():
    schema = PROTOBUF.parse(WITH_REF_TO_NESTED, {"NoReference.proto": NESTED})
    assert schema.canonical() == WITH_REF_TO_NESTED, "the import is printed as written"
    assert ".NoReference.NoReferenceNested ref = 2;" in schema.normalized(), \
        "the field's type is the referenced file's nested message"


def test_a_reference_may_import_a_file_by_another_name_too():
    middle = 'syntax = "proto3"; import "Elsewhere.proto"; message Middle { NoReference n = 1; }'
    top = 'syntax = "proto3"; import "Middle.proto"; message Top { Middle m = 1; }'
    schema = PROTOBUF.parse(top, {"NoReference.proto": NESTED, "Middle.proto": middle})
    assert schema.message_names() == ["Top"]
    schema.file_descriptor_set()  # every file, the stand-in for Elsewhere.proto included


def test_an_unknown_import_with_no_reference_to_resolve_it_is_still_refused():
    with pytest.raises(InvalidSchema, match="Nowhere.proto"):
        PROTOBUF.parse('syntax = "proto3"; import "Nowhere.proto"; message M { Gone g = 1; }', {})


def test_a_reference_importing_the_unknown_name_itself_does_not_make_a_cycle():
    # Both import "Shared.proto", which no reference is named; the stand-in for it must
    # not import a file that imports it.
    a = 'syntax = "proto3"; import "Shared.proto"; message A { NoReference n = 1; }'
    top = 'syntax = "proto3"; import "a.proto"; import "Shared.proto"; message Top { A a = 1; NoReference n = 2; }'
    schema = PROTOBUF.parse(top, {"NoReference.proto": NESTED, "a.proto": a})
    assert "NoReference n = 2;" in schema.canonical()


def test_registering_the_nested_reference_pair_through_the_service(node):
    register(node, "wr_s1_with_nested_message", NESTED)
    registered = register(node, "wr_s2_referencing_nested_message", WITH_REF_TO_NESTED,
                          (SchemaReference("NoReference.proto", "wr_s1_with_nested_message", 1),))
    stored, _ = node.service.schema_by_id(registered.id)
    assert stored.schema == WITH_REF_TO_NESTED and stored.references, \
        "stored as written, with its reference"


# --- (b) custom options nothing defines ---------------------------------------------------
# Confluent's validation normalises the schema, keeping option names it cannot resolve as
# written, and its descriptors drop them (RestApiTest.testCustomOption registers these).

CUSTOM_OPTION = '''syntax = "proto3";

import "google/protobuf/descriptor.proto";

option java_package = "io.confluent.kafka.serializers.protobuf.test";
option java_outer_classname = "TestEnumProtos";
option php_namespace = "Bug\\\\V1";

message TestEnum {
  option (some_ref) = "https://test.com";

  Suit suit = 1;

  oneof test_oneof {
    option (some_ref) = "https://test.com";
  
    string name = 2;
    int32 age = 3;
  }

  enum Suit {
    option (some_ref) = "https://test.com";
    SPADES = 0;
    HEARTS = 1;
    DIAMONDS = 2;
    CLUBS = 3;
  }
}
'''


def test_an_undefined_option_in_a_oneof_is_kept_in_the_text_and_left_out_of_the_descriptor():
    text = 'syntax = "proto3"; message M { oneof x { option (my.unknown) = true; string a = 1; } }'
    schema = PROTOBUF.parse(text, {})
    expected = ('syntax = "proto3";\n\nmessage M {\n  oneof x {\n    option (my.unknown) = true;\n'
                '  \n    string a = 1;\n  }\n}\n')
    assert schema.canonical() == expected, "printed as Confluent prints it, option included"
    assert schema.normalized() == expected, "normalisation keeps a name it cannot resolve"
    oneof = schema.file_descriptor_proto().message_type[0].oneof_decl[0]
    assert oneof.options.SerializeToString() == b"", "the descriptor has no value for it"


def test_undefined_options_beside_defined_ones_in_one_block():
    # protoc names one unknown option per block per compile; all are found at once.
    text = '''syntax = "proto3";
import "google/protobuf/descriptor.proto";
extend google.protobuf.OneofOptions { int32 known = 50001; }
message M {
\toneof x {
\t\toption (a.first) = "é";
\t\toption (known) = 7;
\t\toption (b.second) = { n: 1; s: "x;}" };
\t\tstring a = 1;
\t}
}
'''
    schema = PROTOBUF.parse(text, {})
    assert ('  oneof x {\n    option (a.first) = "é";\n    option (known) = 7;\n'
            '    option (b.second) = {\n      n: 1,\n      s: "x;}"\n    };\n') in schema.canonical(), \
        "each option where it was written, tabs and multi-byte characters before them or not"
    oneof = schema.file_descriptor_proto().message_type[0].oneof_decl[0]
    assert oneof.options.SerializeToString() == b"\x88\xb5\x18\x07", "the defined option keeps its value"


def test_an_undefined_option_in_brackets_is_still_refused():
    with pytest.raises(InvalidSchema, match="unknown"):
        PROTOBUF.parse('syntax = "proto3"; message M { string a = 1 [(my.unknown) = true]; }', {})


def test_an_undefined_option_with_another_error_reports_protocs_reasons():
    with pytest.raises(InvalidSchema, match='"Gone" is not defined'):
        PROTOBUF.parse('syntax = "proto3"; message M { option (x) = 1; Gone g = 1; }', {})


def test_many_undefined_options_cost_three_compiles(monkeypatch):
    pool = ProtocPool(size=1)
    compiles = []
    compile_files = pool.compile
    monkeypatch.setattr(pool, "compile",
                        lambda files, timeout=None: compiles.append(timeout) or compile_files(files, timeout))
    text = ('syntax = "proto3"; message M { oneof x { '
            + "".join(f"option (u{i}) = {i}; " for i in range(5_000)) + "string a = 1; } }")
    try:
        schema = ProtobufType(pool).parse(text, {})
    finally:
        pool.close()
    assert schema.canonical().count("option (u") == 5_000, "every option is kept"
    assert len(compiles) == 3, "refused, compiled without any custom option, then without the unknown ones"
    assert all(0 < t < pool.timeout for t in compiles[1:]), "the later compiles share the first one's limit"


def test_registering_confluents_custom_option_schema_through_the_service(node):
    registered = register(node, "test-proto", CUSTOM_OPTION)
    stored, _ = node.service.schema_by_id(registered.id)
    assert stored.schema == CUSTOM_OPTION, "Confluent's test expects its text back unchanged"
