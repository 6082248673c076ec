"""`/config` and `/mode`, global and per subject, as Confluent's ConfigResource and
ModeResource answer them, including IMPORT registration with explicit ids and versions.

Tests that change global settings get a registry of their own (`fresh_registry`).
"""
from __future__ import annotations

import pytest

from tests.api.support import assert_error, ok_json, path_of, record, register, unique_record

LEVELS = ["NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"]
MODES = ["READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT"]

V1 = record("Thing", ("id", "long"))
V2 = record("Thing", ("id", "long"), ("name", ["null", "string"]), defaults={"name": None})


# ---- /config ----------------------------------------------------------------------------


def test_global_config_defaults_to_backward(registry):
    assert ok_json(registry.get("/config"), "GET /config") == {"compatibilityLevel": "BACKWARD"}, \
        "Confluent's default compatibility level is BACKWARD"


def test_global_config_follows_the_configured_default(start_registry):
    server = start_registry(env={"SCHEMA_REGISTRY_SCHEMA_COMPATIBILITY_LEVEL": "full_transitive"})
    assert ok_json(server.get("/config"), "GET /config") == {"compatibilityLevel": "FULL_TRANSITIVE"}, \
        "schema.compatibility.level sets the global default"


def test_put_get_delete_global_config(fresh_registry):
    server = fresh_registry
    for level in LEVELS:
        assert ok_json(server.put("/config", {"compatibility": level}), "PUT /config") == {
            "compatibility": level}, f"PUT /config echoes the request ({level})"
        assert ok_json(server.get("/config"), "GET /config") == {"compatibilityLevel": level}, \
            f"the global level {level} is kept"
    assert ok_json(server.delete("/config"), "DELETE /config") == {"compatibilityLevel": LEVELS[-1]}, \
        "DELETE /config answers the level it removed"
    assert ok_json(server.get("/config"), "GET /config") == {"compatibilityLevel": "BACKWARD"}, \
        "after DELETE the default applies again"


def test_config_levels_are_case_insensitive(registry, subject):
    ok_json(registry.put(f"/config/{path_of(subject)}", {"compatibility": "forward_transitive"}), "PUT lower case")
    assert ok_json(registry.get(f"/config/{path_of(subject)}"), "GET") == {
        "compatibilityLevel": "FORWARD_TRANSITIVE"}, "a lower-case level is stored in upper case"


@pytest.mark.parametrize("level", LEVELS)
def test_subject_config_put_get_delete(registry, subject, level):
    path = f"/config/{path_of(subject)}"
    assert_error(registry.get(path), 404, 40408, "a subject without subject-level config")
    assert ok_json(registry.get(path, params={"defaultToGlobal": "true"}), "defaultToGlobal") == {
        "compatibilityLevel": "BACKWARD"}, "defaultToGlobal=true falls back to the global level"
    assert ok_json(registry.put(path, {"compatibility": level}), "PUT") == {"compatibility": level}, \
        "PUT /config/{subject} echoes the request"
    assert ok_json(registry.get(path), "GET") == {"compatibilityLevel": level}, "the subject level is kept"
    assert ok_json(registry.get(path, params={"defaultToGlobal": "true"}), "GET") == {"compatibilityLevel": level}, \
        "defaultToGlobal does not hide a subject level"
    assert ok_json(registry.get("/config"), "GET /config") == {"compatibilityLevel": "BACKWARD"}, \
        "a subject level leaves the global level alone"
    assert ok_json(registry.delete(path), "DELETE") == {"compatibilityLevel": level}, \
        "DELETE answers the level it removed"
    assert_error(registry.get(path), 404, 40408, "the subject level is gone")


def test_delete_subject_config_that_is_not_set_is_40401(registry, subject):
    # ConfigResource.deleteSubjectConfig: no subject config -> Errors.subjectNotFoundException (40401).
    assert_error(registry.delete(f"/config/{path_of(subject)}"), 404, 40401,
                 "deleting a subject-level config that is not set")


