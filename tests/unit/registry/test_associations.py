"""Issue 12, item 11: Confluent 8's associations, through the real front end."""
from __future__ import annotations

import json

import pytest

from store.records import AssociationKey, AssociationValue, decode_key, decode_value
from tests.asgi_client import NodeClient

A = json.dumps({"type": "record", "name": "A", "fields": [{"name": "a", "type": "int"}]}, separators=(",", ":"))


@pytest.fixture
def client():
    with NodeClient() as the_client:
        yield the_client


def ok(answer):
    assert answer.status in (200, 204), (answer.status, answer.body)
    return answer.json() if answer.body else None


def refused(answer, status: int, code: int) -> dict:
    assert answer.status == status, (answer.status, answer.body)
    assert answer.json()["error_code"] == code, answer.body
    return answer.json()


def strong(name: str = "orders", namespace: str = "lkc-1", resource_id: str = "t-1") -> dict:
    return {"resourceName": name, "resourceNamespace": namespace, "resourceId": resource_id,
            "associations": [{"associationType": "value", "schema": {"schema": A}}]}


def test_a_strong_association_registers_its_schema_under_the_default_subject(client):
    body = ok(client.post("/associations", strong()))
    assert body["resourceId"] == "t-1" and body["resourceType"] == "topic"
    [info] = body["associations"]
    assert (info["subject"], info["lifecycle"], info["frozen"]) == (":.lkc-1:orders-value", "STRONG", True)
    assert (info["schema"]["version"], info["schema"]["schema"]) == (1, A)
    assert ok(client.get("/subjects/:.lkc-1:orders-value/versions")) == [1], "the schema went in its context"
    [found] = ok(client.get("/associations/resources/lkc-1/orders?associationType=value"))
    assert found["subject"] == ":.lkc-1:orders-value" and found["resourceId"] == "t-1"
    assert found["createTs"] == found["updateTs"] > 0 and found["lifecycle"] == "STRONG"
    assert ok(client.get("/associations/resources/-/orders")) == [found], "a namespace wildcard"
    assert ok(client.get("/associations/resources/t-1")) == [found]
    assert ok(client.get("/associations/subjects/:.lkc-1:orders-value")) == [found]
    assert ok(client.get("/associations/resources/lkc-1/orders?associationType=key")) == []


def test_the_record_is_confluents_assoc_key_with_the_guid_and_time_in_the_value(client):
    ok(client.post("/associations", strong()))
    batch = client.node.log.read(0, 1000, 0)
    found = [(decode_key(r.key), decode_value(decode_key(r.key), r.value)) for r in batch.records
             if decode_key(r.key).__class__ is AssociationKey]
    [(key, value)] = found
    assert key == AssociationKey("orders", "lkc-1", "topic", "value", ":.lkc-1:orders-value")
    assert isinstance(value, AssociationValue) and value.create_ts and len(value.guid) == 36


def test_creating_the_same_association_again_is_idempotent(client):
    first = ok(client.post("/associations", strong()))
    again = ok(client.post("/associations", strong()))
    assert again["associations"][0]["subject"] == first["associations"][0]["subject"]
    assert len(ok(client.get("/associations/resources/t-1"))) == 1


def test_a_weak_association_names_an_existing_subject(client):
    refused(client.post("/associations", {"resourceName": "o", "resourceNamespace": "n", "resourceId": "r",
                                          "associations": [{"subject": "shared", "lifecycle": "WEAK"}]}),
            409, 40907)
    ok(client.post("/subjects/shared/versions", {"schema": A}))
    body = ok(client.post("/associations", {"resourceName": "o", "resourceNamespace": "n", "resourceId": "r",
                                            "associations": [{"subject": "shared"}]}))
    assert body["associations"][0]["lifecycle"] == "WEAK" and body["associations"][0]["frozen"] is False


def test_a_strong_subject_cannot_be_claimed_twice(client):
    # Confluent's OpenAPI file documents 40911/40912 for conflicts; its code (Errors.java)
    # answers 40903/40904/40905. We follow the code.
    ok(client.post("/associations", strong()))
    refused(client.post("/associations", {"resourceName": "x", "resourceNamespace": "n", "resourceId": "r2",
                                          "associations": [{"subject": ":.lkc-1:orders-value",
                                                            "lifecycle": "WEAK"}]}), 409, 40905)


def test_delete_forgets_the_resource_associations(client):
    ok(client.post("/associations", strong()))
    gone = client.delete("/associations/resources/t-1")
    assert gone.status == 204
    assert ok(client.get("/associations/resources/t-1")) == []
    refused(client.delete("/associations/resources/t-1"), 404, 40410)


@pytest.mark.parametrize("body", [
    {},
    {"resourceName": "o", "resourceNamespace": "n", "resourceId": "r"},
    {"resourceName": "o", "resourceNamespace": "n", "resourceId": "r", "associations": "x"},
    {"resourceName": "o", "resourceNamespace": "n", "associations": [{"schema": {"schema": A}}]},
    {"resourceName": "o:x", "resourceNamespace": "n", "resourceId": "r", "associations": [{"schema": {"schema": A}}]},
    {"resourceName": "o", "resourceNamespace": "n\u0001", "resourceId": "r", "associations": [{"schema": {"schema": A}}]},
    {"resourceName": "o" * 1000, "resourceNamespace": "n", "resourceId": "r", "associations": [{"schema": {"schema": A}}]},
    {"resourceName": "o", "resourceNamespace": "n", "resourceId": "r", "resourceType": "queue",
     "associations": [{"schema": {"schema": A}}]},
    {"resourceName": "o", "resourceNamespace": "n", "resourceId": "r",
     "associations": [{"associationType": "header", "schema": {"schema": A}}]},
    {"resourceName": "o", "resourceNamespace": "n", "resourceId": "r",
     "associations": [{"schema": {"schema": A}}, {"schema": {"schema": A}}]},
    {"resourceName": "o", "resourceNamespace": "n", "resourceId": "r",
     "associations": [{"lifecycle": "WEAK", "schema": {"schema": A}}]},
    {"resourceName": "o", "resourceNamespace": "n", "resourceId": "r", "associations": [{"lifecycle": "STRONG"}]},
    {"resourceName": "o", "resourceNamespace": "n", "resourceId": "r",
     "associations": [{"subject": "other", "schema": {"schema": A}}]},
    {"resourceName": "o", "resourceNamespace": "n", "resourceId": "r",
     "associations": [{"schema": {"schema": A}} for _ in range(10_000)]},
    {"resourceName": "o", "resourceNamespace": "n", "resourceId": "r",
     "associations": [{"frozen": "yes", "schema": {"schema": A}}]},
])
def test_bad_association_requests_are_42212_and_write_nothing(client, body):
    before = client.node.log.end_offset()
    refused(client.post("/associations", body), 422, 42212)
    assert client.node.log.end_offset() == before


def test_operations_not_served_say_so(client):
    refused(client.put("/associations/resources/r", strong()), 422, 42205)
    refused(client.post("/associations:batchGet", {}), 422, 42205)
    refused(client.post("/associations:batch", {}), 422, 42205)
    refused(client.delete("/associations/resources/r?cascadeLifecycle=true"), 422, 42205)
