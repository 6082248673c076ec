"""Every REST endpoint against a real server, asserting Confluent's documented answers.

Confluent's behaviour is taken from its REST resources (confluentinc/schema-registry,
`core/.../rest/resources/*Resource.java`) and its API reference. One server serves the
module; each test works on subjects of its own.
"""
from __future__ import annotations

import hashlib
import json
import uuid

import pytest

from tests.api.support import (
    CONTENT_TYPE,
    RegistryProcess,
    assert_error,
    ok_json,
    path_of,
    record,
    register,
    unique_record,
)

V1 = record("User", ("id", "long"), namespace="com.example")
V2 = record("User", ("id", "long"), ("email", ["null", "string"]), namespace="com.example",
            defaults={"email": None})
V3 = record("User", ("id", "long"), ("email", ["null", "string"]), ("age", "int"), namespace="com.example",
            defaults={"email": None, "age": 0})
BREAKS_V1 = record("User", ("id", "long"), ("age", "int"), namespace="com.example")  # no default


def versions_of(server: RegistryProcess, subject: str, **params: str) -> list[int]:
    return ok_json(server.get(f"/subjects/{path_of(subject)}/versions", params=params), "list versions")


# ---- content types, root, metadata, readiness, unknown routes ------------------------------


@pytest.mark.parametrize("path", ["/", "/subjects", "/schemas", "/schemas/types", "/config", "/mode",
                                  "/v1/metadata/id", "/no/such/route", "/schemas/ids/2147483647"])
def test_every_answer_uses_confluents_content_type(registry, path):
    response = registry.get(path)
    assert response.headers["Content-Type"].startswith(CONTENT_TYPE), (
        f"GET {path} must answer {CONTENT_TYPE}, as Confluent does, got {response.headers['Content-Type']}")


@pytest.mark.parametrize("content_type", [
    "application/vnd.schemaregistry.v1+json",
    "application/vnd.schemaregistry+json",
    "application/json",
    "application/json; charset=utf-8",
])
def test_request_bodies_are_accepted_in_confluents_content_types(registry, subject, content_type):
    response = registry.post(f"/subjects/{path_of(subject)}/versions", {"schema": V1}, content_type=content_type,
                             headers={"Accept": "application/vnd.schemaregistry.v1+json, "
                                                "application/vnd.schemaregistry+json, application/json"})
    assert response.status_code == 200, f"a {content_type} body must be accepted: {response.text}"
    assert isinstance(response.json()["id"], int), "register answers {'id': int}"


def test_root_answers_an_empty_object(registry):
    assert ok_json(registry.get("/"), "GET /") == {}, "Confluent's RootResource answers {}"


def test_ready_answers_200_once_the_log_is_read(registry):
    assert registry.get("/ready").status_code == 200, "/ready must be 200 on a caught-up node"


def test_metadata_id_has_confluents_shape(registry):
    body = ok_json(registry.get("/v1/metadata/id"), "GET /v1/metadata/id")
    assert body["scope"]["path"] == [], "scope.path is an empty list for a plain cluster"
    clusters = body["scope"]["clusters"]
    assert isinstance(clusters.get("kafka-cluster"), str), "scope.clusters names the kafka-cluster"
    assert isinstance(clusters.get("schema-registry-cluster"), str), \
        "scope.clusters names the schema-registry-cluster (the group id)"


@pytest.mark.parametrize("path", ["/associations/resources/x", "/no-such-thing", "/schemas/ids/1/nope",
                                  "/v2/subjects"])
def test_unknown_routes_answer_404_with_an_error_body(registry, path):
    assert_error(registry.get(path), 404, 404, f"GET {path} is no route")


def test_a_wrong_method_answers_405_with_an_error_body(registry):
    assert_error(registry.request("PATCH", "/subjects"), 405, 405, "PATCH /subjects is no route")


# ---- subjects -------------------------------------------------------------------------------


