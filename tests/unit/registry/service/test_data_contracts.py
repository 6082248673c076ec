"""Issue 12, item 8: data contracts (metadata and rule sets) stored, returned, merged and
deduplicated as Confluent's AbstractSchemaRegistry does, through the real front end."""
from __future__ import annotations

import json

import pytest

from tests.asgi_client import NodeClient

V1 = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}, separators=(",", ":"))
V2 = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                                                          {"name": "b", "type": "int", "default": 0}]},
                separators=(",", ":"))
META = {"properties": {"owner": "team-a", "application.major.version": "1"}, "tags": {"R.a": ["PII"]},
        "sensitive": ["a"]}
RULES = {"domainRules": [{"name": "positive", "kind": "CONDITION", "mode": "WRITE", "type": "CEL",
                          "expr": "message.a > 0"}]}
RULE_OUT = {"domainRules": [{"name": "positive", "kind": "CONDITION", "mode": "WRITE", "type": "CEL",
                             "expr": "message.a > 0", "disabled": False}]}


@pytest.fixture
def client():
    with NodeClient() as the_client:
        yield the_client


def ok(answer):
    assert answer.status == 200, (answer.status, answer.body)
    return answer.json()


def refused(answer, status: int, code: int) -> dict:
    assert answer.status == status, (answer.status, answer.body)
    assert answer.json()["error_code"] == code, answer.body
    return answer.json()


def test_metadata_and_rules_are_stored_and_returned_on_every_read(client):
    body = ok(client.post("/subjects/s/versions", {"schema": V1, "metadata": META, "ruleSet": RULES}))
    assert body["metadata"] == META and body["ruleSet"] == RULE_OUT, "the register answer carries them"
    for path in ("/subjects/s/versions/1", "/subjects/s/versions/latest", f"/schemas/ids/{body['id']}",
                 f"/schemas/guids/{body['guid']}"):
        read = ok(client.get(path))
        assert (read["metadata"], read["ruleSet"]) == (META, RULE_OUT), path
    assert ok(client.get("/schemas"))[0]["metadata"] == META


def test_contracts_take_part_in_dedupe(client):
    first = ok(client.post("/subjects/s/versions", {"schema": V1}))
    with_meta = ok(client.post("/subjects/s/versions", {"schema": V1, "metadata": META}))
    assert with_meta["version"] == 2 and with_meta["id"] != first["id"], \
        "the same text with other metadata is another schema (Confluent's MD5 covers metadata)"
    again = ok(client.post("/subjects/s/versions", {"schema": V1, "metadata": META}))
    assert again["version"] == 2, "the same text and metadata again is the same version"
    inherited = ok(client.post("/subjects/s/versions", {"schema": V1}))
    assert inherited["version"] == 2, "no metadata given: the latest version's is inherited, so it dedupes"
    other = ok(client.post("/subjects/t/versions", {"schema": V1, "metadata": META}))
    assert other["id"] == with_meta["id"], "the same content under another subject shares the id"


def test_a_new_version_inherits_the_previous_contracts(client):
    ok(client.post("/subjects/s/versions", {"schema": V1, "metadata": META, "ruleSet": RULES}))
    second = ok(client.post("/subjects/s/versions", {"schema": V2}))
    assert (second["metadata"], second["ruleSet"]) == (META, RULE_OUT), "maybePopulateFromPrevious"


def test_rules_alone_make_a_new_version_of_the_latest_schema(client):
    ok(client.post("/subjects/s/versions", {"schema": V1}))
    body = ok(client.post("/subjects/s/versions", {"ruleSet": RULES}))
    assert (body["version"], body["schema"], body["ruleSet"]) == (2, V1, RULE_OUT)


def test_config_defaults_and_overrides_are_merged(client):
    ok(client.put("/config/s", {"defaultMetadata": {"properties": {"owner": "default", "x": "1"}},
                                "overrideMetadata": {"properties": {"owner": "forced"}},
                                "defaultRuleSet": RULES, "compatibilityGroup": "application.major.version"}))
    config = ok(client.get("/config/s"))
    assert config["compatibilityGroup"] == "application.major.version"
    assert config["defaultRuleSet"] == RULE_OUT and config["overrideMetadata"] == {"properties": {"owner": "forced"}}
    body = ok(client.post("/subjects/s/versions", {"schema": V1, "metadata": {"properties": {"owner": "mine"}}}))
    assert body["metadata"] == {"properties": {"owner": "forced", "x": "1"}}, \
        "default, then the request's, then the override (Confluent's mergeMetadata)"
    assert body["ruleSet"] == RULE_OUT, "the default rule set applies"
    # ConfigValue.update: absent fields are kept, a field set to null is cleared.
    ok(client.put("/config/s", {"compatibility": "NONE"}))
    assert ok(client.get("/config/s"))["defaultRuleSet"] == RULE_OUT
    ok(client.put("/config/s", {"defaultRuleSet": None}))
    assert "defaultRuleSet" not in ok(client.get("/config/s"))


