"""Hostile and careless requests, through the real front end (bridge, fast path, Flask) on
the in-memory log: each gets a 4xx with Confluent's error body and writes nothing.

Each case here was reproduced against the registry before it was fixed (issue 11).
"""
from __future__ import annotations

import asyncio
import json

import pytest

from tests.asgi_client import NodeClient

MAX_INT32 = 2**31 - 1


@pytest.fixture
def client():
    with NodeClient() as the_client:
        yield the_client


def end(client: NodeClient) -> int:
    return client.node.log.end_offset()


def assert_refused(answer, status: int, code: int) -> None:
    assert answer.status == status, (answer.status, answer.body)
    body = answer.json()
    assert body["error_code"] == code and isinstance(body["message"], str), body


def record(name: str, *fields: dict) -> str:
    return json.dumps({"type": "record", "name": name, "fields": list(fields)})


# ---- route confusion -----------------------------------------------------------------


@pytest.mark.parametrize("method,path,body", [
    ("PUT", "/mode/x://y/mode", {"mode": "READONLY"}),
    ("PUT", "/config/a://b/config", {"compatibility": "NONE"}),
    ("DELETE", "/subjects/x://y/subjects/orders", None),
    ("POST", "/subjects/x://y/subjects/orders/versions", {"schema": '"string"'}),
])
def test_a_path_containing_a_scheme_is_routed_as_named_never_rewritten(client, method, path, body):
    client.post("/subjects/orders/versions", {"schema": '"string"'})
    before = end(client)
    answer = client.request(method, path, body)
    assert_refused(answer, 404, 404)
    assert end(client) == before, "a request routed nowhere must write nothing"
    assert client.get("/mode").json() == {"mode": "READWRITE"}
    assert client.get("/subjects").json() == ["orders"]


def test_a_true_absolute_form_target_is_served_as_its_path(client):
    answer = client.get("http://registry.example:8081/subjects")
    assert answer.status == 200 and answer.json() == []


# ---- schema text that cannot be stored ---------------------------------------------------


@pytest.mark.parametrize("schema", [
    record("R", {"name": "a", "type": "string", "doc": "\ud800"}),
    record("R", {"name": "a", "type": "string", "default": "\udfff"}),
    json.dumps({"type": "record", "name": "R", "fields": [], "x\ud800": 1}),
])
def test_a_lone_surrogate_is_an_invalid_schema_not_a_500(client, schema):
    before = end(client)
    assert_refused(client.post("/subjects/s/versions", {"schema": schema}), 422, 42201)
    assert end(client) == before


def test_an_infinite_double_default_is_refused_at_registration(client):
    schema = record("R", {"name": "a", "type": "double", "default": 0}).replace('"default": 0', '"default": 1e999')
    assert "1e999" in schema
    before = end(client)
    assert_refused(client.post("/subjects/s/versions", {"schema": schema}), 422, 42201)
    assert end(client) == before
    # The subject stays usable: nothing poisoned it.
    ok = client.post("/subjects/s/versions", {"schema": record("R", {"name": "a", "type": "double",
                                                                        "default": 1.5})})
    assert ok.status == 200, ok.body


# ---- chunked bodies --------------------------------------------------------------------


def test_a_chunked_body_is_read_like_any_other(client):
    body = json.dumps({"schema": '"string"'}).encode()
    answer = client.request("POST", "/subjects/chunked/versions",
                            headers={"Content-Type": "application/vnd.schemaregistry.v1+json",
                                     "Transfer-Encoding": "chunked"},
                            chunks=[body[:7], body[7:20], body[20:]])
    assert answer.status == 200 and "id" in answer.json(), answer.body