def test_list_subjects_with_prefix_deleted_and_deleted_only(registry, subject):
    live, gone, other = f"{subject}-live", f"{subject}-gone", f"x{subject}"
    for name in (live, gone, other):
        register(registry, name, V1)
    ok_json(registry.delete(f"/subjects/{path_of(gone)}"), "soft-delete a subject")

    def listing(**params: str) -> list[str]:
        return ok_json(registry.get("/subjects", params=params), f"GET /subjects {params}")

    assert live in listing() and gone not in listing(), "soft-deleted subjects are hidden by default"
    assert listing(subjectPrefix=subject) == [live], "subjectPrefix keeps only subjects starting with it"
    assert listing(subjectPrefix=subject, deleted="true") == sorted([live, gone]), \
        "deleted=true adds soft-deleted subjects"
    assert listing(subjectPrefix=subject, deletedOnly="true") == [gone], \
        "deletedOnly=true gives only the soft-deleted subjects"
    assert other not in listing(subjectPrefix=subject), "a prefix match is not a substring match"


def test_lookup_finds_the_version_from_reformatted_schema_text(registry, subject):
    first = register(registry, subject, V1)
    second = register(registry, subject, V2)
    reformatted = json.dumps(json.loads(V1), indent=4)
    body = ok_json(registry.post(f"/subjects/{path_of(subject)}", {"schema": reformatted}), "lookup")
    assert body == {"subject": subject, "version": 1, "id": first, "guid": guid(V1), "schema": V1}, \
        "lookup answers subject, version, id, guid (Confluent 8) and the stored schema text"
    reordered = json.dumps(dict(reversed(list(json.loads(V2).items()))))
    found = ok_json(registry.post(f"/subjects/{path_of(subject)}", {"schema": reordered}), "lookup")
    assert (found["id"], found["version"]) == (second, 2), "JSON key order does not matter to lookup"


def test_lookup_errors_40401_and_40403(registry, subject):
    assert_error(registry.post(f"/subjects/{path_of(subject)}", {"schema": V1}), 404, 40401,
                 "lookup under an unknown subject")
    register(registry, subject, V1)
    assert_error(registry.post(f"/subjects/{path_of(subject)}", {"schema": V2}), 404, 40403,
                 "lookup of a schema never registered under the subject")


def test_lookup_of_soft_deleted_versions_needs_deleted_true(registry, subject):
    register(registry, subject, V1)
    register(registry, subject, V2)
    ok_json(registry.delete(f"/subjects/{path_of(subject)}/versions/1"), "soft-delete version 1")
    assert_error(registry.post(f"/subjects/{path_of(subject)}", {"schema": V1}), 404, 40403,
                 "a soft-deleted version is not found by lookup by default")
    found = ok_json(registry.post(f"/subjects/{path_of(subject)}", {"schema": V1}, params={"deleted": "true"}),
                    "lookup with deleted=true")
    assert found["version"] == 1, "deleted=true finds the soft-deleted version"


def test_lookup_under_a_soft_deleted_subject_is_40401(registry, subject):
    # SubjectsResource.lookUpSchemaUnderSubject: no match and !hasSubjects(subject, deleted) -> 40401.
    register(registry, subject, V1)
    ok_json(registry.delete(f"/subjects/{path_of(subject)}"), "soft-delete the subject")
    assert_error(registry.post(f"/subjects/{path_of(subject)}", {"schema": V1}), 404, 40401,
                 "lookup under a wholly soft-deleted subject")


def test_delete_subject_soft_then_permanent(registry, subject):
    path = f"/subjects/{path_of(subject)}"
    register(registry, subject, V1)
    register(registry, subject, V2)
    assert_error(registry.delete(path, params={"permanent": "true"}), 404, 40405,
                 "a permanent delete needs a soft delete first")
    assert ok_json(registry.delete(path), "soft delete") == [1, 2], "a soft delete answers the versions deleted"
    assert subject not in ok_json(registry.get("/subjects"), "list"), "a soft-deleted subject is hidden"
    assert_error(registry.get(f"{path}/versions"), 404, 40401, "versions of a soft-deleted subject")
    assert versions_of(registry, subject, deleted="true") == [1, 2], "deleted=true still lists them"
    assert_error(registry.delete(path), 404, 40404, "soft-deleting a soft-deleted subject")
    assert ok_json(registry.delete(path, params={"permanent": "true"}), "hard delete") == [1, 2], \
        "a permanent delete answers every version it removed"
    assert_error(registry.get(f"{path}/versions", params={"deleted": "true"}), 404, 40401,
                 "nothing is left after a permanent delete")
    assert_error(registry.delete(path), 404, 40401, "deleting a subject that is gone")