def test_the_latest_version_with_given_metadata_is_found(client):
    ok(client.post("/subjects/s/versions", {"schema": V1, "metadata": {"properties": {"app": "1"}}}))
    ok(client.post("/subjects/s/versions", {"schema": V2, "metadata": {"properties": {"app": "2"}}}))
    assert ok(client.get("/subjects/s/metadata?key=app&value=1"))["version"] == 1
    assert ok(client.get("/subjects/s/metadata?key=app&value=2"))["version"] == 2
    assert ok(client.get("/subjects/s/metadata"))["version"] == 2, "no pairs: the latest with metadata"
    refused(client.get("/subjects/s/metadata?key=app&value=3"), 404, 40403)
    refused(client.get("/subjects/none/metadata?key=app&value=1"), 404, 40401)


def test_confluent_version_follows_the_version(client):
    body = ok(client.post("/subjects/s/versions", {"schema": V1, "metadata": {"properties": {"confluent:version": "9"}}}))
    assert body["metadata"]["properties"]["confluent:version"] == "1", "Metadata.setConfluentVersion"
    second = ok(client.post("/subjects/s/versions", {"schema": V2}))
    assert second["metadata"]["properties"]["confluent:version"] == "2"


@pytest.mark.parametrize("rules,code", [
    ({"domainRules": [{"name": "a", "type": "CEL", "mode": "UPGRADE"}]}, 42210),
    ({"migrationRules": [{"name": "a", "type": "JSONATA", "mode": "WRITE"}]}, 42210),
    ({"domainRules": [{"name": "a", "type": "CEL", "mode": "WRITE"}, {"name": "a", "type": "CEL", "mode": "READ"}]},
     42210),
    ({"domainRules": [{"name": "a", "mode": "WRITE"}]}, 42210),
    ({"domainRules": [{"type": "CEL", "mode": "WRITE"}]}, 42210),
    ({"domainRules": [{"name": "a", "type": "CEL", "mode": "WRITE", "kind": "EXPLODE"}]}, 42210),
    ({"domainRules": "nope"}, 42210),
    ({"domainRules": [{"name": "r%d" % i, "type": "CEL", "mode": "WRITE"} for i in range(5000)]}, 42210),
])
def test_invalid_rule_sets_are_42210_and_write_nothing(client, rules, code):
    before = client.node.log.end_offset()
    refused(client.post("/subjects/s/versions", {"schema": V1, "ruleSet": rules}), 422, code)
    refused(client.put("/config/s", {"defaultRuleSet": rules}), 422, code)
    assert client.node.log.end_offset() == before


@pytest.mark.parametrize("metadata", [
    {"properties": {"k": 1}}, {"tags": {"x": "PII"}}, {"sensitive": [1]}, "x",
    {"tags": {"x": ["t%d" % i for i in range(5000)]}},
    {"properties": {"k": "v" * 100_000}},
])
def test_malformed_metadata_is_422_and_writes_nothing(client, metadata):
    before = client.node.log.end_offset()
    refused(client.post("/subjects/s/versions", {"schema": V1, "metadata": metadata}), 422, 422)
    assert client.node.log.end_offset() == before


def test_deeply_nested_metadata_is_refused_cheaply(client):
    nested: object = "x"
    for _ in range(100):
        nested = {"k": nested}
    before = client.node.log.end_offset()
    refused(client.post("/subjects/s/versions", {"schema": V1, "metadata": {"properties": nested}}), 422, 422)
    assert client.node.log.end_offset() == before


def test_a_compatibility_group_checks_only_versions_of_the_same_group(client):
    ok(client.put("/config/s", {"compatibilityGroup": "major"}))
    ok(client.post("/subjects/s/versions", {"schema": V1, "metadata": {"properties": {"major": "1"}}}))
    breaking = json.dumps({"type": "record", "name": "R", "fields": [{"name": "z", "type": "string"}]},
                          separators=(",", ":"))
    refused(client.post("/subjects/s/versions", {"schema": breaking, "metadata": {"properties": {"major": "1"}}}),
            409, 409)
    body = ok(client.post("/subjects/s/versions", {"schema": breaking, "metadata": {"properties": {"major": "2"}}}))
    assert body["version"] == 2, "a new major version starts a new group: nothing to be compatible with"
    # Back in group 1: checked against version 1 only, not the latest version (group 2),
    # which V2 cannot read.
    back = ok(client.post("/subjects/s/versions", {"schema": V2, "metadata": {"properties": {"major": "1"}}}))
    assert back["version"] == 3
