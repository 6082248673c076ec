"""Hot reads answered from answers kept per applied log position (registry/http/read_memo.py):
the same bytes as Flask's, never an answer older than a write already acknowledged."""
from __future__ import annotations

import base64
import json

import pytest

from registry.http.security.passwords import users_file_line
from registry.service import NewSchema, RegisterRequest

from registry.http.read_memo import HOT, ReadMemo
from tests.asgi_client import NodeClient

RECORD = '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}%s]}'


def schema(extra: str = "") -> str:
    return RECORD % extra


@pytest.fixture
def client():
    with NodeClient() as the_client:
        yield the_client


def memo(client) -> ReadMemo:
    kept = client.bridge._memo
    assert kept is not None, "every node keeps hot answers"
    return kept


def flask_calls(client, monkeypatch) -> list[str]:
    """Record each request that reaches a view: the WSGI app (Flask), or the bridge's
    direct view of the same function."""
    calls: list[str] = []
    bridge = client.bridge
    original = bridge._call_wsgi

    def counted(environ):
        calls.append(environ["RAW_URI"])
        return original(environ)

    monkeypatch.setattr(bridge, "_call_wsgi", counted)
    direct = bridge._direct.answer

    def counted_direct(view, arguments, method, path, query, *rest):
        calls.append(path + ("?" + query.decode() if query else ""))
        return direct(view, arguments, method, path, query, *rest)

    monkeypatch.setattr(bridge._direct, "answer", counted_direct)
    return calls


def register(client, subject: str, text: str) -> int:
    answer = client.post(f"/subjects/{subject}/versions", {"schema": text})
    assert answer.status == 200, answer.body
    return answer.json()["id"]


HOT_READS = ["/subjects", "/subjects/s/versions", "/subjects/s/versions/latest", "/subjects/s/versions/1",
             "/subjects/s/versions/latest/schema", "/schemas/ids/1?subject=s", "/schemas/ids/1/versions",
             "/schemas/ids/1/subjects", "/config/s?defaultToGlobal=true", "/mode", "/schemas/types",
             "/schemas?latestOnly=true"]


@pytest.mark.parametrize("target", HOT_READS)
def test_a_repeated_hot_read_is_answered_without_flask_with_the_same_bytes(client, monkeypatch, target):
    register(client, "s", schema())
    calls = flask_calls(client, monkeypatch)
    first = client.get(target)
    second = client.get(target)
    assert first.status == 200, first.body
    assert (second.status, second.headers, second.body) == (first.status, first.headers, first.body), \
        "a kept answer is Flask's answer, headers and all"
    assert calls == [target], "only the first reaches a view"


def test_the_lookup_is_kept_per_body(client, monkeypatch):
    register(client, "s", schema())
    register(client, "s", schema(',{"name":"b","type":"int","default":0}'))
    calls = flask_calls(client, monkeypatch)
    first = client.post("/subjects/s", {"schema": schema()})
    other = client.post("/subjects/s", {"schema": schema(',{"name":"b","type":"int","default":0}')})
    again = client.post("/subjects/s", {"schema": schema()})
    assert (first.json()["version"], other.json()["version"], again.json()["version"]) == (1, 2, 1), \
        "each body has its own answer"
    assert len(calls) == 2, "the repeated lookup is answered from what was kept"


def test_a_write_retires_every_kept_answer(client):
    """Read-your-writes: once a registration is acknowledged, no read answers as before it."""
    register(client, "s", schema())
    assert client.get("/subjects/s/versions/latest").json()["version"] == 1
    assert client.get("/subjects/s/versions").json() == [1]
    register(client, "s", schema(',{"name":"b","type":"int","default":0}'))
    assert client.get("/subjects/s/versions/latest").json()["version"] == 2
    assert client.get("/subjects/s/versions").json() == [1, 2]
    assert client.put("/config/s", {"compatibility": "NONE"}).status == 200
    assert client.get("/config/s").json()["compatibilityLevel"] == "NONE", "config is a record too"
    assert client.delete("/subjects/s").status == 200
    gone = client.get("/subjects/s/versions/latest")
    assert gone.status == 404 and gone.json()["error_code"] == 40401, "a soft delete is seen at once"


def test_a_failed_lookup_is_not_kept(client, monkeypatch):
    register(client, "s", schema())
    calls = flask_calls(client, monkeypatch)
    for _ in range(2):
        missing = client.post("/subjects/s", {"schema": '"string"'})
        assert missing.status == 404 and missing.json()["error_code"] == 40403
    assert len(calls) == 2, "only 200 answers are kept"