# ---- versions -----------------------------------------------------------------------------


def test_register_and_list_versions(registry, subject):
    one, two = register(registry, subject, V1), register(registry, subject, V2)
    assert two != one, "different content gets a different id"
    assert versions_of(registry, subject) == [1, 2], "versions count up from 1"
    assert_error(registry.get(f"/subjects/{path_of(subject)}-none/versions"), 404, 40401,
                 "versions of an unknown subject")


def test_get_version_by_number_latest_and_minus_one(registry, subject):
    one, two = register(registry, subject, V1), register(registry, subject, V2)
    base = f"/subjects/{path_of(subject)}/versions"
    assert ok_json(registry.get(f"{base}/1"), "version 1") == {
        "subject": subject, "version": 1, "id": one, "guid": guid(V1), "schema": V1}, \
        "a version is subject, version, id, guid (Confluent 8), schema"
    for alias in ("latest", "-1"):
        body = ok_json(registry.get(f"{base}/{alias}"), f"version {alias}")
        assert (body["version"], body["id"]) == (2, two), f"{alias} is the newest live version"
    assert_error(registry.get(f"{base}/3"), 404, 40402, "a version that does not exist")
    assert_error(registry.get(f"/subjects/{path_of(subject)}-none/versions/1"), 404, 40401,
                 "a version of an unknown subject")


def test_get_version_schema_answers_the_raw_schema(registry, subject):
    register(registry, subject, V1)
    response = registry.get(f"/subjects/{path_of(subject)}/versions/1/schema")
    assert response.status_code == 200, response.text
    assert json.loads(response.text) == json.loads(V1), "/schema answers the schema text itself, unescaped"
    for alias in ("latest", "-1"):
        assert registry.get(f"/subjects/{path_of(subject)}/versions/{alias}/schema").text == response.text, \
            f"/versions/{alias}/schema is the latest schema"


def test_soft_deleted_versions_are_hidden_unless_deleted_true(registry, subject):
    register(registry, subject, V1)
    register(registry, subject, V2)
    base = f"/subjects/{path_of(subject)}/versions"
    assert ok_json(registry.delete(f"{base}/2"), "soft-delete version 2") == 2, \
        "deleting a version answers its number"
    assert versions_of(registry, subject) == [1], "a soft-deleted version is not listed"
    assert versions_of(registry, subject, deleted="true") == [1, 2], "deleted=true lists it"
    assert_error(registry.get(f"{base}/2"), 404, 40402, "a soft-deleted version is not found by default")
    assert ok_json(registry.get(f"{base}/2", params={"deleted": "true"}), "deleted=true")["version"] == 2, \
        "deleted=true finds a soft-deleted version"
    assert ok_json(registry.get(f"{base}/latest"), "latest")["version"] == 1, \
        "latest skips soft-deleted versions"


def test_version_of_a_soft_deleted_subject_is_40401(registry, subject):
    # SubjectVersionsResource.getSchemaByVersion: !hasSubjects(subject, deleted) -> 40401.
    register(registry, subject, V1)
    ok_json(registry.delete(f"/subjects/{path_of(subject)}"), "soft-delete the subject")
    assert_error(registry.get(f"/subjects/{path_of(subject)}/versions/1"), 404, 40401,
                 "a version of a wholly soft-deleted subject")


def test_delete_version_soft_then_permanent(registry, subject):
    register(registry, subject, V1)
    register(registry, subject, V2)
    one = f"/subjects/{path_of(subject)}/versions/1"
    assert_error(registry.delete(one, params={"permanent": "true"}), 404, 40407,
                 "a permanent version delete needs a soft delete first")
    assert ok_json(registry.delete(one), "soft delete") == 1, "answers the version number"
    assert_error(registry.delete(one), 404, 40406, "soft-deleting a soft-deleted version")
    assert ok_json(registry.delete(one, params={"permanent": "true"}), "hard delete") == 1, \
        "a permanent delete answers the version number"
    assert_error(registry.get(one, params={"deleted": "true"}), 404, 40402, "a hard-deleted version is gone")
    assert_error(registry.delete(one), 404, 40402, "deleting a version that is gone")
    assert versions_of(registry, subject, deleted="true") == [2], "only version 2 is left"


