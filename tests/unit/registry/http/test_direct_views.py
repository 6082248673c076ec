"""Registrations answered by the bridge's direct view must answer exactly what Flask's
view answers: the same status, headers and body, byte for byte, for every request.

Two nodes on in-memory logs get the same requests in the same order: one whose bridge
answers registrations directly, one whose bridge sends everything to Flask. Their
answers must be identical, and the first must have answered from the direct view.
Every test runs with group commit on (the direct view's twin on the event loop,
`register_async`, answers) and off (the view on a pool thread, `register`).
"""
from __future__ import annotations

import json

import pytest

from registry import errors
from registry.http.direct import DirectViews
from store.writer import REQUEST_STARTED, NotWriter
from tests.asgi_client import NodeClient

RECORD = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
RECORD_WIDER = json.dumps({"type": "record", "name": "R", "fields": [
    {"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": ""}]})
RECORD_BREAKING = json.dumps({"type": "record", "name": "R", "fields": [{"name": "z", "type": "long"}]})
JSON_SCHEMA = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
NAMESPACED = '{{"type":"record","name":"{}","namespace":"a","fields":[{{"name":"x","type":"int"}}]}}'
PROTO = 'syntax = "proto3";\nmessage M { int32 a = 1; }\n'

V = "/subjects/{}/versions"

