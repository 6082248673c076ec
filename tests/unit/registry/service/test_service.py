"""Service rules on the in-memory log: Confluent's semantics for ids, versions, deletes,
config and modes. Every write here goes through the log and the reader."""
from __future__ import annotations

import json
import threading

import pytest

from registry import errors
from registry.compatibility import CompatibilityLevel
from registry.node import build_node
from registry.service import NewSchema, RegisterRequest
from registry.settings import load_settings
from store.cache import Cache
from store.memory_log import MemoryLog
from store.reader import LogReader
from store.records import SchemaReference


def record(name: str, *fields: tuple[str, object], **extra) -> str:
    return json.dumps({"type": "record", "name": name,
                       "fields": [dict({"name": n, "type": t}, **extra.get(n, {})) for n, t in fields]})


V1 = record("User", ("id", "long"))
V2 = record("User", ("id", "long"), ("email", ["null", "string"]), email={"default": None})
BREAKS = record("User", ("id", "long"), ("age", "int"))  # new field without default


@pytest.fixture
def node():
    the_node = build_node(load_settings(environ={}), MemoryLog())
    assert the_node.writer.wait_ready(5)
    yield the_node
    the_node.close()


def reg(node, subject: str, schema: str, **kw):
    return node.service.register(subject, RegisterRequest(NewSchema(schema, **kw.pop("new", {})), **kw))


def test_reregistering_same_schema_returns_same_id_and_adds_no_version(node):
    first = reg(node, "s", V1)
    reformatted = json.dumps(json.loads(V1), indent=4)
    again = reg(node, "s", reformatted)
    assert (again.id, again.version) == (first.id, first.version)
    assert node.service.versions("s") == [1]


def test_same_content_in_another_subject_shares_the_id(node):
    assert reg(node, "a", V1).id == reg(node, "b", V1).id


def test_ids_and_versions_increase(node):
    one, two = reg(node, "s", V1), reg(node, "s", V2)
    assert (two.id, two.version) == (one.id + 1, 2)


def test_incompatible_schema_is_refused_and_nothing_is_written(node):
    reg(node, "s", V1)
    end = node.log.end_offset()
    with pytest.raises(errors.IncompatibleSchema):
        reg(node, "s", BREAKS)
    assert node.log.end_offset() == end, "a refused registration must not reach the log"


def test_invalid_schema_is_42201_and_writes_nothing(node):
    end = node.log.end_offset()
    with pytest.raises(errors.InvalidSchema):
        reg(node, "s", '{"type": "record", "name": "X", "fields": [{"name": "a", "type": "nope"}]}')
    assert node.log.end_offset() == end, "an invalid schema must not reach the log"


def test_unknown_schema_type_is_42201(node):
    with pytest.raises(errors.InvalidSchema):
        reg(node, "s", "{}", new={"schema_type": "XML"})


def test_compatibility_none_allows_anything(node):
    reg(node, "s", V1)
    node.service.set_compatibility("s", "none")
    assert reg(node, "s", BREAKS).version == 2


def test_transitive_checks_every_version_but_plain_only_the_latest(node):
    node.service.set_compatibility(None, "NONE")
    reg(node, "s", record("R", ("a", "int")))
    reg(node, "s", record("R", ("b", "int")))  # incompatible with v1, allowed under NONE
    new = NewSchema(record("R", ("b", "int"), ("c", "int"), c={"default": 0}))
    node.service.set_compatibility("s", "BACKWARD")
    assert node.service.check_compatibility("s", None, new) == []
    node.service.set_compatibility("s", "BACKWARD_TRANSITIVE")
    assert node.service.check_compatibility("s", None, new), "transitive must also check version 1"


def test_soft_then_permanent_delete_of_a_version(node):
    first = reg(node, "s", V1)
    with pytest.raises(errors.VersionNotSoftDeleted):
        node.service.delete_version("s", "1", permanent=True)
    assert node.service.delete_version("s", "1") == 1
    with pytest.raises(errors.VersionSoftDeleted):
        node.service.delete_version("s", "1")
    with pytest.raises(errors.SubjectNotFound):
        node.service.versions("s")
    assert node.service.versions("s", deleted=True) == [1]
    assert node.service.versions_of_id(first.id, deleted=True) == [("s", 1)], "soft-deleted: still by id"
    assert node.service.delete_version("s", "1", permanent=True) == 1
    with pytest.raises(errors.SchemaNotFound):
        node.service.schema_by_id(first.id)  # hard-deleted and used nowhere else: gone by id too
    with pytest.raises(errors.SubjectNotFound):
        node.service.versions("s", deleted=True)


def test_ids_are_not_reused_after_hard_delete(node):
    first = reg(node, "s", V1)
    node.service.delete_subject("s")
    node.service.delete_subject("s", permanent=True)
    other = reg(node, "t", V2)
    assert other.id > first.id, "a hard-deleted id must not be handed to other content"