def test_delete_latest_version(registry, subject):
    register(registry, subject, V1)
    register(registry, subject, V2)
    assert ok_json(registry.delete(f"/subjects/{path_of(subject)}/versions/latest"), "delete latest") == 2, \
        "deleting 'latest' deletes the newest live version"
    assert versions_of(registry, subject) == [1], "version 2 is soft-deleted"


def test_register_with_normalize(registry, subject):
    qualified = json.dumps({"type": "record", "name": "a.b.Outer", "fields": [
        {"name": "inner", "type": {"type": "record", "name": "a.b.Inner", "fields": [{"name": "x", "type": "int"}]}},
        {"name": "again", "type": "a.b.Inner"}]})
    relative = json.dumps({"type": "record", "name": "Outer", "namespace": "a.b", "fields": [
        {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}},
        {"name": "again", "type": "Inner"}]})
    first = ok_json(registry.post(f"/subjects/{path_of(subject)}/versions", {"schema": qualified},
                                  params={"normalize": "true"}), "register with normalize=true")["id"]
    answer = ok_json(registry.post(f"/subjects/{path_of(subject)}/versions", {"schema": relative},
                                   params={"normalize": "true"}), "register with normalize=true")
    assert answer["id"] == first, "the same schema spelt with relative names normalizes to the same id"
    assert versions_of(registry, subject) == [1], "normalize=true adds no version for the same schema"
    found = ok_json(registry.post(f"/subjects/{path_of(subject)}", {"schema": relative},
                                  params={"normalize": "true"}), "lookup with normalize=true")
    assert found["id"] == first, "lookup with normalize=true finds it too"


# ---- schemas --------------------------------------------------------------------------------


def guid(schema: str) -> str:
    """Confluent's guid for a schema without references or contracts: the MD5 of its
    text, read as a UUID (io.confluent.kafka.schemaregistry.storage.MD5)."""
    return str(uuid.UUID(bytes=hashlib.md5(schema.encode()).digest()))


def test_schemas_by_id_and_its_subresources(registry, subject):
    other = f"{subject}-other"
    schema = unique_record(subject)
    schema_id = register(registry, subject, schema)
    assert register(registry, other, schema) == schema_id, "the same content in another subject shares the id"
    assert ok_json(registry.get(f"/schemas/ids/{schema_id}"), "by id") == {"guid": guid(schema), "schema": schema}, \
        "an Avro schema by id is {'guid': ..., 'schema': text}, no schemaType"
    raw = registry.get(f"/schemas/ids/{schema_id}/schema")
    assert raw.status_code == 200 and json.loads(raw.text) == json.loads(schema), "/schema answers the raw schema"
    assert ok_json(registry.get(f"/schemas/ids/{schema_id}/subjects"), "subjects") == sorted([subject, other]), \
        "/subjects lists every subject using the id"
    assert sorted(ok_json(registry.get(f"/schemas/ids/{schema_id}/versions"), "versions"),
                  key=lambda v: v["subject"]) == sorted(
        [{"subject": subject, "version": 1}, {"subject": other, "version": 1}], key=lambda v: v["subject"]), \
        "/versions lists subject-version pairs"
    ok_json(registry.delete(f"/subjects/{path_of(other)}/versions/1"), "soft-delete other/1")
    assert ok_json(registry.get(f"/schemas/ids/{schema_id}/subjects"), "subjects") == [subject], \
        "a soft-deleted use is hidden"
    assert ok_json(registry.get(f"/schemas/ids/{schema_id}/subjects", params={"deleted": "true"}),
                   "subjects") == sorted([subject, other]), "deleted=true shows it"
    assert {"subject": other, "version": 1} in ok_json(
        registry.get(f"/schemas/ids/{schema_id}/versions", params={"deleted": "true"}), "versions"), \
        "deleted=true shows soft-deleted subject-versions"
    assert ok_json(registry.get(f"/schemas/ids/{schema_id}"), "by id")["schema"] == schema, \
        "the id still answers after a soft delete (Confluent keeps it for decoding)"