def test_a_chunked_body_over_the_limit_is_413(client):
    limit = client.node.settings.max_request_bytes
    answer = client.request("POST", "/subjects/big/versions",
                            headers={"Transfer-Encoding": "chunked"},
                            chunks=[b"x" * (limit // 2), b"x" * (limit // 2 + 10)])
    assert_refused(answer, 413, 413)


@pytest.mark.parametrize("declared", ["9" * 25, "9" * 5000])
def test_a_content_length_of_any_number_of_digits_past_the_limit_is_413(client, declared):
    # 5,000 digits: more than int() converts (4,300) without raising.
    answer = client.request("POST", "/subjects/big/versions", b"{}", headers={"Content-Length": declared})
    assert_refused(answer, 413, 413)


# ---- subjects Confluent refuses ---------------------------------------------------------


@pytest.mark.parametrize("subject", ["a%00b", "a%0Ab", "%1F", "%7F", "x%C2%85y", "__GLOBAL", "__EMPTY"])
def test_subjects_confluent_refuses_are_42208(client, subject):
    before = end(client)
    assert_refused(client.post(f"/subjects/{subject}/versions", {"schema": '"string"'}), 422, 42208)
    assert_refused(client.put(f"/config/{subject}", {"compatibility": "NONE"}), 422, 42208)
    assert_refused(client.put(f"/mode/{subject}", {"mode": "READONLY"}), 422, 42208)
    assert end(client) == before
    assert client.get("/subjects").json() == []


# ---- nesting --------------------------------------------------------------------------------


def nested_arrays(levels: int) -> str:
    return '{"type":"array","items":' * levels + '"string"' + "}" * levels


def test_a_schema_at_the_nesting_limit_never_freezes_its_subject(client):
    from registry.schema_types.json_text import MAX_DEPTH

    assert client.put("/config/deep", {"compatibility": "NONE"}).status == 200
    assert client.post("/subjects/deep/versions", {"schema": nested_arrays(MAX_DEPTH - 1)}).status == 200
    assert_refused(client.post("/subjects/deeper/versions", {"schema": nested_arrays(MAX_DEPTH + 1)}), 422, 42201)
    answer = client.post("/subjects/deep/versions", {"schema": '"string"'})
    assert answer.status == 200, f"a new version after the deepest accepted one must work: {answer.body}"
    for level in ("BACKWARD", "FULL_TRANSITIVE"):
        assert client.put("/config/deep", {"compatibility": level}).status == 200
        check = client.post("/compatibility/subjects/deep/versions?verbose=true",
                            {"schema": nested_arrays(MAX_DEPTH - 1)})
        assert check.status == 200, check.body  # an answer, whatever it is, not an error


def test_references_cannot_stack_nesting_past_the_limit(client):
    from registry.schema_types.json_text import MAX_DEPTH

    inner = ('{"type":"record","name":"Deep","fields":[{"name":"a","type":' + nested_arrays(MAX_DEPTH - 5)
             + "}]}")
    assert client.post("/subjects/deep-ref/versions", {"schema": inner}).status == 200
    outer = '{"type":"array","items":' * 100 + '"Deep"' + "}" * 100
    answer = client.post("/subjects/outer/versions", {"schema": outer, "references": [
        {"name": "Deep", "subject": "deep-ref", "version": 1}]})
    assert_refused(answer, 422, 42201)
    assert "references" in answer.json()["message"]


# ---- overflow ---------------------------------------------------------------------------------


def test_a_version_past_2_31_is_refused_with_a_4xx(client):
    assert client.put("/mode/imp", {"mode": "IMPORT"}).status == 200
    imported = client.post("/subjects/imp/versions", {"schema": '"string"', "id": 7, "version": MAX_INT32})
    assert imported.status == 200, imported.body
    assert client.put("/mode/imp", {"mode": "READWRITE"}).status == 200
    assert client.put("/config/imp", {"compatibility": "NONE"}).status == 200
    before = end(client)
    answer = client.post("/subjects/imp/versions", {"schema": '"int"'})
    assert answer.status == 422 and answer.json()["error_code"] == 42205, answer.body
    assert end(client) == before


def test_after_importing_the_top_id_new_ids_come_from_the_lowest_never_used_one(client):
    first = client.post("/subjects/a/versions", {"schema": '"string"'}).json()["id"]
    assert client.put("/mode/imp", {"mode": "IMPORT"}).status == 200
    assert client.post("/subjects/imp/versions", {"schema": '"int"', "id": MAX_INT32, "version": 1}).status == 200
    assert client.put("/mode/imp", {"mode": "READWRITE"}).status == 200
    fresh = client.post("/subjects/b/versions", {"schema": '"long"'})
    assert fresh.status == 200, f"the registry must keep working after an import of id 2^31-1: {fresh.body}"
    assert fresh.json()["id"] == first + 1, "the lowest id never used, above the watermark"


def test_freed_ids_stay_retired_when_the_top_id_is_taken(client):
    gone = client.post("/subjects/gone/versions", {"schema": '"string"'}).json()["id"]
    assert client.delete("/subjects/gone").status == 200
    assert client.delete("/subjects/gone?permanent=true").status == 200
    assert client.put("/mode/imp", {"mode": "IMPORT"}).status == 200
    assert client.post("/subjects/imp/versions", {"schema": '"int"', "id": MAX_INT32, "version": 1}).status == 200
    assert client.put("/mode/imp", {"mode": "READWRITE"}).status == 200
    fresh = client.post("/subjects/b/versions", {"schema": '"long"'}).json()["id"]
    assert fresh > gone, "a hard-deleted id must never name another schema"


# ---- fan-out and quadratic validation ----------------------------------------------------------


def test_a_reference_fan_out_resolves_each_version_once(client):
    # 30 schemas per level, each referencing all 30 of the level below, 4 levels: 30^4 paths
    # (810,000) but only 120 versions. Resolved per path this would not finish.
    previous: list[tuple[str, str]] = []
    for level in range(4):
        current = []
        for i in range(30):
            name = f"L{level}N{i}"
            fields = [{"name": f"f{j}", "type": ref} for j, (ref, _) in enumerate(previous)] or \
                [{"name": "x", "type": "int"}]
            refs = [{"name": ref, "subject": subject, "version": 1} for ref, subject in previous]
            answer = client.post(f"/subjects/{name}/versions",
                                 {"schema": record(name, *fields), "references": refs})
            assert answer.status == 200, answer.body
            current.append((name, name))
        previous = current


def test_an_enum_with_one_duplicate_among_many_names_the_duplicate(client):
    symbols = [f"S{i}" for i in range(20000)] + ["S77"]
    answer = client.post("/subjects/e/versions", {"schema": json.dumps(
        {"type": "enum", "name": "E", "symbols": symbols})})
    assert_refused(answer, 422, 42201)
    assert "['S77']" in answer.json()["message"]


def test_a_large_union_checked_against_a_large_union(client):
    branches = [{"type": "fixed", "name": f"F{i}", "size": 1} for i in range(3000)]
    assert client.post("/subjects/u/versions", {"schema": json.dumps(["null"] + branches)}).status == 200
    wider = client.post("/subjects/u/versions", {"schema": json.dumps(["null", "string"] + branches)})
    assert wider.status == 200, "adding a branch is backward compatible"
    narrower = client.post("/compatibility/subjects/u/versions/latest",
                           {"schema": json.dumps(["null"] + branches[1:])})
    assert narrower.json() == {"is_compatible": False}, "a writer branch the reader lacks breaks it"


# ---- HTTP-level limits ----------------------------------------------------------------------


def test_a_body_that_stops_arriving_is_dropped_with_408():
    with NodeClient(**{"request.body.timeout.ms": "300"}) as client:
        before = end(client)
        # One chunk says more is coming; nothing more ever comes (the client's receive blocks).
        answer = client.request("POST", "/subjects/slow/versions", headers={"Content-Length": "1000"},
                                chunks=[b'{"schema":', b'"more"'], more_after_last=True)
        assert_refused(answer, 408, 408)
        assert end(client) == before


def test_bodies_in_flight_share_a_memory_budget():

    with NodeClient(**{"max.inflight.request.bytes": "100000", "max.request.bytes": "80000"}) as client:
        sent: dict[int, dict] = {}

        def receiver(first: bytes, rest: bytes, release: asyncio.Event,
                     waiting: asyncio.Event | None = None):
            messages = [first]

            async def receive():
                if messages:
                    return {"type": "http.request", "body": messages.pop(), "more_body": True}
                if waiting is not None:
                    waiting.set()  # the app took the first chunk and asks for more
                await release.wait()
                return {"type": "http.request", "body": rest, "more_body": False}
            return receive

        def sender(key: int):
            async def send(message):
                if message["type"] == "http.response.start":
                    sent[key] = {"status": message["status"]}
                elif message["type"] == "http.response.body":
                    sent[key]["body"] = message.get("body", b"")
            return send

        def scope():
            return {"type": "http", "method": "POST", "path": "/subjects/s/versions",
                    "raw_path": b"/subjects/s/versions", "query_string": b"", "http_version": "1.1",
                    "headers": [(b"content-type", b"application/json"), (b"transfer-encoding", b"chunked")]}

        async def both():
            release, waiting = asyncio.Event(), asyncio.Event()
            first = asyncio.create_task(
                client.app(scope(), receiver(b"x" * 60000, b"", release, waiting), sender(1)))
            # the first body holds 60,000 bytes of the budget once the app asks for more
            await asyncio.wait_for(waiting.wait(), 10)
            await client.app(scope(), receiver(b"y" * 60000, b"", asyncio.Event()), sender(2))
            release.set()
            await first

        asyncio.run(both())
        assert sent[2]["status"] == 503, "a second body that would exceed the in-flight budget is refused"
        assert json.loads(sent[2]["body"])["error_code"] == 503
        assert sent[1]["status"] == 400, "the first (malformed JSON) body was read and answered as usual"


@pytest.mark.parametrize("target,status", [
    ("/subjects/" + "a" * 20000, 414),
    ("subjects", 400),
    ("//subjects", 404),
    ("/config//x", 404),
    ("/mode/a//b/mode", 404),
])
def test_odd_request_targets_get_confluent_errors(client, target, status):
    assert_refused(client.get(target), status, status)


def test_oversized_headers_are_431(client):
    assert_refused(client.get("/subjects", headers={"X-Big": "a" * 70000}), 431, 431)


def test_a_schema_larger_than_the_log_takes_is_42209_and_writes_nothing():
    from store.memory_log import MemoryLog

    small = MemoryLog()
    small.max_record_bytes = 2000
    with NodeClient(log=small) as client:
        before = end(client)
        big = record("Big", *({"name": f"field_{i}", "type": "string"} for i in range(100)))
        assert_refused(client.post("/subjects/big/versions", {"schema": big}), 422, 42209)
        assert end(client) == before
        assert client.post("/subjects/small/versions", {"schema": '"string"'}).status == 200


def test_a_request_without_body_framing_has_no_body(client):
    """HTTP/1.1 (RFC 9112 6.3): no Content-Length and no Transfer-Encoding means no body.
    The bridge does not wait for one: a receive that would block forever is never called."""
    async def never() -> dict:
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/subjects", "raw_path": b"/subjects", "query_string": b"",
             "http_version": "1.1", "headers": [(b"host", b"x")]}
    asyncio.run(asyncio.wait_for(client.app(scope, never, send), 5))
    assert sent[0]["status"] == 200, "answered without reading a body"


def _post_lookup_scope(headers: list[tuple[bytes, bytes]], http_version: str = "1.1") -> dict:
    return {"type": "http", "method": "POST", "path": "/subjects/framed", "raw_path": b"/subjects/framed",
            "query_string": b"", "http_version": http_version,
            "headers": [(b"content-type", b"application/json"), *headers]}


def _serve_body(client, scope: dict, pieces: list[bytes]) -> tuple[int, int]:
    """Serve `scope` with a body handed over as some servers do (granian did): every piece marked
    more_body, the end only said by a last, empty message. Returns (status, receives)."""
    messages = [{"type": "http.request", "body": piece, "more_body": True} for piece in pieces]
    messages.append({"type": "http.request", "body": b"", "more_body": False})
    calls = [0]
    sent: list[dict] = []

    async def receive() -> dict:
        calls[0] += 1
        return messages.pop(0)

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(asyncio.wait_for(client.app(scope, receive, send), 5))
    return sent[0]["status"], calls[0]


def test_a_body_of_a_declared_length_is_read_to_that_length_and_no_further(client):
    """HTTP/1.1 (RFC 9112 6.2): with one Content-Length the body is whole once that many
    bytes arrived; the bridge does not ask for the empty message that only says so."""
    assert client.post("/subjects/framed/versions", {"schema": '"string"'}).status == 200
    body = json.dumps({"schema": '"string"'}).encode()
    length = [(b"content-length", str(len(body)).encode())]
    assert _serve_body(client, _post_lookup_scope(length), [body]) == (200, 1)
    assert _serve_body(client, _post_lookup_scope(length), [body[:5], body[5:]]) == (200, 2)
    # Where the head does not fix the length, the body is read to its end.
    chunked = [(b"transfer-encoding", b"chunked")]
    assert _serve_body(client, _post_lookup_scope(chunked), [body[:5], body[5:]]) == (200, 3)
    assert _serve_body(client, _post_lookup_scope(length + chunked), [body]) == (200, 2)
    assert _serve_body(client, _post_lookup_scope(length, http_version="2"), [body]) == (200, 2)
    # An empty declared body is not asked for at all.
    empty = [(b"content-length", b"0")]
    assert _serve_body(client, _post_lookup_scope(empty), []) == (422, 0)  # not a JSON object