def test_subject_delete_rules(node):
    reg(node, "s", V1)
    reg(node, "s", V2)
    with pytest.raises(errors.SubjectNotSoftDeleted):
        node.service.delete_subject("s", permanent=True)
    assert node.service.delete_subject("s") == [1, 2]
    with pytest.raises(errors.SubjectSoftDeleted):
        node.service.delete_subject("s")
    assert node.service.subjects() == [] and node.service.subjects(deleted=True) == ["s"]
    assert node.service.subjects(deleted_only=True) == ["s"]
    assert node.service.delete_subject("s", permanent=True) == [1, 2]
    assert node.service.subjects(deleted=True) == []


def test_register_after_soft_delete_creates_a_new_version(node):
    reg(node, "s", V1)
    node.service.delete_subject("s")
    again = reg(node, "s", V1)
    assert again.version == 2 and node.service.versions("s") == [2]


def test_readonly_mode_refuses_writes(node):
    node.service.set_mode("s", "READONLY")
    with pytest.raises(errors.OperationNotPermitted):
        reg(node, "s", V1)
    reg(node, "other", V1)


def test_readonly_override_beats_subject_modes(node):
    node.service.set_mode("s", "READWRITE")
    node.service.set_mode(None, "READONLY_OVERRIDE")
    with pytest.raises(errors.OperationNotPermitted):
        reg(node, "s", V1)


def test_import_mode_takes_explicit_ids_and_versions(node):
    node.service.set_mode(None, "IMPORT")
    value = reg(node, "s", V1, schema_id=100, version=7)
    assert (value.id, value.version) == (100, 7)
    with pytest.raises(errors.OperationNotPermitted):
        reg(node, "t", V2, schema_id=100)  # id 100 already names V1
    node.service.set_mode(None, "READWRITE")
    assert reg(node, "t", V2).id == 101, "ids continue above imported ones"


def test_import_mode_refused_on_non_empty_registry_unless_forced(node):
    reg(node, "s", V1)
    with pytest.raises(errors.OperationNotPermitted):
        node.service.set_mode(None, "IMPORT")
    assert node.service.set_mode(None, "IMPORT", force=True).value == "IMPORT"


def test_explicit_id_outside_import_mode_is_refused(node):
    with pytest.raises(errors.OperationNotPermitted):
        reg(node, "s", V1, schema_id=5)


def test_references_resolve_and_block_deletion(node):
    reg(node, "addr", record("Address", ("street", "string")))
    user = record("Person", ("home", "Address"))
    ref = SchemaReference("Address", "addr", 1)
    value = reg(node, "person", user, new={"references": (ref,)})
    assert node.service.referenced_by("addr", "1") == [value.id]
    with pytest.raises(errors.ReferenceExists):
        node.service.delete_version("addr", "1")


def test_config_and_mode_defaults_and_deletes(node):
    assert node.service.global_compatibility() is CompatibilityLevel.BACKWARD
    node.service.set_compatibility("s", "FULL")
    assert node.service.compatibility_for("s") is CompatibilityLevel.FULL
    assert node.service.delete_compatibility("s") is CompatibilityLevel.FULL
    with pytest.raises(errors.SubjectConfigNotFound):
        node.service.delete_compatibility("s")
    with pytest.raises(errors.InvalidCompatibilityLevel):
        node.service.set_compatibility(None, "SIDEWAYS")
    with pytest.raises(errors.InvalidMode):
        node.service.set_mode(None, "WRITEONLY")


def test_lookup_finds_version_by_reformatted_schema(node):
    reg(node, "s", V1)
    found = node.service.lookup("s", NewSchema(json.dumps(json.loads(V1), indent=2)))
    assert found.version == 1
    with pytest.raises(errors.SchemaNotFound):
        node.service.lookup("s", NewSchema(V2))
    with pytest.raises(errors.SubjectNotFound):
        node.service.lookup("nope", NewSchema(V1))


def test_concurrent_registrations_never_share_an_id_between_contents(node):
    node.service.set_compatibility(None, "NONE")
    results: list = []

    def worker(n: int) -> None:
        for i in range(20):
            results.append(reg(node, f"s{n}", record(f"R{n}_{i}", ("a", "int"))))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    ids = {}
    for value in results:
        assert ids.setdefault(value.id, value.schema) == value.schema, "an id must mean one schema"
    assert len(ids) == 80


def test_a_second_node_replaying_the_log_answers_identically(node):
    reg(node, "s", V1)
    reg(node, "s", V2)
    node.service.delete_version("s", "1")
    node.service.set_compatibility("s", "FULL")
    cache = Cache()
    reader = LogReader(node.log, cache)
    reader.start()
    try:
        assert reader.catch_up(5)
        assert cache.fingerprint() == node.cache.fingerprint()
    finally:
        reader.stop()
