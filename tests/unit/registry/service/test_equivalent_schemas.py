"""A schema is found by what it means, not by how its text is written (issue 48, items 1
and 2): `?normalize=true` on registration finds the version registered plainly (and the
other way round), and texts another registry wrote into the log (as the client sent
them: other key orders, whitespace) are matched by lookups and registrations, as
Confluent compares parsed schemas."""
from __future__ import annotations

import json

import pytest

from registry import errors
from registry.node import build_node
from registry.service import NewSchema, RegisterRequest
from registry.settings import load_settings
from store.memory_log import MemoryLog

PLAIN = json.dumps({"type": "record", "name": "User", "namespace": "com.example",
                    "fields": [{"name": "id", "type": "long"}, {"name": "email", "type": ["null", "string"],
                                                               "default": None}]})
# The same record as another registry's client may have sent it: keys in another order,
# spaces and newlines, and the namespace written into the name.
FOREIGN = ('{\n  "fields" : [ {"type" : "long", "name" : "id"},\n    {"default": null, "type" : ["null", "string"],'
           ' "name" : "email"} ],\n  "name" : "com.example.User",  "type" : "record"\n}')


def node_on(log: MemoryLog):
    node = build_node(load_settings(environ={}), log)
    assert node.writer.wait_ready(5), "the node catches up with its log"
    return node


def register(node, subject: str, schema: str, normalize: bool = False):
    return node.service.register(subject, RegisterRequest(NewSchema(schema), normalize=normalize))


@pytest.mark.parametrize("first, second", [(False, True), (True, False)])
def test_normalize_on_registration_finds_the_version_registered_the_other_way(first: bool, second: bool):
    node = node_on(MemoryLog())
    try:
        one = register(node, "s", PLAIN, normalize=first)
        again = register(node, "s", PLAIN, normalize=second)
        assert (again.id, again.version) == (one.id, one.version), "the same schema: the same id and version"
        assert node.service.versions("s") == [1], "no second version"
    finally:
        node.close()


def foreign_log(*entries: tuple[str, int, int, str]) -> MemoryLog:
    """A log as another registry wrote it: its keys in another field order, its values
    with the schema text as sent."""
    log = MemoryLog()
    for subject, version, schema_id, text in entries:
        key = json.dumps({"subject": subject, "magic": 1, "keytype": "SCHEMA", "version": version}).encode()
        value = json.dumps({"schema": text, "id": schema_id, "version": version, "subject": subject,
                            "deleted": False}).encode()
        log.append(key, value)
    return log


def test_texts_another_registry_wrote_are_found_by_lookup_and_registration():
    node = node_on(foreign_log(("raw1", 1, 7, FOREIGN)))
    try:
        found = node.service.lookup("raw1", NewSchema(PLAIN))
        assert (found.id, found.version) == (7, 1), "the lookup finds the stored version"
        again = register(node, "raw1", PLAIN)
        assert (again.id, again.version) == (7, 1), "re-registering is not a new version"
        assert node.service.versions("raw1") == [1]
        normalized = register(node, "raw1", FOREIGN, normalize=True)
        assert (normalized.id, normalized.version) == (7, 1)
        other = json.dumps({"type": "record", "name": "Other", "fields": [{"name": "x", "type": "int"}]})
        with pytest.raises(errors.SchemaNotFound):
            node.service.lookup("raw1", NewSchema(other))
    finally:
        node.close()
