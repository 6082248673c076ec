"""Issue 12, item 12: `POST /subjects/{s}/versions/{v}/tags`, which Confluent's open-source
server serves without its catalog: a new version whose schema text embeds the tags
(`confluent:tags`), as AvroSchema.copy(tagsToAdd, tagsToRemove) writes them."""
from __future__ import annotations

import json

import pytest

from tests.asgi_client import NodeClient

USER = json.dumps({"type": "record", "name": "User", "namespace": "com.example", "fields": [
    {"name": "name", "type": "string"},
    {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
        {"name": "street", "type": "string"}]}}]}, separators=(",", ":"))


@pytest.fixture
def client():
    with NodeClient() as the_client:
        the_client.post("/subjects/users/versions", {"schema": USER})
        yield the_client


def ok(answer):
    assert answer.status == 200, (answer.status, answer.body)
    return answer.json()


def refused(answer, status: int, code: int) -> dict:
    assert answer.status == status, (answer.status, answer.body)
    assert answer.json()["error_code"] == code, answer.body
    return answer.json()


def field(schema: dict, *names: str) -> dict:
    node = schema
    for name in names:
        node = next(f for f in node["fields"] if f["name"] == name)
        node = node if name == names[-1] else node["type"]
    return node


def test_tags_are_embedded_in_a_new_version(client):
    body = ok(client.post("/subjects/users/versions/1/tags", {
        "tagsToAdd": [{"entity": {"entityPath": "com.example.User.name", "entityType": "sr_field"}, "tags": ["PII"]},
                      {"entity": {"entityPath": "com.example.User", "entityType": "sr_record"}, "tags": ["GDPR"]},
                      {"entity": {"entityPath": "com.example.Address.street", "entityType": "sr_field"},
                       "tags": ["PII", "LOCATION"]}]}))
    assert body["version"] == 2 and body["metadata"]["properties"]["confluent:version"] == "2"
    schema = json.loads(body["schema"])
    assert schema["confluent:tags"] == ["GDPR"]
    assert field(schema, "name")["confluent:tags"] == ["PII"]
    assert field(schema, "address", "street")["confluent:tags"] == ["PII", "LOCATION"]
    assert ok(client.get("/subjects/users/versions/2"))["schema"] == body["schema"]

    removed = ok(client.post("/subjects/users/versions/2/tags", {
        "newVersion": 3,
        "tagsToRemove": [{"entity": {"entityPath": "com.example.User.name", "entityType": "sr_field"},
                          "tags": ["PII"]}]}))
    assert removed["version"] == 3
    assert "confluent:tags" not in field(json.loads(removed["schema"]), "name"), "the last tag removed drops it"


def test_rules_are_merged_and_removed_from_the_previous_version(client):
    rule = {"name": "r1", "kind": "CONDITION", "mode": "WRITE", "type": "CEL", "expr": "true"}
    tag = [{"entity": {"entityPath": "com.example.User.name", "entityType": "sr_field"}, "tags": ["PII"]}]
    body = ok(client.post("/subjects/users/versions/1/tags", {"tagsToAdd": tag, "newVersion": 2,
                                                               "rulesToMerge": {"domainRules": [rule]}}))
    assert [r["name"] for r in body["ruleSet"]["domainRules"]] == ["r1"]
    later = ok(client.post("/subjects/users/versions/2/tags", {"tagsToRemove": tag, "newVersion": 3,
                                                                "rulesToRemove": ["r1"]}))
    assert later["ruleSet"] == {}


@pytest.mark.parametrize("body,status,code", [
    ({"tagsToAdd": [{"entity": {"entityPath": "com.example.Nope.x", "entityType": "sr_field"}, "tags": ["T"]}]},
     422, 42201),
    ({"tagsToAdd": [{"entity": {"entityPath": "x", "entityType": "sr_table"}, "tags": ["T"]}]}, 422, 422),
    ({"tagsToAdd": "x"}, 422, 422),
    ({"tagsToAdd": [{"entity": {"entityPath": "com.example.User.name", "entityType": "sr_field"},
                     "tags": ["T%d" % i for i in range(5000)]}]}, 422, 422),
    ({"tagsToAdd": [{"entity": {"entityPath": "com.example.User.name", "entityType": "sr_field"}, "tags": ["T"]}],
      "newVersion": 7}, 422, 42201),
    ({"ruleSet": {"domainRules": []}, "rulesToRemove": ["x"]}, 422, 42210),
])
def test_bad_tag_requests_write_nothing(client, body, status, code):
    before = client.node.log.end_offset()
    refused(client.post("/subjects/users/versions/1/tags", body), status, code)
    assert client.node.log.end_offset() == before


def test_tags_of_a_missing_version_or_subject(client):
    refused(client.post("/subjects/users/versions/9/tags", {}), 404, 40402)
    refused(client.post("/subjects/nobody/versions/1/tags", {}), 404, 40401)