def test_each_negotiated_type_is_kept_apart(client):
    register(client, "s", schema())
    plain = client.get("/subjects/s/versions/latest", headers={"Accept": "application/json"})
    v1 = client.get("/subjects/s/versions/latest")
    again = client.get("/subjects/s/versions/latest", headers={"Accept": "application/json"})
    assert plain.content_type.startswith("application/json") and again.content_type == plain.content_type
    assert v1.content_type == "application/vnd.schemaregistry.v1+json"
    refused = client.get("/subjects/s/versions/latest", headers={"Accept": "text/html"})
    assert refused.status == 406, "an Accept nothing satisfies still gets 406"


def test_writes_and_non_hot_reads_are_never_kept(client):
    register(client, "s", schema())
    client.get("/leader")
    client.get("/subjects/s/versions/latest")
    kept = memo(client)._kept
    assert {answer.endpoint for answer in kept.values()} <= HOT
    assert all(key[0] in ("GET", "POST") for key in kept), "only reads and lookups"
    assert not any(answer.endpoint == "subjects.register" for answer in kept.values())


def test_not_ready_answers_are_not_kept_nor_served():
    ready = [True]
    kept = ReadMemo(lambda: 7, lambda: ready[0])
    key = kept.key("GET", "/subjects", b"", b"", "application/vnd.schemaregistry.v1+json", None)
    kept.keep(key, 7, "subjects.list_subjects", [], b"[]")
    assert kept.get(key) is not None
    ready[0] = False
    assert kept.get(key) is None and kept.position() is None, "a node that is not ready answers 503 (Flask)"


def test_kept_answers_are_bounded_by_bytes():
    position = [0]
    kept = ReadMemo(lambda: position[0], lambda: True, max_bytes=64 * 1024)
    for n in range(1000):
        key = kept.key("GET", f"/subjects/s{n}/versions", b"", b"", "t", None)
        kept.keep(key, 0, "subjects.list_versions", [], b"x" * 1000)
    assert len(kept) * 1000 <= 64 * 1024, "least recently used answers go first"
    huge = kept.key("GET", "/schemas", b"", b"", "t", None)
    kept.keep(huge, 0, "schemas.list_schemas", [], b"x" * (2 << 20))
    assert kept.get(huge) is None, "an answer larger than 1 MiB is not kept"
    position[0] = 1
    assert all(kept.get(kept.key("GET", f"/subjects/s{n}/versions", b"", b"", "t", None)) is None
               for n in range(1000)), "a new position retires everything kept"


def test_a_listing_follows_the_rules_when_they_change(tmp_path):
    """The log did not move, the rules did: a kept listing must not outlive them."""
    users, rules = tmp_path / "users.properties", tmp_path / "rules.json"
    users.write_text(users_file_line("carol", "pw", time_cost=1, memory_kib=8192) + "\n")
    grant = {"rules": [{"principal": "carol", "operations": ["read"], "subject": "a"}]}
    rules.write_text(json.dumps(grant))
    with NodeClient(**{"authentication.method": "BASIC", "authentication.users.file": str(users),
                       "authorization.rules.file": str(rules)}) as client:
        for subject in ("a", "b"):  # straight to the service: carol may only read
            client.node.service.register(subject, RegisterRequest(NewSchema(schema())))
        carol = {"Authorization": "Basic " + base64.b64encode(b"carol:pw").decode()}
        assert client.get("/subjects", headers=carol).json() == ["a"]
        assert client.get("/subjects", headers=carol).json() == ["a"], "kept, for carol"
        grant["rules"][0]["subject_prefix"] = ""
        del grant["rules"][0]["subject"]
        rules.write_text(json.dumps(grant))
        assert client.bridge._door.guard.rules.reload()
        assert client.get("/subjects", headers=carol).json() == ["a", "b"], "the new rules show her more"


def test_listings_are_kept_per_principal():
    """With authorization on, a listing shows what its caller may read: never another's."""
    key = ReadMemo.key
    assert key("GET", "/subjects", b"", b"", "t", "alice") != key("GET", "/subjects", b"", b"", "t", "bob")
    assert key("POST", "/subjects/s", b"", json.dumps({"schema": "a"}).encode(), "t", None) != \
        key("POST", "/subjects/s", b"", json.dumps({"schema": "b"}).encode(), "t", None)


