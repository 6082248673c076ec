"""Protobuf schemas Confluent's registry accepts and ours refused (issue 48, item 5):
google/type/*.proto without references, imports resolved across all the references
given, undefined custom options. Each through the parser and through the service."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from registry.node import build_node
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
