"""PROTOBUF through RegistryService on the in-memory log: references, well-known types,
dedupe on the canonical text, compatibility."""
from __future__ import annotations

import pytest

from registry import errors
from registry.node import build_node
from registry.service import NewSchema, RegisterRequest
from registry.settings import load_settings
from store.memory_log import MemoryLog
from store.records import SchemaReference

MONEY = 'syntax = "proto3";\npackage base;\n\nmessage Money {\n  int64 units = 1;\n  string currency = 2;\n}\n'
ORDER = '''syntax = "proto3";
package shop;

import "money.proto";
import "google/protobuf/timestamp.proto";

message Order {
  string id = 1;
  base.Money total = 2;
  google.protobuf.Timestamp placed = 3;
}
'''
MONEY_REF = (SchemaReference("money.proto", "money", 1),)


@pytest.fixture
def node():
    the_node = build_node(load_settings(environ={}), MemoryLog())
    assert the_node.writer.wait_ready(5)
    yield the_node
    the_node.close()


def protobuf(text: str, references=()) -> NewSchema:
    return NewSchema(text, schema_type="PROTOBUF", references=tuple(references))


def reg(node, subject: str, new: NewSchema, **kw):
    return node.service.register(subject, RegisterRequest(new, **kw))


def test_protobuf_is_listed_among_schema_types(node):
    assert "PROTOBUF" in node.service.schema_types(), "GET /schemas/types lists PROTOBUF"


def test_schema_importing_a_registered_reference_and_a_well_known_type(node):
    money = reg(node, "money", protobuf(MONEY))
    order = reg(node, "order", protobuf(ORDER, MONEY_REF))
    assert order.id != money.id
    stored, _ = node.service.schema_by_id(order.id)
    assert stored.schema == ORDER, "the canonical text is stored (ORDER is already in that layout)"
    reformatted = ORDER.replace("\n  ", " ").replace("message Order {", "// orders\nmessage Order {")
    again = reg(node, "order", protobuf(reformatted, MONEY_REF))
    assert (again.id, again.version) == (order.id, order.version), \
        "reformatted text dedupes to the same id and version"


def test_unresolvable_import_is_42201_and_writes_nothing(node):
    end = node.log.end_offset()
    with pytest.raises(errors.InvalidSchema, match="money.proto"):
        reg(node, "order", protobuf(ORDER))
    assert node.log.end_offset() == end, "a refused schema never reaches the log"


def test_compatibility_by_confluents_rules(node):
    reg(node, "money", protobuf(MONEY))
    reg(node, "order", protobuf(ORDER, MONEY_REF))
    node.service.set_compatibility("order", "BACKWARD")
    compatible = ORDER.replace("string id = 1;", "string id = 1;\n  int64 count = 4;")
    assert node.service.check_compatibility("order", None, protobuf(compatible, MONEY_REF)) == []
    breaking = ORDER.replace("string id = 1;", "double id = 1;")
    reasons = node.service.check_compatibility("order", None, protobuf(breaking, MONEY_REF))
    assert any("FIELD_SCALAR_KIND_CHANGED" in r and "#/Order/1" in r for r in reasons), \
        "the verbose reason names Confluent's difference type and the field's path"
    end = node.log.end_offset()
    with pytest.raises(errors.IncompatibleSchema):
        reg(node, "order", protobuf(breaking, MONEY_REF))
    assert node.log.end_offset() == end, "an incompatible schema is not written"


def test_reference_changed_incompatibly_is_caught_through_the_reference(node):
    reg(node, "money", protobuf(MONEY))
    money_v2 = MONEY.replace("int64 units = 1;", "string units = 1;")
    node.service.set_compatibility("money", "NONE")
    reg(node, "money", protobuf(money_v2))
    reg(node, "order", protobuf(ORDER, MONEY_REF))
    node.service.set_compatibility("order", "BACKWARD")
    reasons = node.service.check_compatibility(
        "order", None, protobuf(ORDER, (SchemaReference("money.proto", "money", 2),)))
    assert any("FIELD_NAMED_TYPE_CHANGED" in r for r in reasons), \
        "a field whose referenced message changed incompatibly is reported"
