"""`POST /import/schemas` (ours): many IMPORT registrations in one request and one append,
against a real registry process. Each entry succeeds or fails alone, as its own
`POST /subjects/{s}/versions` would in IMPORT mode; the results keep the entries' order."""
from __future__ import annotations

import json

import requests

from tests.api.support import CONTENT_TYPE


def avro(name: str) -> str:
    return json.dumps({"type": "record", "name": name, "fields": [{"name": "id", "type": "long"}]})


def test_a_batch_lands_with_its_ids_and_versions_and_each_entry_answers_alone(fresh_registry):
    server = fresh_registry
    assert server.put("/mode", {"mode": "IMPORT"}).status_code == 200
    entries = [
        {"subject": "orders-value", "version": 3, "id": 40, "schema": avro("Order")},
        {"subject": "users-value", "version": 1, "id": 41, "schema": avro("User")},
        {"subject": "other-value", "version": 1, "id": 40, "schema": avro("Other")},  # id 40 is Order's
        {"subject": "refs-value", "version": 1, "id": 42, "schema": avro("Refs"),
         "references": [{"name": "Missing", "subject": "nowhere", "version": 1}]},
        {"subject": "noid-value", "version": 1, "schema": avro("NoId")},
        {"subject": "bad-value", "version": 1, "id": 43, "schema": "{not json"},
        {"subject": "users-value", "version": 2, "id": 44, "schema": avro("User2")},
        "not an object",
        {"subject": "", "version": 1, "id": 45, "schema": avro("Empty")},  # no path can name it
    ]
    answer = server.post("/import/schemas", {"schemas": entries})
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert len(results) == len(entries), "one result per entry, in order"
    assert results[0] == {"subject": "orders-value", "version": 3, "id": 40}
    assert results[1] == {"subject": "users-value", "version": 1, "id": 41}
    assert results[2]["error_code"] == 42205, "an id pending in the same batch never names a second content"
    assert results[3]["error_code"] in (40401, 40402, 42201), results[3]
    assert results[4]["error_code"] == 422 and results[5]["error_code"] == 42201
    assert results[6] == {"subject": "users-value", "version": 2, "id": 44}
    assert results[7]["error_code"] == 422 and results[8]["error_code"] == 422
    # What landed is what single registrations would have left.
    assert server.get("/subjects/orders-value/versions").json() == [3]
    assert server.get("/subjects/users-value/versions").json() == [1, 2]
    assert json.loads(server.get("/schemas/ids/40").json()["schema"])["name"] == "Order"
    assert server.get("/subjects/other-value/versions").status_code == 404, "a refused entry writes nothing"
    # Again: what is there already is answered, not written twice (a resumed import).
    again = server.post("/import/schemas", {"schemas": entries[:2]}).json()["results"]
    assert again == results[:2]
    assert server.get("/subjects/orders-value/versions").json() == [3]


def test_outside_import_mode_entries_are_refused_and_nothing_is_written(fresh_registry):
    server = fresh_registry
    answer = server.post("/import/schemas", {"schemas": [
        {"subject": "s-value", "version": 1, "id": 7, "schema": avro("S")}]})
    assert answer.status_code == 200
    assert answer.json()["results"][0]["error_code"] == 42205
    assert server.get("/subjects").json() == []


def test_malformed_batches_get_confluent_error_bodies(fresh_registry):
    server = fresh_registry
    headers = {"Content-Type": CONTENT_TYPE}
    for body, status in ((b"{", 400), (b"[]", 422), (b'{"schemas": 3}', 422), (b'{"schemas": {}}', 422),
                         (json.dumps({"schemas": [{}] * 10_001}).encode(), 422)):
        answer = requests.post(f"{server.url}/import/schemas", data=body, headers=headers, timeout=30)
        assert answer.status_code == status, (body[:40], answer.text)
        assert set(answer.json()) == {"error_code", "message"}, answer.text
    assert server.get("/subjects").json() == []


def test_settings_land_in_one_request_in_order_and_each_entry_answers_alone(fresh_registry):
    server = fresh_registry
    assert server.post("/subjects/has-value/versions", {"schema": avro("Has")}).status_code == 200
    answer = server.post("/import/settings", {"settings": [
        {"subject": "orders-value", "config": {"compatibility": "FULL", "normalize": True}},
        {"subject": "orders-value", "config": {"compatibility": "NONE"}},  # merges into the one before
        {"subject": None, "config": {"compatibilityLevel": "FORWARD"}},
        {"subject": "orders-value", "mode": "READONLY"},
        {"subject": "bad-value", "config": {"compatibility": "SIDEWAYS"}},
        {"subject": "bad-value", "mode": "SIDEWAYS"},
        {"subject": "has-value", "mode": "IMPORT"},  # as PUT without force: it has schemas
        {"subject": "both-value", "config": {}, "mode": "READONLY"},
        {"subject": 7, "mode": "READONLY"},
        "not an object",
        {"subject": ":.:", "mode": "READWRITE"},  # the default context's own: the global mode
    ]})
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert len(results) == 11, "one result per entry, in order"
    assert results[0]["config"]["compatibility"] == "FULL"
    assert results[1] == {"subject": "orders-value", "config": {"compatibility": "NONE", "normalize": True}}, \
        "a later config merges into an earlier one of the same request"
    assert results[2]["subject"] is None and results[2]["config"]["compatibility"] == "FORWARD"
    assert results[3] == {"subject": "orders-value", "mode": "READONLY"}
    assert [results[i]["error_code"] for i in range(4, 10)] == [42203, 42204, 42205, 422, 422, 422]
    assert results[10] == {"subject": None, "mode": "READWRITE"}, "the answer names what was set: the global mode"
    # What landed is what single PUTs would have left.
    assert server.get("/config/orders-value").json() == {"compatibilityLevel": "NONE", "normalize": True}
    assert server.get("/config").json()["compatibilityLevel"] == "FORWARD"
    assert server.get("/mode/orders-value").json() == {"mode": "READONLY"}
    assert server.get("/mode/has-value").status_code == 404, "a refused entry writes nothing"
    assert server.get("/config/bad-value").status_code == 404


def test_malformed_settings_batches_get_confluent_error_bodies(fresh_registry):
    server = fresh_registry
    headers = {"Content-Type": CONTENT_TYPE}
    for body, status in ((b"{", 400), (b"[]", 422), (b'{"settings": 3}', 422), (b'{"schemas": []}', 422),
                         (json.dumps({"settings": [{}] * 10_001}).encode(), 422)):
        answer = requests.post(f"{server.url}/import/settings", data=body, headers=headers, timeout=30)
        assert answer.status_code == status, (body[:40], answer.text)
        assert set(answer.json()) == {"error_code", "message"}, answer.text
    assert server.get("/config").json()["compatibilityLevel"] == "BACKWARD", "nothing written"
