"""Issue 12, items 1-7 and 10: where our answers differed from Confluent's, through the real
front end on the in-memory log. Each case names the Confluent code it follows.
"""
from __future__ import annotations

import hashlib
import json
import uuid

import pytest

from store.memory_log import MemoryLog
from store.records import SchemaKey, SchemaValue, encode_key, encode_value
from tests.asgi_client import NodeClient



def compact(schema: dict) -> str:
    """Schema text as the registry stores it (Avro's canonical form keeps this order)."""
    return json.dumps(schema, separators=(",", ":"))


V1 = compact({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
V2 = compact({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                                                       {"name": "b", "type": "int", "default": 0}]})


@pytest.fixture
def client():
    with NodeClient() as the_client:
        yield the_client


def guid(text: str) -> str:
    return str(uuid.UUID(bytes=hashlib.md5(text.encode()).digest()))


def ok(answer) -> object:
    assert answer.status == 200, (answer.status, answer.body)
    return answer.json()


def refused(answer, status: int, code: int) -> dict:
    assert answer.status == status, (answer.status, answer.body)
    body = answer.json()
    assert body["error_code"] == code, body
    return body


def end(client: NodeClient) -> int:
    return client.node.log.end_offset()


# ---- 1. ?subject= selects the context, it does not filter ----------------------------------


def test_an_id_asked_for_under_another_subject_is_the_schema(client):
    schema_id = ok(client.post("/subjects/orders-value/versions", {"schema": V1}))["id"]
    # A deserializer of a mirrored topic asks with its own topic's subject.
    found = ok(client.get(f"/schemas/ids/{schema_id}?subject=mirror.orders-value"))
    assert found["schema"] == V1, "the subject does not hold the id: Confluent answers the schema anyway"
    held = ok(client.get(f"/schemas/ids/{schema_id}?subject=orders-value"))
    assert (held["subject"], held["version"]) == ("orders-value", 1), "the holding subject answers for it"


def test_an_id_whose_subject_was_hard_deleted_but_still_used_elsewhere_is_found(client):
    schema_id = ok(client.post("/subjects/a/versions", {"schema": V1}))["id"]
    ok(client.post("/subjects/b/versions", {"schema": V1}))
    ok(client.delete("/subjects/a"))
    ok(client.delete("/subjects/a?permanent=true"))
    assert ok(client.get(f"/schemas/ids/{schema_id}?subject=a"))["schema"] == V1


# ---- 2. the register response ---------------------------------------------------------------


def test_register_answers_as_register_schema_response(client):
    body = ok(client.post("/subjects/s/versions", {"schema": V1}))
    assert body == {"id": 1, "version": 1, "guid": guid(V1), "schema": V1}, \
        "Confluent's RegisterSchemaResponse: id, version, guid, schema (no schemaType for Avro)"
    again = ok(client.post("/subjects/s/versions", {"schema": V1}))
    assert again == body, "re-registering answers the existing version the same way"


# ---- 3. content negotiation -----------------------------------------------------------------


@pytest.mark.parametrize("accept,expected", [
    (None, "application/vnd.schemaregistry.v1+json"),
    ("*/*", "application/vnd.schemaregistry.v1+json"),
    ("application/json", "application/json"),
    ("application/vnd.schemaregistry+json", "application/vnd.schemaregistry+json"),
    ("application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json; qs=0.9, "
     "application/json; qs=0.5", "application/vnd.schemaregistry.v1+json"),
    ("text/html, application/json;q=0.2", "application/json"),
])
def test_accept_chooses_the_answer_type(client, accept, expected):
    ok(client.post("/subjects/s/versions", {"schema": V1}))
    headers = {"Accept": accept} if accept else {}
    for path in ("/subjects", "/schemas/ids/1", "/subjects/s/versions/1/schema"):
        answer = client.get(path, headers=headers)
        assert answer.status == 200 and answer.content_type == expected, (path, answer.content_type)


@pytest.mark.parametrize("accept", ["text/html", "application/xml", "application/json;q=0"])
def test_an_accept_header_nothing_served_satisfies_is_406(client, accept):
    ok(client.post("/subjects/s/versions", {"schema": V1}))
    for path in ("/subjects", "/schemas/ids/1"):
        body = refused(client.get(path, headers={"Accept": accept}), 406, 406)
        assert body["message"] == "HTTP 406 Not Acceptable"
    before = end(client)
    refused(client.post("/subjects/s/versions", {"schema": V2}, headers={"Accept": accept}), 406, 406)
    assert end(client) == before, "a refused request writes nothing"


# ---- 4. trailing slash ----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/subjects/", "/subjects/s/versions/", "/subjects/s/versions/1/",
                                  "/schemas/ids/1/", "/config/", "/mode/", "/schemas/types/", "/contexts/"])
