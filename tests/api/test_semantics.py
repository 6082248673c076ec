"""Confluent's registration rules through the API: ids and versions, dedupe, compatibility
levels (409), and ids that are never reused, even after a hard delete and a restart."""
from __future__ import annotations

import json

import pytest

from tests.api.support import assert_error, ok_json, path_of, record, register, unique_record


def versions_of(server, subject: str) -> list[int]:
    return ok_json(server.get(f"/subjects/{path_of(subject)}/versions"), "versions")


# ---- ids and versions ------------------------------------------------------------------


def test_same_schema_again_gives_the_same_id_and_no_new_version(registry, subject):
    schema = unique_record(subject)
    first = register(registry, subject, schema)
    again = register(registry, subject, json.dumps(json.loads(schema), indent=2))
    assert again == first, "re-registering the same (reformatted) schema answers the same id"
    assert versions_of(registry, subject) == [1], "and adds no version"


def test_same_content_in_another_subject_shares_the_id(registry, subject):
    schema = unique_record(subject)
    first = register(registry, subject, schema)
    assert register(registry, f"{subject}-b", schema) == first, "equal content has one id across subjects"
    got = ok_json(registry.get(f"/subjects/{path_of(subject)}-b/versions/1"), "version")
    assert (got["version"], got["id"]) == (1, first), "it is version 1 of the other subject"


def test_new_content_gets_a_new_id_above_the_others(registry, subject):
    a = register(registry, subject, unique_record(subject))
    b = register(registry, subject, unique_record(subject, ("x", ["null", "int"]), defaults={"x": None}))
    assert b > a, "a new schema gets a fresh, larger id"
    assert versions_of(registry, subject) == [1, 2], "and the next version"


def test_re_registering_a_soft_deleted_schema_makes_a_new_version_with_the_same_id(registry, subject):
    schema = unique_record(subject)
    first = register(registry, subject, schema)
    ok_json(registry.delete(f"/subjects/{path_of(subject)}"), "soft-delete the subject")
    assert register(registry, subject, schema) == first, "the content keeps its id"
    assert versions_of(registry, subject) == [2], "a new version number follows the deleted ones"


def test_an_incompatible_schema_writes_nothing(registry, subject):
    register(registry, subject, record("T", ("a", "string")))
    before = ok_json(registry.get("/schemas", params={"subjectPrefix": subject, "deleted": "true"}), "schemas")
    assert_error(registry.post(f"/subjects/{path_of(subject)}/versions",
                               {"schema": record("T", ("a", "string"), ("b", "int"))}), 409, 409, "incompatible")
    after = ok_json(registry.get("/schemas", params={"subjectPrefix": subject, "deleted": "true"}), "schemas")
    assert after == before, "a refused registration leaves the subject as it was"


# ---- compatibility levels ----------------------------------------------------------------
# a: string; b: int. "b0" has a default of 0, "b" has none.
A = record("T", ("a", "string"))
A_B0 = record("T", ("a", "string"), ("b", "int"), defaults={"b": 0})
A_B = record("T", ("a", "string"), ("b", "int"))

# (level, history, candidate, accepted?)
CASES = [
    # BACKWARD: the new schema reads data written with the last one.
    ("BACKWARD", [A], A_B, False),          # new field without default cannot be read from old data
    ("BACKWARD", [A], A_B0, True),
    ("BACKWARD", [A_B], A, True),           # dropping a field is fine for the reader
    ("BACKWARD", [A, A_B0], A_B, True),     # only the latest counts
    ("BACKWARD_TRANSITIVE", [A, A_B0], A_B, False),  # ...unless transitive: v1 lacks b
    # FORWARD: the last schema reads data written with the new one.
    ("FORWARD", [A_B], A, False),           # old reader needs b, new data lacks it
    ("FORWARD", [A], A_B, True),
    ("FORWARD", [A_B, A_B0], A, True),      # latest A_B0 has a default for b
    ("FORWARD_TRANSITIVE", [A_B, A_B0], A, False),   # v1 A_B cannot read it
    # FULL: both ways.
    ("FULL", [A], A_B, False),
    ("FULL", [A_B], A, False),
    ("FULL", [A], A_B0, True),
    ("FULL", [A, A_B0], A_B, True),
    ("FULL_TRANSITIVE", [A, A_B0], A_B, False),
    ("NONE", [A_B], record("T", ("a", "int")), True),
]


@pytest.mark.parametrize(("level", "history", "candidate", "accepted"), CASES,
                         ids=[f"{c[0]}-{i}-{'ok' if c[3] else '409'}" for i, c in enumerate(CASES)])
def test_compatibility_levels(registry, subject, level, history, candidate, accepted):
    ok_json(registry.put(f"/config/{path_of(subject)}", {"compatibility": "NONE"}), "NONE while seeding")
    for schema in history:
        register(registry, subject, schema)
    ok_json(registry.put(f"/config/{path_of(subject)}", {"compatibility": level}), f"set {level}")
    check = ok_json(registry.post(f"/compatibility/subjects/{path_of(subject)}/versions", {"schema": candidate}),
                    "check")
    assert check["is_compatible"] is accepted, f"{level}: the compatibility check says {accepted}"
    response = registry.post(f"/subjects/{path_of(subject)}/versions", {"schema": candidate})
    if accepted:
        assert response.status_code == 200, f"{level} accepts it: {response.text}"
        assert versions_of(registry, subject) == list(range(1, len(history) + 2)), "one new version"
    else:
        body = assert_error(response, 409, 409, f"{level} refuses it")
        assert "incompatible" in body["message"].lower(), "the 409 says the schema is incompatible"
        assert versions_of(registry, subject) == list(range(1, len(history) + 1)), "nothing was added"


# ---- ids are never reused ----------------------------------------------------------------


def test_ids_are_never_reused_after_a_hard_delete_and_a_restart(fresh_registry, subject):
    server = fresh_registry
    keep = register(server, f"{subject}-keep", unique_record(f"{subject}-keep"))
    doomed_schema = unique_record(f"{subject}-doomed")
    doomed = register(server, f"{subject}-doomed", doomed_schema)
    assert doomed > keep, "ids increase"
    ok_json(server.delete(f"/subjects/{path_of(subject)}-doomed"), "soft delete")
    ok_json(server.delete(f"/subjects/{path_of(subject)}-doomed", params={"permanent": "true"}), "hard delete")
    server.restart()
    fresh = register(server, f"{subject}-new", unique_record(f"{subject}-new"))
    assert fresh > doomed, f"a new schema after a hard delete and a restart gets a fresh id, got {fresh} " \
                           f"(the hard-deleted schema had {doomed})"
    by_id = server.get(f"/schemas/ids/{doomed}")
    if by_id.status_code == 200:
        assert by_id.json()["schema"] == doomed_schema, f"id {doomed} may only ever mean the deleted schema"
    else:
        assert_error(by_id, 404, 40403, "a hard-deleted id")
    again = register(server, f"{subject}-doomed", doomed_schema)
    assert again not in (keep, fresh), "re-registering the deleted content never takes another schema's id"
    assert ok_json(server.get(f"/schemas/ids/{keep}"), "kept id")["schema"] == unique_record(f"{subject}-keep"), \
        "the surviving id still names its schema after the restart"
