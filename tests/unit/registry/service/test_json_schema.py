"""JSON Schema through the registry service on the in-memory log: registration with a
reference, dedupe of reformatted text, and compatibility levels."""
from __future__ import annotations

import json

import pytest

from registry import errors
from registry.node import build_node
from registry.service import NewSchema, RegisterRequest
from registry.settings import load_settings
from store.memory_log import MemoryLog
from store.records import SchemaReference

ADDRESS = json.dumps({"type": "object", "properties": {"street": {"type": "string"}}})
PERSON = {"type": "object", "properties": {"name": {"type": "string"},
                                           "home": {"$ref": "address.json"}}}
REF = (SchemaReference("address.json", "address", 1),)


@pytest.fixture
def node():
    the_node = build_node(load_settings(environ={}), MemoryLog())
    assert the_node.writer.wait_ready(5)
    yield the_node
    the_node.close()


def reg(node, subject: str, schema, references=(), **kw):
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return node.service.register(subject, RegisterRequest(NewSchema(text, "JSON", references), **kw))


def test_register_with_reference_and_dedupe_reformatted_text(node):
    reg(node, "address", ADDRESS)
    first = reg(node, "person", PERSON, REF)
    again = reg(node, "person", json.dumps(PERSON, indent=2), REF)
    assert (again.id, again.version) == (first.id, first.version), \
        "whitespace-only changes dedupe to the same id and version"
    stored = node.service.versions("person")
    assert stored == [1]


def test_backward_level_refuses_a_breaking_change_and_writes_nothing(node):
    reg(node, "address", ADDRESS)
    reg(node, "person", PERSON, REF)
    breaking = dict(PERSON, properties={**PERSON["properties"], "name": {"type": "integer"}})
    end = node.log.end_offset()
    with pytest.raises(errors.IncompatibleSchema):
        reg(node, "person", breaking, REF)
    assert node.log.end_offset() == end, "a refused registration must not reach the log"
    problems = node.service.check_compatibility("person", "latest", NewSchema(json.dumps(breaking), "JSON", REF))
    assert any("TYPE_CHANGED at '#/properties/name'" in p for p in problems), \
        "verbose answers carry Confluent's difference type and path"


def test_compatible_evolution_and_levels(node):
    reg(node, "address", ADDRESS)
    closed = dict(PERSON, additionalProperties=False)
    reg(node, "person", closed, REF)
    # An optional property added to a closed model: BACKWARD yes, FORWARD no.
    evolved = dict(closed, properties={**closed["properties"], "age": {"type": "integer"}})
    new = NewSchema(json.dumps(evolved), "JSON", REF)
    assert node.service.check_compatibility("person", "latest", new) == [], "BACKWARD (default) holds"
    node.service.set_compatibility("person", "FORWARD")
    assert node.service.check_compatibility("person", "latest", new), "FORWARD must be refused"
    node.service.set_compatibility("person", "BACKWARD")
    assert reg(node, "person", evolved, REF).version == 2


def test_invalid_json_schema_is_42201(node):
    end = node.log.end_offset()
    with pytest.raises(errors.InvalidSchema, match="minLength"):
        reg(node, "s", {"type": "string", "minLength": -1})
    with pytest.raises(errors.InvalidSchema, match=r"\$ref"):
        reg(node, "s", {"$ref": "http://example.com/x.json"})
    assert node.log.end_offset() == end, "bad input never reaches the log"