def test_a_trailing_slash_answers_as_without_it(client, path):
    ok(client.post("/subjects/s/versions", {"schema": V1}))
    assert ok(client.get(path)) == ok(client.get(path[:-1]))


def test_a_trailing_slash_on_a_write_is_the_same_write(client):
    assert ok(client.post("/subjects/s/versions/", {"schema": V1}))["id"] == 1
    assert ok(client.get("/subjects/s/versions")) == [1]


# ---- 5. error codes and wording -------------------------------------------------------------


def test_compatibility_with_a_missing_version_of_a_missing_subject_is_40402(client):
    # CompatibilityResource: versionNotFoundException whenever the version is not there.
    body = refused(client.post("/compatibility/subjects/nothing/versions/3", {"schema": V1}), 404, 40402)
    assert body["message"] == "Version 3 not found."
    assert ok(client.post("/compatibility/subjects/nothing/versions/latest", {"schema": V1})) == \
        {"is_compatible": True}, "latest of nothing is compatible"


def test_malformed_ids_are_plain_404_and_unknown_ones_name_the_id(client):
    assert refused(client.get("/schemas/ids/abc"), 404, 404)["message"] == "HTTP 404 Not Found"
    assert refused(client.get("/schemas/ids/7"), 404, 40403)["message"] == "Schema 7 not found"
    assert refused(client.get("/schemas/ids/7/versions"), 404, 40403)["message"] == "Schema 7 not found"


def test_soft_delete_messages_use_confluents_wording(client):
    ok(client.post("/subjects/s/versions", {"schema": V1}))
    ok(client.delete("/subjects/s/versions/1"))
    body = refused(client.delete("/subjects/s/versions/1"), 404, 40406)
    assert body["message"] == "Subject 's' Version 1 was soft deleted.Set permanent=true to delete permanently"
    ok(client.post("/subjects/t/versions", {"schema": V1}))
    ok(client.delete("/subjects/t"))
    body = refused(client.delete("/subjects/t"), 404, 40404)
    assert body["message"] == "Subject 't' was soft deleted.Set permanent=true to delete permanently"


# ---- 6. stored schemas are read as stored ---------------------------------------------------

DASHED = compact({"type": "record", "name": "Event", "namespace": "com.acme-corp.events",
                     "fields": [{"name": "id", "type": "long"}]})
DASHED_V2 = compact({"type": "record", "name": "Event", "namespace": "com.acme-corp.events",
                        "fields": [{"name": "id", "type": "long"},
                                   {"name": "at", "type": "long", "default": 0}]})


def adopted_log() -> MemoryLog:
    """A `_schemas` topic a Confluent 7.x registry wrote, holding a schema our strict
    parser refuses as new (a '-' in the namespace)."""
    log = MemoryLog()
    value = SchemaValue("events-value", 1, 1, DASHED)
    log.append(encode_key(SchemaKey("events-value", 1)), encode_value(value), expected_offset=0)
    return log


def test_a_new_schema_with_an_invalid_name_is_still_refused(client):
    refused(client.post("/subjects/x/versions", {"schema": DASHED}), 422, 42201)