# (method, target, body, headers): sent in order to both nodes.
REQUESTS: list[tuple[str, str | bytes, object, dict[str, str] | None]] = [
    ("POST", V.format("s"), {"schema": RECORD}, None),
    ("POST", V.format("s"), {"schema": RECORD}, None),  # already registered: the same version
    ("POST", V.format("s"), {"schema": RECORD_WIDER}, None),
    ("POST", V.format("s"), {"schema": RECORD_BREAKING}, None),  # 409
    # Normalizing qualifies the names: each of these stores another text when it applies.
    ("POST", V.format("n") + "?normalize=true", {"schema": NAMESPACED.format("B1")}, None),
    ("POST", V.format("n1") + "?normalize=TRUE%20", {"schema": NAMESPACED.format("B2")}, None),
    ("POST", V.format("n2") + "?normalize=false&normalize=true", {"schema": NAMESPACED.format("B3")}, None),
    ("POST", V.format("n3") + "?verbose=1&normalize", {"schema": NAMESPACED.format("B4")}, None),
    ("POST", V.format("n4") + "?normalize=true&normalize=false", {"schema": NAMESPACED.format("B5")}, None),
    ("POST", V.format("bad"), b"{not json", None),
    ("POST", V.format("bad"), b"[1, 2]", None),
    ("POST", V.format("bad"), b"", None),
    ("POST", V.format("bad"), b"null", None),
    ("POST", V.format("bad"), {"schema": RECORD}, {"Content-Type": "text/plain"}),
    ("POST", V.format("ct"), {"schema": '"bytes"'}, {"Content-Type": "Application/JSON; charset=utf-8"}),
    ("POST", V.format("ct2"), {"schema": '"bytes"'}, {"Content-Type": "application/octet-stream"}),
    ("POST", V.format("ct3"), {"schema": '"bytes"'}, {"Content-Type": ""}),
    ("POST", V.format("acc"), {"schema": '"float"'}, {"Accept": "application/json"}),
    ("POST", V.format("acc"), {"schema": '"float"'},
     {"Accept": "application/vnd.schemaregistry+json; q=0.9, */*;q=0.1"}),
    ("POST", V.format("acc"), {"schema": '"float"'}, {"Accept": "text/html"}),  # 406
    ("POST", V.format("bad"), {"schema": "{"}, None),  # 42201
    ("POST", V.format("bad"), {"schema": ""}, None),
    ("POST", V.format("bad"), {"schema": 5}, None),
    ("POST", V.format("bad"), {"schema": '"int"', "schemaType": 7}, None),
    ("POST", V.format("bad"), {"schema": '"int"', "schemaType": "XML"}, None),
    ("POST", V.format("js"), {"schema": JSON_SCHEMA, "schemaType": "json"}, None),
    ("POST", V.format("pb"), {"schema": PROTO, "schemaType": "PROTOBUF"}, None),
    ("POST", V.format("ref"), {"schema": '{"type":"record","name":"U","fields":[{"name":"r","type":"R"}]}',
                               "references": [{"name": "R", "subject": "s", "version": 1}]}, None),
    ("POST", V.format("ref"), {"schema": '"int"', "references": [{"name": "x", "subject": "nope", "version": 1}]},
     None),
    ("POST", V.format("ref"), {"schema": '"int"', "references": "no"}, None),
    ("POST", V.format("md"), {"schema": '"int"', "metadata": {"properties": {"owner": "team"}}}, None),
    ("POST", V.format("md"), {"metadata": {"properties": {"owner": "other"}}}, None),  # contract only
    ("POST", V.format("md"), {"schema": '"int"', "metadata": {"properties": 3}}, None),
    ("POST", V.format("md"), {"schema": '"int"', "ruleSet": {"domainRules": [{"name": ""}]}}, None),
    ("POST", V.format("md"), {"schema": '"int"', "ruleSet": {"domainRules": [
        {"name": "r1", "kind": "CONDITION", "type": "CEL", "mode": "WRITE", "expr": "true"}]}}, None),
    ("POST", V.format("imp"), {"schema": '"int"', "id": 100, "version": 1}, None),  # not in import mode
    ("POST", V.format("imp"), {"schema": '"int"', "id": 1 << 40}, None),
    ("POST", V.format("imp"), {"schema": '"int"', "version": "1"}, None),
    ("POST", V.format("a%2Fb"), {"schema": '"double"'}, None),
    ("POST", V.format("%C3%A9t%C3%A9"), {"schema": '"double"'}, None),
    ("POST", V.format(":.ctx:s"), {"schema": '"double"'}, None),
    ("POST", V.format(":.ctx:s2"), {"schema": '"double"'}, None),
    ("POST", V.format("%FF"), {"schema": '"double"'}, None),
    ("POST", V.format("q") + "?normalize=%FF", {"schema": '"boolean"'}, None),
    ("POST", V.format("q").encode() + b"?normalize=\xff", {"schema": '"boolean"'}, None),  # not UTF-8: Flask
    ("PUT", "/mode/ro", {"mode": "READONLY"}, None),
    ("POST", V.format("ro"), {"schema": '"int"'}, None),
    ("PUT", "/mode/ro", {"mode": "IMPORT"}, None),
    ("POST", V.format("ro"), {"schema": '"int"', "id": 500, "version": 3}, None),
    ("POST", V.format("ro"), {"schema": '"int"'}, None),
    ("POST", V.format("s"), {"schema": RECORD}, None),  # still the same version
    ("GET", V.format("s"), None, None),
    ("GET", "/schemas/ids/1", None, None),
    # Other methods on the same rule: never the direct view (OPTIONS matches whichever
    # rule comes first; Flask answers it with the methods the path allows).
    ("OPTIONS", V.format("s"), {"schema": '"string"'}, None),
    ("HEAD", V.format("s"), None, None),
    ("PUT", V.format("s"), {"schema": '"string"'}, None),
    ("GET", V.format("s"), None, None),
]


def _answers(client: NodeClient) -> list[tuple[int, dict[str, str], bytes]]:
    return [(a.status, a.headers, a.body) for a in
            (client.request(method, target, body, headers=headers) for method, target, body, headers in REQUESTS)]


@pytest.fixture(params=["true", "false"], ids=["on-loop", "on-thread"])
def pair(request):
    # A short store timeout: forwarding to a leader nobody serves gives up within it.
    settings = {"kafkastore.timeout.ms": "1000", "group.commit.enable": request.param}
    with NodeClient(**settings) as direct, NodeClient(**settings) as flask_only:
        flask_only.bridge._direct = None  # every request through Flask
        on_loop = request.param == "true"
        assert (direct.bridge._direct.loop_view_for("POST", "subjects.register", b"{}") is not None) == on_loop
        yield direct, flask_only