def test_subject_config_governs_registration(registry, subject):
    register(registry, subject, V1)
    breaks = record("Thing", ("id", "long"), ("age", "int"))
    assert_error(registry.post(f"/subjects/{path_of(subject)}/versions", {"schema": breaks}), 409, 409,
                 "BACKWARD refuses a new field without default")
    ok_json(registry.put(f"/config/{path_of(subject)}", {"compatibility": "NONE"}), "set NONE")
    register(registry, subject, breaks)
    assert ok_json(registry.get(f"/subjects/{path_of(subject)}/versions"), "versions") == [1, 2], \
        "NONE on the subject lets it through"


# ---- /mode --------------------------------------------------------------------------------


def test_global_mode_defaults_to_readwrite(registry):
    assert ok_json(registry.get("/mode"), "GET /mode") == {"mode": "READWRITE"}, "the default mode is READWRITE"


@pytest.mark.parametrize("mode", MODES)
def test_put_get_delete_subject_mode(registry, subject, mode):
    path = f"/mode/{path_of(subject)}"
    assert_error(registry.get(path), 404, 40409, "a subject without subject-level mode")
    assert ok_json(registry.get(path, params={"defaultToGlobal": "true"}), "defaultToGlobal") == {
        "mode": "READWRITE"}, "defaultToGlobal=true falls back to the global mode"
    assert ok_json(registry.put(path, {"mode": mode}), "PUT") == {"mode": mode}, "PUT /mode/{subject} echoes"
    assert ok_json(registry.get(path), "GET") == {"mode": mode}, "the subject mode is kept"
    assert ok_json(registry.get("/mode"), "GET /mode") == {"mode": "READWRITE"}, "the global mode is untouched"
    assert ok_json(registry.delete(path), "DELETE") == {"mode": mode}, "DELETE answers the mode it removed"
    assert_error(registry.get(path), 404, 40409, "the subject mode is gone")


def test_delete_subject_mode_that_is_not_set_is_40401(registry, subject):
    # ModeResource.deleteSubjectMode: no subject mode -> Errors.subjectNotFoundException (40401).
    assert_error(registry.delete(f"/mode/{path_of(subject)}"), 404, 40401,
                 "deleting a subject-level mode that is not set")


def test_put_get_global_mode(fresh_registry):
    for mode in ["READONLY", "READONLY_OVERRIDE", "IMPORT", "READWRITE"]:
        assert ok_json(fresh_registry.put("/mode", {"mode": mode}), "PUT /mode") == {"mode": mode}, \
            f"PUT /mode echoes {mode}"
        assert ok_json(fresh_registry.get("/mode"), "GET /mode") == {"mode": mode}, f"the global mode {mode} is kept"


def test_readonly_subject_refuses_writes_but_answers_existing_registrations(registry, subject):
    schema = unique_record(subject)
    schema_id = register(registry, subject, schema)
    ok_json(registry.put(f"/mode/{path_of(subject)}", {"mode": "READONLY"}), "set READONLY")
    base = f"/subjects/{path_of(subject)}"
    assert_error(registry.post(f"{base}/versions", {"schema": V2}), 422, 42205, "registering in READONLY")
    assert_error(registry.delete(f"{base}/versions/1"), 422, 42205, "deleting a version in READONLY")
    assert_error(registry.delete(base), 422, 42205, "deleting the subject in READONLY")
    # KafkaSchemaRegistry.registerOrForward looks the schema up before any mode check.
    assert register(registry, subject, schema) == schema_id, \
        "re-registering an existing schema in READONLY answers its id, as Confluent does"
    assert ok_json(registry.get(f"{base}/versions/1"), "reads")["id"] == schema_id, "READONLY still serves reads"
    register(registry, f"{subject}-other", V2)  # other subjects stay writable
    ok_json(registry.delete(f"/mode/{path_of(subject)}"), "back to the global mode")
    register(registry, subject, unique_record(subject, ("note", ["null", "string"]), defaults={"note": None}))


def test_readonly_override_beats_a_subject_readwrite(fresh_registry, subject):
    server = fresh_registry
    ok_json(server.put(f"/mode/{path_of(subject)}", {"mode": "READWRITE"}), "subject READWRITE")
    ok_json(server.put("/mode", {"mode": "READONLY_OVERRIDE"}), "global READONLY_OVERRIDE")
    assert_error(server.post(f"/subjects/{path_of(subject)}/versions", {"schema": V1}), 422, 42205,
                 "READONLY_OVERRIDE refuses writes whatever the subject's mode")
    ok_json(server.put("/mode", {"mode": "READWRITE"}), "global READWRITE")
    register(server, subject, V1)