def test_an_adopted_schema_that_strict_parsing_refuses_is_usable():
    with NodeClient(adopted_log()) as client:
        assert ok(client.get("/schemas/ids/1"))["schema"] == DASHED, "read"
        assert ok(client.post("/subjects/events-value", {"schema": DASHED}))["version"] == 1, "lookup"
        assert ok(client.post("/subjects/events-value/versions", {"schema": DASHED}))["id"] == 1, \
            "re-registration finds the stored version"
        assert ok(client.post("/compatibility/subjects/events-value/versions/latest",
                              {"schema": DASHED_V2}))["is_compatible"] is True, "a check against it"
        # A new version is checked against the stored one; its own names are new, and
        # the same names as stored are what the registry already holds.
        assert ok(client.post("/subjects/events-value/versions", {"schema": DASHED_V2}))["version"] == 2


def test_an_import_with_an_explicit_id_is_read_as_stored(client):
    ok(client.put("/mode", {"mode": "IMPORT"}))
    assert ok(client.post("/subjects/e/versions", {"schema": DASHED, "id": 42, "version": 1}))["id"] == 42
    ok(client.put("/mode", {"mode": "READWRITE"}))
    assert ok(client.post("/subjects/e", {"schema": DASHED}))["id"] == 42


# ---- 7. IMPORT, deletedOnly, PUT /config {} -------------------------------------------------


def test_import_overwrites_an_existing_version(client):
    ok(client.put("/mode", {"mode": "IMPORT"}))
    ok(client.post("/subjects/s/versions", {"schema": V1, "id": 10, "version": 1}))
    # Confluent's register in IMPORT puts the key whatever it held (this was 42205 here).
    ok(client.post("/subjects/s/versions", {"schema": V2, "id": 11, "version": 1}))
    got = ok(client.get("/subjects/s/versions/1"))
    assert (got["id"], got["schema"]) == (11, V2), "the imported version replaced the old one"
    assert refused(client.get("/schemas/ids/10"), 404, 40403), "the overwritten id is used nowhere now"


def test_deleted_only_lists_only_soft_deleted_versions(client):
    for schema in (V1, V2):
        ok(client.post("/subjects/s/versions", {"schema": schema}))
    ok(client.delete("/subjects/s/versions/1"))
    assert ok(client.get("/subjects/s/versions")) == [2]
    assert ok(client.get("/subjects/s/versions?deleted=true")) == [1, 2]
    assert ok(client.get("/subjects/s/versions?deletedOnly=true")) == [1]
    assert ok(client.get("/subjects/s/versions?deleted=true&deletedOnly=true")) == [1], "deletedOnly wins"


def test_put_config_with_an_empty_body_changes_nothing_and_answers_the_config(client):
    assert ok(client.put("/config", {})) == {}, "nothing stored: Confluent answers an empty config"
    ok(client.put("/config", {"compatibility": "FULL"}))
    assert ok(client.put("/config", {})) == {"compatibility": "FULL"}, "absent fields keep their value"
    assert ok(client.get("/config")) == {"compatibilityLevel": "FULL"}


# ---- 10. guids and server metadata ----------------------------------------------------------


def test_a_schema_is_found_by_its_guid(client):
    schema_id = ok(client.post("/subjects/s/versions", {"schema": V1}))["id"]
    found = ok(client.get(f"/schemas/guids/{guid(V1)}"))
    assert (found["schema"], found["guid"]) == (V1, guid(V1))
    assert ok(client.get(f"/schemas/guids/{guid(V1)}/ids")) == [{"context": ".", "id": schema_id}]
    hex_form = guid(V1).replace("-", "")
    assert ok(client.get(f"/schemas/guids/{hex_form}"))["schema"] == V1, "Confluent also takes 32 hex digits"


@pytest.mark.parametrize("bad", ["nope", "0" * 5000, "%00", "00000000-0000-0000-0000-000000000000"])
def test_an_unknown_or_malformed_guid_is_40403(client, bad):
    refused(client.get(f"/schemas/guids/{bad}"), 404, 40403)
    refused(client.get(f"/schemas/guids/{bad}/ids"), 404, 40403)


def test_server_metadata(client):
    assert set(ok(client.get("/v1/metadata/version"))) >= {"version", "commitId"}
    assert ok(client.get("/v1/metadata/deployment")) == {"attributes": []}, \
        "Confluent's SchemaRegistryDeployment with no attributes configured"