@pytest.mark.parametrize("suffix", ["", "/schema", "/subjects", "/versions"])
def test_unknown_schema_id_is_40403(registry, suffix):
    assert_error(registry.get(f"/schemas/ids/2147483000{suffix}"), 404, 40403, f"unknown id {suffix}")


def test_schema_by_id_with_subject_filter(registry, subject):
    # Issue 12: this test asserted 40403 for a subject that does not hold the id. Confluent
    # (KafkaSchemaRegistry.getSchemaKeyUsingContexts) only takes the subject to choose the
    # context and falls through to the id; its deserializers always send ?subject=<topic>-value.
    schema_id = register(registry, subject, V1)
    found = ok_json(registry.get(f"/schemas/ids/{schema_id}", params={"subject": subject}), "by id")
    assert (found["schema"], found["subject"], found["version"]) == (V1, subject, 1), \
        "an id asked for under a subject that uses it names that subject and version"
    other = ok_json(registry.get(f"/schemas/ids/{schema_id}", params={"subject": f"{subject}-not"}), "by id")
    assert other["schema"] == V1, "an id asked for under a subject that does not use it is still the schema"
    assert_error(registry.get("/schemas/ids/2147483000", params={"subject": subject}), 404, 40403,
                 "an unknown id is not found whatever the subject")


def test_schema_types_lists_avro(registry):
    types = ok_json(registry.get("/schemas/types"), "GET /schemas/types")
    assert isinstance(types, list) and all(isinstance(t, str) for t in types), "a list of type names"
    assert "AVRO" in types, "AVRO is supported"


def test_list_schemas_with_prefix_deleted_latest_only_offset_limit(registry, subject):
    a, b, c = f"{subject}-a", f"{subject}-b", f"{subject}-c"
    ids = {(a, 1): register(registry, a, V1), (a, 2): register(registry, a, V2),
           (b, 1): register(registry, b, V1), (c, 1): register(registry, c, V2)}
    ok_json(registry.delete(f"/subjects/{path_of(c)}/versions/1"), "soft-delete c/1")

    def listing(**params: str) -> list[tuple[str, int, int]]:
        found = ok_json(registry.get("/schemas", params={"subjectPrefix": subject, **params}), f"/schemas {params}")
        for item in found:
            assert isinstance(item.get("schema"), str), "each listed schema carries its text"
        return [(item["subject"], item["version"], item["id"]) for item in found]

    everything = [(a, 1, ids[a, 1]), (a, 2, ids[a, 2]), (b, 1, ids[b, 1])]
    assert listing() == everything, "every live version of every matching subject, by subject then version"
    assert listing(deleted="true") == everything + [(c, 1, ids[c, 1])], "deleted=true adds soft-deleted ones"
    assert listing(latestOnly="true") == [(a, 2, ids[a, 2]), (b, 1, ids[b, 1])], \
        "latestOnly=true keeps each subject's latest version"
    assert listing(offset="1", limit="1") == everything[1:2], "offset and limit page the list"
    assert listing(offset="2") == everything[2:], "offset alone skips"
    assert listing(limit="-1") == everything, "a negative limit is ignored"
    assert listing(limit="0") == everything, "limit=0 means no limit (Confluent's normalizeLimit)"
    assert listing(subjectPrefix=f"{subject}-zzz") == [], "no match gives []"


# ---- references ------------------------------------------------------------------------------


ADDRESS = record("Address", ("street", "string"), namespace="com.example")
PERSON = json.dumps({"type": "record", "name": "Person", "namespace": "com.example",
                     "fields": [{"name": "home", "type": "com.example.Address"}]}, separators=(",", ":"))