def test_global_readonly_defers_to_a_subject_readwrite(fresh_registry, subject):
    server = fresh_registry
    ok_json(server.put("/mode", {"mode": "READONLY"}), "global READONLY")
    assert_error(server.post(f"/subjects/{path_of(subject)}-x/versions", {"schema": V1}), 422, 42205,
                 "global READONLY refuses writes")
    ok_json(server.put(f"/mode/{path_of(subject)}", {"mode": "READWRITE"}), "subject READWRITE")
    register(server, subject, V1)  # a subject mode beats a plain global READONLY


def test_import_mode_registers_explicit_ids_and_versions(fresh_registry, subject):
    server = fresh_registry
    assert ok_json(server.put("/mode", {"mode": "IMPORT"}), "IMPORT on an empty registry") == {"mode": "IMPORT"}, \
        "an empty registry may switch to IMPORT"
    base = f"/subjects/{path_of(subject)}/versions"
    answer = ok_json(server.post(base, {"schema": V1, "id": 100, "version": 3}), "import with id and version")
    assert answer["id"] == 100, "IMPORT keeps the given id"
    got = ok_json(server.get(f"{base}/3"), "get version 3")
    assert (got["id"], got["version"]) == (100, 3), "IMPORT keeps the given version"
    # IMPORT skips compatibility checks: V2 -> a type change would be refused otherwise.
    other = record("Thing", ("id", "string"))
    assert ok_json(server.post(base, {"schema": other, "id": 7, "version": 4}), "import")["id"] == 7, \
        "ids below existing ones may be imported; no compatibility check in IMPORT"
    assert_error(server.post(base, {"schema": V2, "id": 100, "version": 5}), 422, 42205,
                 "IMPORT of other content under an existing id (Overwrite new schema with id ...)")
    assert_error(server.post(base, {"schema": V2}), 422, 42205,
                 "IMPORT mode without an id (Confluent: 'not in read-write mode')")
    assert ok_json(server.get(base), "versions") == [3, 4], "the refused imports wrote nothing"
    ok_json(server.put("/mode", {"mode": "READWRITE"}), "back to READWRITE")
    fresh = register(server, f"{subject}-new", V2)
    assert fresh > 100, f"new ids are allocated above every imported id, got {fresh}"


def test_explicit_id_outside_import_mode_is_42205(registry, subject):
    assert_error(registry.post(f"/subjects/{path_of(subject)}/versions",
                               {"schema": unique_record(subject), "id": 2_000_000_000}), 422, 42205,
                 "an explicit id for new content outside IMPORT mode")
    assert_error(registry.get(f"/subjects/{path_of(subject)}/versions"), 404, 40401, "nothing was registered")


def test_import_refused_on_a_non_empty_registry_unless_forced(fresh_registry, subject):
    server = fresh_registry
    register(server, subject, V1)
    assert_error(server.put("/mode", {"mode": "IMPORT"}), 422, 42205, "IMPORT with schemas present")
    assert ok_json(server.get("/mode"), "GET /mode") == {"mode": "READWRITE"}, "the refused switch wrote nothing"
    assert_error(server.put(f"/mode/{path_of(subject)}", {"mode": "IMPORT"}), 422, 42205,
                 "subject IMPORT with schemas under the subject")
    assert ok_json(server.put("/mode", {"mode": "IMPORT"}, params={"force": "true"}), "forced") == {"mode": "IMPORT"}, \
        "force=true switches to IMPORT anyway"
    assert ok_json(server.put(f"/mode/{path_of(subject)}-empty", {"mode": "IMPORT"}), "empty subject") == {
        "mode": "IMPORT"}, "an empty subject may switch to IMPORT"


def test_permanent_subject_delete_removes_its_config(registry, subject):
    register(registry, subject, V1)
    ok_json(registry.put(f"/config/{path_of(subject)}", {"compatibility": "NONE"}), "set NONE")
    ok_json(registry.delete(f"/subjects/{path_of(subject)}"), "soft delete")
    ok_json(registry.delete(f"/subjects/{path_of(subject)}", params={"permanent": "true"}), "hard delete")
    assert_error(registry.get(f"/config/{path_of(subject)}"), 404, 40408,
                 "a permanent subject delete removes its config")
