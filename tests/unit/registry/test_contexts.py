"""Issue 12, item 9: Confluent's contexts. Qualified subjects `:.ctx:name`, ids numbered
per context, `GET /contexts`, `DELETE /contexts/{c}`, and the id watermark per context."""
from __future__ import annotations

import json

import pytest

from store.cache import Cache
from store.memory_log import MemoryLog
from store.records import ContextKey, FenceValue, NoopKey, decode_key, decode_value
from tests.asgi_client import NodeClient

A = json.dumps({"type": "record", "name": "A", "fields": [{"name": "a", "type": "int"}]}, separators=(",", ":"))
B = json.dumps({"type": "record", "name": "B", "fields": [{"name": "b", "type": "int"}]}, separators=(",", ":"))


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


def records(client: NodeClient) -> list:
    log = client.node.log
    batch = log.read(0, 10_000, 0)
    return [(decode_key(r.key), decode_value(decode_key(r.key), r.value)) for r in batch.records]


def test_ids_are_numbered_per_context(client):
    assert ok(client.post("/subjects/s/versions", {"schema": A}))["id"] == 1
    assert ok(client.post("/subjects/t/versions", {"schema": B}))["id"] == 2
    assert ok(client.post("/subjects/:.prod:s/versions", {"schema": B}))["id"] == 1, \
        "the first schema of a context gets id 1 there (IncrementalIdGenerator per context)"
    assert ok(client.get("/schemas/ids/1"))["schema"] == A, "without a subject: the default context"
    assert ok(client.get("/schemas/ids/1?subject=:.prod:s"))["schema"] == B, "a qualified subject: its context"
    assert ok(client.get("/schemas/ids/1?subject=:.prod:"))["schema"] == B, "the context alone selects it"
    assert ok(client.get("/subjects/:.prod:s/versions/1"))["id"] == 1
    assert ok(client.get("/subjects")) == [":.prod:s", "s", "t"], "subjects of every context are listed"
    assert ok(client.get("/subjects?subjectPrefix=:.prod:")) == [":.prod:s"]
    assert ok(client.get("/subjects?subjectPrefix=:*:s")) == [":.prod:s", "s"]


def test_a_plain_subject_falls_through_to_the_same_name_in_another_context(client):
    ok(client.post("/subjects/:.prod:other/versions", {"schema": A}))
    ok(client.post("/subjects/:.prod:orders/versions", {"schema": B}))
    found = ok(client.get("/schemas/ids/2?subject=orders"))
    assert (found["schema"], found["subject"]) == (B, ":.prod:orders"), "getSchemaKeyUsingContexts"
    refused(client.get("/schemas/ids/2?subject=:.prod:other"), 404, 40403)


def test_the_default_context_qualified_is_the_plain_subject(client):
    ok(client.post("/subjects/:.:s/versions", {"schema": A}))
    assert ok(client.get("/subjects")) == ["s"]


def test_a_context_is_recorded_and_listed(client):
    assert ok(client.get("/contexts")) == ["."]
    ok(client.post("/subjects/:.prod:s/versions", {"schema": A}))
    ok(client.post("/subjects/:.prod:t/versions", {"schema": B}))
    assert ok(client.get("/contexts")) == [".", ".prod"]
    contexts = [k for k, _ in records(client) if isinstance(k, ContextKey)]
    assert contexts == [ContextKey(".prod")], "one CONTEXT record, as Confluent writes when a context starts"


def test_a_context_is_deleted_only_when_empty(client):
    ok(client.post("/subjects/:.prod:s/versions", {"schema": A}))
    body = refused(client.delete("/contexts/.prod"), 422, 42211)
    assert body["message"] == "The specified context ':.prod:' is not empty."
    ok(client.delete("/subjects/:.prod:s"))
    refused(client.delete("/contexts/.prod"), 422, 42211)  # soft-deleted subjects still live there
    ok(client.delete("/subjects/:.prod:s?permanent=true"))
    gone = client.delete("/contexts/.prod")
    assert gone.status == 204 and gone.body == b"", "Confluent answers 204 No Content"
    assert ok(client.get("/contexts")) == ["."]