def test_references_register_resolve_and_block_deletes(registry, subject):
    addr, person = f"{subject}-addr", f"{subject}-person"
    addr_id = register(registry, addr, ADDRESS)
    refs = [{"name": "com.example.Address", "subject": addr, "version": 1}]
    assert_error(registry.post(f"/subjects/{path_of(person)}/versions", {"schema": PERSON}), 422, 42201,
                 "a schema naming an unknown type without a reference")
    person_id = register(registry, person, PERSON, references=refs)
    assert person_id != addr_id, "the referencing schema has an id of its own"
    version = ok_json(registry.get(f"/subjects/{path_of(person)}/versions/1"), "get version")
    assert version["references"] == refs, "a version carries its references"
    assert ok_json(registry.get(f"/schemas/ids/{person_id}"), "by id")["references"] == refs, \
        "a schema by id carries its references"
    found = ok_json(registry.post(f"/subjects/{path_of(person)}", {"schema": PERSON, "references": refs}), "lookup")
    assert found["id"] == person_id, "lookup with the same references finds the version"
    assert ok_json(registry.get(f"/subjects/{path_of(addr)}/versions/1/referencedby"), "referencedby") \
        == [person_id], "referencedby lists the ids of schemas referencing the version"
    assert ok_json(registry.get(f"/subjects/{path_of(person)}/versions/1/referencedby"), "referencedby") == [], \
        "an unreferenced version is referenced by nothing"
    assert_error(registry.delete(f"/subjects/{path_of(addr)}/versions/1"), 422, 42206,
                 "deleting a referenced version")
    assert_error(registry.delete(f"/subjects/{path_of(addr)}"), 422, 42206, "deleting a referenced subject")
    assert versions_of(registry, addr) == [1], "the refused deletes changed nothing"
    ok_json(registry.delete(f"/subjects/{path_of(person)}"), "soft-delete the referrer")
    ok_json(registry.delete(f"/subjects/{path_of(person)}", params={"permanent": "true"}), "hard-delete it")
    assert ok_json(registry.delete(f"/subjects/{path_of(addr)}/versions/1"), "delete") == 1, \
        "once nothing references it the version can be deleted"


def test_reference_to_a_missing_version_is_refused(registry, subject):
    refs = [{"name": "com.example.Address", "subject": f"{subject}-nowhere", "version": 1}]
    response = registry.post(f"/subjects/{path_of(subject)}/versions", {"schema": PERSON, "references": refs})
    assert_error(response, 422, (42201,), "a reference to a subject-version that does not exist")


# ---- compatibility ---------------------------------------------------------------------------


def test_compatibility_against_a_version_and_all_versions(registry, subject):
    register(registry, subject, V1)
    base = f"/compatibility/subjects/{path_of(subject)}/versions"
    for path in (f"{base}/latest", f"{base}/1", f"{base}/-1", base):
        good = ok_json(registry.post(path, {"schema": V2}), f"check {path}")
        assert good == {"is_compatible": True}, f"{path}: compatible, and no messages unless verbose"
        bad = ok_json(registry.post(path, {"schema": BREAKS_V1}), f"check {path}")
        assert bad == {"is_compatible": False}, f"{path}: incompatible, and no messages unless verbose"
        verbose = ok_json(registry.post(path, {"schema": BREAKS_V1}, params={"verbose": "true"}), "verbose")
        assert verbose["is_compatible"] is False, "verbose does not change the verdict"
        assert verbose["messages"] and all(isinstance(m, str) for m in verbose["messages"]), \
            "verbose=true explains an incompatibility in messages"
        assert ok_json(registry.post(path, {"schema": V2}, params={"verbose": "true"}), "verbose") \
            == {"is_compatible": True, "messages": []}, "verbose=true on a compatible schema: empty messages"
    assert versions_of(registry, subject) == [1], "compatibility checks register nothing"


def test_compatibility_with_missing_subjects_and_versions(registry, subject):
    base = f"/compatibility/subjects/{path_of(subject)}/versions"
    assert ok_json(registry.post(f"{base}/latest", {"schema": V1}), "latest of nothing") == {"is_compatible": True}, \
        "anything is compatible with the latest version of an empty subject"
    assert ok_json(registry.post(base, {"schema": V1}), "all of nothing") == {"is_compatible": True}, \
        "anything is compatible with no versions"
    register(registry, subject, V1)
    assert_error(registry.post(f"{base}/7", {"schema": V2}), 404, 40402, "a check against a missing version")