def _counting(client: NodeClient) -> list[object]:
    """The answers the registration's direct view gives (None: it left the request to
    Flask), on a pool thread or on the event loop (reads have direct views too)."""
    views: DirectViews = client.bridge._direct
    given: list[object] = []
    answer, answer_on_loop = views.answer, views.answer_on_loop

    def counted(view, arguments, method, *rest):
        result = answer(view, arguments, method, *rest)
        if method == "POST":
            given.append(result)
        return result

    async def counted_on_loop(*args, **kwargs):
        result = await answer_on_loop(*args, **kwargs)
        given.append(result)
        return result

    views.answer = counted  # type: ignore[method-assign]
    views.answer_on_loop = counted_on_loop  # type: ignore[method-assign]
    return given


def _replace_register(client: NodeClient, monkeypatch, replacement) -> None:
    """`replacement` instead of the service's `register`, and of `register_async` too."""
    async def on_loop(*args, **kwargs):
        return replacement(*args, **kwargs)

    monkeypatch.setattr(client.node.service, "register", replacement)
    monkeypatch.setattr(client.node.service, "register_async", on_loop)


def test_every_registration_answers_as_flask_does(pair):
    direct, flask_only = pair
    given = _counting(direct)
    mine, theirs = _answers(direct), _answers(flask_only)
    for request, a, b in zip(REQUESTS, mine, theirs):
        assert a == b, f"{request[0]} {request[1]!r}: direct {a}, Flask {b}"
    registrations = [r for r in REQUESTS if r[0] == "POST"]
    # Every registration reached the direct view except the 406 (Flask answers it before
    # any view) and the query string that is not UTF-8 (Werkzeug's reading of it decides).
    assert len(given) == len(registrations) - 1
    assert sum(g is None for g in given) == 1
    assert b'"schema":"{\\"type\\":\\"record\\",\\"name\\":\\"a.B1\\"' in mine[4][2], "normalized"
    assert b'\\"name\\":\\"B3\\"' in mine[6][2], "the first normalize= counts"
    statuses = {status for status, _, _ in mine}
    assert {200, 400, 406, 409, 415, 422}.issubset(statuses), statuses


def test_the_registered_state_is_the_same(pair):
    direct, flask_only = pair
    _answers(direct), _answers(flask_only)
    for client in (direct, flask_only):
        client.bridge._direct = None
    for target in ("/subjects?deleted=true", "/schemas?deleted=true", "/subjects/s/versions/2",
                   "/subjects/:.ctx:s/versions/1", "/subjects/md/versions/latest", "/subjects/ro/versions"):
        a, b = direct.get(target), flask_only.get(target)
        assert (a.status, a.body) == (b.status, b.body), target


def test_an_unexpected_error_is_a_500_with_confluents_body(pair, monkeypatch, caplog):
    direct, flask_only = pair
    for client in pair:
        _replace_register(client, monkeypatch, lambda *a, **k: 1 / 0)
    a, b = (c.post(V.format("s"), {"schema": '"int"'}) for c in (direct, flask_only))
    assert (a.status, a.headers, a.body) == (b.status, b.headers, b.body)
    assert a.status == 500 and a.json() == {"error_code": 50001, "message": "Internal error in the schema registry"}
    assert "unexpected error serving POST /subjects/s/versions" in caplog.text


def test_a_write_this_node_may_not_append_is_forwarded_by_flask_without_running_again(pair, monkeypatch):
    direct, flask_only = pair
    calls = []

    def not_writer(*args, **kwargs):
        calls.append(args)
        raise NotWriter("another node leads")

    for client in pair:
        _replace_register(client, monkeypatch, not_writer)
    a, b = (c.post(V.format("s"), {"schema": '"int"'}) for c in (direct, flask_only))
    assert len(calls) == 2, "the direct view tried once, Flask forwarded without trying again; Flask-only once"
    # No leader is known to forward to: the forward answers 5000x on both.
    assert (a.status, a.body) == (b.status, b.body)
    assert a.json()["error_code"] in (errors.ForwardingError.error_code, errors.UnknownLeader.error_code)


def test_a_write_that_waited_for_an_election_in_vain_is_forwarded_not_timed_out(pair, monkeypatch):
    """No leader elected within the timeout: the write is forwarded, which says no leader
    is known (50004), as Flask's view answers; running it again would only find its time
    used up (50002)."""
    for client in pair:
        monkeypatch.setattr(client.node.writer, "in_office", lambda: False)
        monkeypatch.setattr(client.node.gate, "leader_problem", lambda: "no leader is known")
    a, b = (c.post(V.format("s"), {"schema": '"int"'}) for c in pair)
    assert (a.status, a.body) == (b.status, b.body)
    assert a.json()["error_code"] == errors.UnknownLeader.error_code, a.body