@pytest.mark.parametrize("name", ["a:b", "%01x", ":", ".", "x" * 300 + ":y"])
def test_bad_context_names_write_nothing(client, name):
    before = client.node.log.end_offset()
    answer = client.delete(f"/contexts/{name}")
    assert 400 <= answer.status < 500, answer.body
    assert client.node.log.end_offset() == before


def test_the_global_context_holds_no_schemas(client):
    before = client.node.log.end_offset()
    refused(client.post("/subjects/:.__GLOBAL:s/versions", {"schema": A}), 422, 42208)
    refused(client.post("/subjects/:.ctx%01:s/versions", {"schema": A}), 422, 42208)
    assert client.node.log.end_offset() == before


def test_context_config_applies_to_its_subjects(client):
    ok(client.put("/config/:.prod:", {"compatibility": "NONE"}))
    ok(client.post("/subjects/:.prod:s/versions", {"schema": A}))
    assert ok(client.post("/subjects/:.prod:s/versions", {"schema": B}))["version"] == 2, \
        "NONE from the context's config lets an unrelated schema in"
    ok(client.post("/subjects/s/versions", {"schema": A}))
    refused(client.post("/subjects/s/versions", {"schema": B}), 409, 409)


def test_references_inside_a_context_resolve_in_that_context(client):
    ok(client.post("/subjects/:.prod:a/versions", {"schema": A}))
    user = json.dumps({"type": "record", "name": "U", "fields": [{"name": "x", "type": "A"}]})
    body = ok(client.post("/subjects/:.prod:u/versions",
                          {"schema": user, "references": [{"name": "A", "subject": "a", "version": 1}]}))
    assert body["id"] == 2
    assert ok(client.get("/subjects/:.prod:a/versions/1/referencedby")) == [2]


def test_the_id_watermark_of_a_context_survives_a_hard_delete_and_a_new_term():
    log = MemoryLog()
    with NodeClient(log) as client:
        ok(client.post("/subjects/:.prod:s/versions", {"schema": A}))
        ok(client.post("/subjects/:.prod:t/versions", {"schema": B}))
        ok(client.delete("/subjects/:.prod:t"))
        ok(client.delete("/subjects/:.prod:t?permanent=true"))
        fences = [v for k, v in records(client) if isinstance(k, NoopKey) and isinstance(v, FenceValue)]
        assert dict(fences[-1].context_max_ids) == {".prod": 2}, "the hard delete re-states id 2 of .prod"
    with NodeClient(log) as second:
        fences = [v for k, v in records(second) if isinstance(k, NoopKey) and isinstance(v, FenceValue)]
        assert dict(fences[-1].context_max_ids) == {".prod": 2}, "a new term's fence carries it on"
        # What compaction leaves of id 2: only the newest fence.
        only_fence = Cache()
        only_fence.apply(NoopKey(), b'{"keytype":"NOOP","magic":0}', fences[-1])
        assert only_fence.context_max_id(".prod") == 2
        assert ok(second.post("/subjects/:.prod:u/versions",
                              {"schema": json.dumps({"type": "fixed", "name": "F", "size": 2})}))["id"] == 3


def test_context_mode_applies_to_its_subjects(client):
    ok(client.put("/mode/:.frozen:", {"mode": "READONLY"}))
    before = client.node.log.end_offset()
    refused(client.post("/subjects/:.frozen:s/versions", {"schema": A}), 422, 42205)
    assert client.node.log.end_offset() == before
    ok(client.post("/subjects/s/versions", {"schema": A}))


def test_deleting_an_unknown_context_is_204_as_confluents_code_answers(client):
    # Confluent's OpenAPI file lists 404/40401 "context not found"; its code
    # (KafkaSchemaRegistry.deleteContext) deletes the key without looking, so 204. We follow the code.
    before = client.node.log.end_offset()
    answer = client.delete("/contexts/.never")
    assert answer.status == 204, answer.body
    assert client.node.log.end_offset() == before, "there was nothing to forget: nothing is written"