def test_compatibility_verbose_reports_an_invalid_schema_as_a_message(registry, subject):
    # CompatibilityResource: InvalidSchemaException with verbose -> is_compatible false + the message.
    register(registry, subject, V1)
    path = f"/compatibility/subjects/{path_of(subject)}/versions/latest"
    assert_error(registry.post(path, {"schema": "{\"type\": \"nope\"}"}), 422, 42201,
                 "an invalid schema without verbose")
    body = ok_json(registry.post(path, {"schema": "{\"type\": \"nope\"}"}, params={"verbose": "true"}), "verbose")
    assert body["is_compatible"] is False and len(body["messages"]) == 1, \
        "with verbose=true an invalid schema is reported as incompatible with its reason"


def test_compatibility_ignores_soft_deleted_versions(registry, subject):
    register(registry, subject, V1)
    ok_json(registry.delete(f"/subjects/{path_of(subject)}/versions/1"), "soft-delete v1")
    assert ok_json(registry.post(f"/compatibility/subjects/{path_of(subject)}/versions", {"schema": BREAKS_V1}),
                   "check") == {"is_compatible": True}, "soft-deleted versions take no part in checks"


# ---- subject names -------------------------------------------------------------------------


# "{s}" stands for a unique prefix, so each case is a subject of its own.
NASTY_SUBJECTS = [
    "{s}/with/slash", "{s}/a/b/c", "{s}-trailing/", "/{s}-leading-slash", "{s}//double//slash", "{s} with space",
    " {s} padded ", "{s}-per%cent", "{s}-%2F-literal", "{s}-%", "{s}-ünïcødé-日本語", "{s}-emoji-🎉",
    "{s}-question?mark", "{s}-hash#tag", "{s}-plus+sign", "{s}-semi;colon", "{s}-amp&and=eq",
    "{s}/versions", "{s}/versions/1", "{s}/..", "{s}/./x", "{s}-back\\slash", "{s}-quote\"d",
]


@pytest.mark.parametrize("template", NASTY_SUBJECTS)
def test_any_utf8_subject_name_round_trips(registry, subject, template):
    name = template.replace("{s}", subject)
    encoded = path_of(name)
    schema_id = register(registry, name, V1)
    assert register(registry, name, V1) == schema_id, "re-registering under the exact name dedupes"
    assert name in ok_json(registry.get("/subjects"), "list"), "GET /subjects lists the exact name"
    version = ok_json(registry.get(f"/subjects/{encoded}/versions/1"), "get version")
    assert version["subject"] == name and version["id"] == schema_id, "the version names the exact subject"
    assert versions_of(registry, name) == [1], "versions of the subject"
    raw = registry.get(f"/subjects/{encoded}/versions/latest/schema")
    assert raw.status_code == 200 and json.loads(raw.text) == json.loads(V1), "the raw schema route"
    assert ok_json(registry.post(f"/subjects/{encoded}", {"schema": V1}), "lookup")["subject"] == name, \
        "lookup names the exact subject"
    assert name in ok_json(registry.get(f"/schemas/ids/{schema_id}/subjects"), "subjects of id"), \
        "the id's subjects include the exact name"
    assert ok_json(registry.post(f"/compatibility/subjects/{encoded}/versions/latest", {"schema": V2}),
                   "compat")["is_compatible"] is True, "the compatibility route"
    ok_json(registry.put(f"/config/{encoded}", {"compatibility": "FULL"}), "set subject config")
    assert ok_json(registry.get(f"/config/{encoded}"), "get config") == {"compatibilityLevel": "FULL"}, \
        "subject config under the exact name"
    ok_json(registry.delete(f"/config/{encoded}"), "delete subject config")
    assert ok_json(registry.delete(f"/subjects/{encoded}"), "soft delete") == [1], "delete by the exact name"
    assert ok_json(registry.delete(f"/subjects/{encoded}", params={"permanent": "true"}), "hard delete") == [1], \
        "a permanent delete by the exact name"
    assert name not in ok_json(registry.get("/subjects", params={"deleted": "true"}), "list"), "gone"