def test_a_node_not_ready_leaves_registrations_to_flask(pair):
    direct, _ = pair
    given = _counting(direct)
    direct.bridge._direct._ready = lambda: False
    answer = direct.post(V.format("s"), {"schema": '"int"'})
    assert given == [None]
    assert answer.status == 200, "Flask answered (this node is ready, as Flask asks it)"


def test_the_view_runs_with_the_requests_receipt_and_leaves_none_behind(pair, monkeypatch):
    direct, _ = pair
    seen = []
    views: DirectViews = direct.bridge._direct
    register = views._views[("POST", "subjects.register")]
    register_on_loop = views._on_loop.get(("POST", "subjects.register"))

    def watching(service, request):
        seen.append(REQUEST_STARTED.get())
        return register(service, request)

    async def watching_on_loop(service, request):
        seen.append(REQUEST_STARTED.get())
        return await register_on_loop(service, request)

    monkeypatch.setitem(views._views, ("POST", "subjects.register"), watching)
    if register_on_loop is not None:
        monkeypatch.setitem(views._on_loop, ("POST", "subjects.register"), watching_on_loop)
    import time
    before = time.monotonic()
    assert direct.post(V.format("s"), {"schema": '"int"'}).status == 200
    assert len(seen) == 1 and seen[0] is not None and before <= seen[0] <= time.monotonic()
    # The pool thread's context is clean again: the next call outside a request sees none.
    assert direct.bridge._pool.submit(REQUEST_STARTED.get).result() is None


def test_a_view_serves_its_own_method_only(pair):
    views: DirectViews = pair[0].bridge._direct
    assert views.view_for("POST", "subjects.register") is not None
    for method in ("OPTIONS", "HEAD", "GET", "PUT", "DELETE"):
        assert views.view_for(method, "subjects.register") is None, method


def test_a_large_body_is_parsed_on_a_pool_thread_not_on_the_loop(pair):
    views: DirectViews = pair[0].bridge._direct
    small, large = b"x" * 1024, b"x" * (4 * 1024 + 1)
    assert views.loop_view_for("POST", "subjects.register", large) is None
    assert views.loop_view_for("GET", "subjects.register", small) is None
    on_loop = pair[0].node.service.group_commit
    assert (views.loop_view_for("POST", "subjects.register", small) is not None) == on_loop


READS = ["/subjects/s/versions/1", "/subjects/s/versions/latest", "/subjects/s/versions/2?deleted=true",
         "/subjects/s/versions/9", "/subjects/nope/versions/1", "/subjects/s/versions/x", "/subjects/s/versions/-1",
         "/subjects/s/versions/1?format=resolved", "/subjects/s/versions", "/subjects/s/versions?deleted=true",
         "/subjects/s/versions?offset=1&limit=1", "/subjects/s/versions?limit=x", "/subjects/nope/versions",
         "/schemas/ids/1?subject=s", "/schemas/ids/1?fetchMaxId=true", "/schemas/ids/1?subject=:.ctx:",
         "/schemas/ids/99?subject=s", "/schemas/ids/x?subject=s", "/schemas/ids/1?subject=s&format=serialized"]


def test_every_read_with_a_direct_view_answers_as_flask_does(pair):
    """The direct views of reads (a version, the versions, an id with a query) give
    Flask's answer to each, errors and all, with and without kept answers."""
    direct, flask_only = pair
    flask_only.bridge._direct = None
    for client in pair:
        for text in ('{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}',
                     '{"type":"record","name":"R","fields":[{"name":"a","type":"int"},'
                     '{"name":"b","type":"int","default":0}]}'):
            assert client.post("/subjects/s/versions", {"schema": text}).status == 200
        assert client.delete("/subjects/s/versions/2").status == 200
    for target in READS:
        for _ in range(2):
            a, b = direct.get(target), flask_only.get(target)
            assert (a.status, a.headers, a.body) == (b.status, b.headers, b.body), target
