"""Protobuf schemas Confluent's registry accepts and ours refused (issue 48, item 5):
google/type/*.proto without references, imports resolved across all the references
given, undefined custom options. Each through the parser and through the service."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from registry.node import build_node
from registry.schema_types import InvalidSchema
from registry.schema_types.protobuf import PROTOBUF
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
    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
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