def test_route_matches_are_remembered_and_bounded():
    """The router's memo: the same (method, path) is matched once; a flood of distinct
    paths (an attacker's) cannot grow it past its bound; the answer is Flask's own."""
    from registry.http import routing
    from registry.http.app import route_map

    router = routing.Router(route_map())
    first = router.match("GET", "/subjects/s/versions/latest")
    assert first is not None and first.endpoint == "subjects.get_version"
    assert router.match("GET", "/subjects/s/versions/latest") is first, "remembered"
    assert router.match("DELETE", "/subjects/s/versions/latest").endpoint == "subjects.delete_version"
    assert router.match("GET", "/nothing/here") is None
    for n in range(routing._MEMO_SIZE + 10):
        router.match("GET", f"/subjects/s{n}/versions")
    assert len(router._memo) <= routing._MEMO_SIZE
    with pytest.raises(TypeError):
        first.arguments["subject"] = "other"  # shared between requests: read-only


def test_the_least_recently_read_answer_goes_first_and_sizes_add_up():
    kept = ReadMemo(lambda: 0, lambda: True, max_bytes=3 * 1400)
    keys = [kept.key("GET", f"/subjects/s{n}/versions", b"", b"", "t", None) for n in range(4)]
    for key in keys[:3]:
        kept.keep(key, 0, "subjects.list_versions", [], b"x" * 1000)
    assert kept.get(keys[0]) is not None  # read: now the most recently used
    kept.keep(keys[3], 0, "subjects.list_versions", [], b"x" * 1000)
    assert [kept.get(key) is not None for key in keys] == [True, False, True, True]
    kept.keep(keys[2], 0, "subjects.list_versions", [], b"y" * 1000)  # kept again: counted once
    assert kept._bytes == sum(answer.size for answer in kept._kept.values()) <= 3 * 1400
    # Larger than everything the memo may hold: not kept, and nothing else is dropped for it.
    kept.keep(kept.key("GET", "/schemas", b"", b"", "t", None), 0, "schemas.list_schemas", [], b"z" * 5000)
    assert len(kept) == 3


def test_kept_lookups_are_weighed_with_their_bodies():
    # A lookup's key holds its request body: many kept answers to distinct large bodies
    # must stay within the bound, however small each answer is.
    kept = ReadMemo(lambda: 0, lambda: True, max_bytes=64 * 1024)
    for n in range(100):
        body = b'{"schema": "%d%s"}' % (n, b" " * 10_000)
        kept.keep(kept.key("POST", "/subjects/s", b"", body, "t", None), 0, "subjects.lookup_schema", [], b"{}")
    assert kept._bytes == sum(answer.size for answer in kept._kept.values()) <= 64 * 1024
    assert 0 < len(kept) <= 6, "each entry weighs its 10 KB body"
    assert all(len(key[3]) > 10_000 for key in kept._kept), "the body is the key's, not a digest"
    # Nor is one lookup with a body past 1 MiB kept: it would push out everything else.
    roomy = ReadMemo(lambda: 0, lambda: True)
    huge = roomy.key("POST", "/subjects/s", b"", b" " * (1 << 20), "t", None)
    roomy.keep(huge, 0, "subjects.lookup_schema", [], b"{}")
    assert roomy.get(huge) is None and len(roomy) == 0


def test_the_kept_posts_are_counted_as_they_come_and_go():
    # A count of none lets every registration skip the memo (`AsgiBridge.answer_at_once`):
    # it must never read none while a lookup's answer is kept.
    kept = ReadMemo(lambda: 0, lambda: True, max_bytes=8 * 1024)
    lookup = kept.key("POST", "/subjects/s", b"", b'{"schema":"1"}', "t", None)
    kept.keep(lookup, 0, "subjects.lookup_schema", [], b"x" * 1000)
    kept.keep(lookup, 0, "subjects.lookup_schema", [], b"y" * 1000)  # the same key again
    kept.keep(kept.key("POST", "/subjects/s/versions", b"", b"{}", "t", None), 0, "subjects.register", [], b"{}")
    assert kept.posts == 1, "one lookup kept (a registration's answer never is)"
    for n in range(20):  # GETs push the lookup out, least recently used first
        kept.keep(kept.key("GET", f"/subjects/s{n}/versions", b"", b"", "t", None), 0, "subjects.list_versions", [],
                  b"x" * 1000)
    assert kept.get(lookup) is None and kept.posts == 0
