"""The `GET /schemas/ids/{id}` fast path must answer exactly what the Flask view answers."""
from __future__ import annotations

import pytest

from registry.http import fast_path
from registry.http.routing import Router
from tests.asgi_client import NodeClient


@pytest.fixture
def client():
    with NodeClient() as the_client:
        yield the_client


def register(client, subject: str, schema: str) -> int:
    response = client.post(f"/subjects/{subject}/versions", {"schema": schema})
    assert response.status == 200, response.body
    return response.json()["id"]


def test_fast_path_body_and_headers_equal_the_flask_view(client):
    schema_id = register(client, "s", '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}')
    fast = client.get(f"/schemas/ids/{schema_id}")
    # A query string sends the request through Flask's view instead. (Not `?subject=`:
    # with it Confluent's body also names the subject and version that answered.)
    slow = client.get(f"/schemas/ids/{schema_id}?fetchMaxId=false")
    assert fast.status == slow.status == 200
    assert fast.body == slow.body, "the fast path must not change the body"
    assert fast.content_type == slow.content_type == "application/vnd.schemaregistry.v1+json"


def test_fast_path_sees_a_hard_delete_at_once(client):
    schema_id = register(client, "s", '"string"')
    assert client.get(f"/schemas/ids/{schema_id}").status == 200  # memoised now
    assert client.delete("/subjects/s").status == 200
    assert client.delete("/subjects/s?permanent=true").status == 200
    gone = client.get(f"/schemas/ids/{schema_id}")
    assert gone.status == 404 and gone.json()["error_code"] == 40403


@pytest.mark.parametrize("path,code", [("/schemas/ids/999", 40403), ("/schemas/ids/-1", 40403),
                                       # Not an int32: JAX-RS binds no resource, a plain 404
                                       # (issue 12; the test asserted 40403 before).
                                       ("/schemas/ids/abc", 404), ("/schemas/ids/99999999999999", 404)])
def test_unknown_or_malformed_ids_fall_through_to_confluent_errors(client, path, code):
    response = client.get(path)
    assert response.status == 404 and response.json()["error_code"] == code


def test_non_ascii_digits_are_not_ids(client):
    # A raw 0xB2 byte in the path reads (latin-1) as "²", which str.isdigit() takes for a
    # digit and int() refuses: it must be a plain 404 (not an int32, as /schemas/ids/abc),
    # not a crash.
    answer = client.get(b"/schemas/ids/\xb2")
    assert answer.status == 404 and answer.json()["error_code"] == 404, answer.body


def test_the_fast_path_is_the_flask_endpoint_it_stands_for(client):
    route = Router(client.bridge._wsgi_app.__self__.url_map).match("GET", "/schemas/ids/7")
    assert route is not None and route.endpoint == fast_path.ENDPOINT, "authorization maps the same route"
    assert dict(route.arguments) == {fast_path.ARGUMENT: "7"}


def test_the_memo_holds_about_a_body_per_id_not_a_serializer_buffer(client):
    import tracemalloc

    from registry.http.fast_path import SchemaByIdFastPath

    fields = ",".join(f'{{"name":"f{i}","type":"long"}}' for i in range(10))
    ids = [register(client, f"s{n}", f'{{"type":"record","name":"R{n}","fields":[{fields}]}}') for n in range(50)]
    fast = SchemaByIdFastPath(client.node.service, lambda: True, client.node.cache)
    tracemalloc.start()
    try:
        bodies = [fast.answer("GET", f"/schemas/ids/{i}", b"") for i in ids]
        # The id lane keeps the same answers under the id's digits: a key and a slot more.
        assert all(fast.plain_answer(str(i).encode(), [], 1 << 16)[1] == body for i, body in zip(ids, bodies))
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    size = max(len(body) for body in bodies)
    # orjson returns its 4 KiB write buffer as the bytes object: memoised as such, 10k
    # ids held 43 MiB more than their bodies (issue 17).
    assert held / len(ids) < size + 400, f"{held / len(ids):.0f} B held per id for {size}-byte bodies"


def test_the_plain_id_read_is_answered_before_the_whole_way_in(client, monkeypatch):
    # The bridge's own lane, as a read the listener did not answer at once (one pipelined
    # behind another) reaches it; answers at once: tests/api/test_listener.py.
    monkeypatch.setattr(client, "at_once", None)
    schema_id = register(client, "s", '"string"')
    expected = client.get(f"/schemas/ids/{schema_id}?fetchMaxId=false").body  # Flask's answer
    entered = []
    serve = client.bridge._serve

    async def counting_serve(scope, *args):
        entered.append(scope["raw_path"])
        return await serve(scope, *args)

    monkeypatch.setattr(client.bridge, "_serve", counting_serve)
    plain = client.get(f"/schemas/ids/{schema_id}")
    assert plain.status == 200 and plain.body == expected
    assert plain.headers["content-length"] == str(len(expected))
    assert plain.content_type == "application/vnd.schemaregistry.v1+json"
    assert entered == [], "the plain id read took the whole way in"
    # Anything not plain takes the whole way in, which answers as it always did.
    for target in (f"/schemas/ids/{schema_id}/", f"/schemas/ids/{schema_id}?fetchMaxId=false",
                   "/schemas/ids/999", "/schemas/ids/", "/schemas/ids/01234567890", f"//schemas/ids/{schema_id}"):
        client.get(target)
    assert len(entered) == 6
    assert client.get(f"/schemas/ids/0{schema_id}").body == expected, "leading zeros name the same id"


def test_the_plain_id_read_keeps_the_limits_and_negotiation(client):
    schema_id = register(client, "s", '"string"')
    big = client.get(f"/schemas/ids/{schema_id}", headers={"X-Big": "a" * 70000})
    assert big.status == 431 and big.json()["error_code"] == 431
    plain_json = client.get(f"/schemas/ids/{schema_id}", headers={"Accept": "application/json"})
    assert plain_json.status == 200 and plain_json.content_type == "application/json"
    refused = client.get(f"/schemas/ids/{schema_id}", headers={"Accept": "text/html"})
    assert refused.status == 406


def test_the_plain_id_read_is_counted(client):
    schema_id = register(client, "s", '"string"')
    for _ in range(3):
        assert client.get(f"/schemas/ids/{schema_id}").status == 200
    text = client.get("/metrics").body.decode()
    assert 'schema_registry_http_requests_total{method="GET",route="schemas.get_schema",status="200"} 3.0' in text


def test_a_kept_plain_answer_goes_when_its_id_does(client):
    kept = register(client, "kept", '"string"')
    schema_id = register(client, "s", '"int"')
    for _ in range(2):  # the second read is answered from the lane's kept answers
        assert client.get(f"/schemas/ids/{schema_id}").status == 200
    assert client.delete("/subjects/s").status == 200
    assert client.delete("/subjects/s?permanent=true").status == 200
    gone = client.get(f"/schemas/ids/{schema_id}")
    assert gone.status == 404 and gone.json()["error_code"] == 40403, "answered from a kept answer"
    assert client.get(f"/schemas/ids/{kept}").status == 200, "other ids are still answered"


def test_an_answer_built_while_its_id_goes_is_not_kept(client):
    """The lane reads the cache's removal count before building an answer: an id removed
    after that read (here, right after the build) moves the count, and the next request
    drops what was built, instead of answering from it for ever."""
    schema_id = register(client, "s", '"string"')
    cache = client.node.cache
    fast = fast_path.SchemaByIdFastPath(client.node.service, lambda: True, cache)
    build = fast._entry

    def build_then_remove(number):
        entry = build(number)
        assert client.delete("/subjects/s").status == 200
        assert client.delete("/subjects/s?permanent=true").status == 200
        return entry

    fast._entry = build_then_remove
    digits = str(schema_id).encode()
    assert fast.plain_answer(digits, [], 1024) is not None  # answered as it stood when asked
    fast._entry = build
    assert fast.plain_answer(digits, [], 1024) is None, "answered from an answer built for a removed id"


def test_every_plain_id_read_is_timed_with_the_others(client):
    schema_id = register(client, "s", '"string"')
    for _ in range(3):
        assert client.get(f"/schemas/ids/{schema_id}").status == 200
    assert client.get(f"/schemas/ids/{schema_id}?fetchMaxId=false").status == 200  # through Flask
    text = client.get("/metrics").body.decode()
    assert 'schema_registry_http_requests_total{method="GET",route="schemas.get_schema",status="200"} 4.0' in text
    assert ('schema_registry_http_request_duration_seconds_count{method="GET",route="schemas.get_schema"} 4.0'
            in text)
    assert ('schema_registry_http_request_duration_seconds_bucket{le="0.0005",method="GET",'
            'route="schemas.get_schema"}') in text


def test_the_answers_kept_for_ids_are_bounded_however_many_ids_are_read(monkeypatch):
    """Reads spread over every id kept an answer for each (issue 51); past the bound the
    memo starts again, and every read is still answered."""
    from registry.http import fast_path
    from tests.asgi_client import NodeClient
    monkeypatch.setattr(fast_path, "MAX_HELD_BYTES", 4096)
    with NodeClient() as client:
        ids = [client.post(f"/subjects/s{n}/versions",
                           {"schema": '{"type":"record","name":"R%d","fields":[{"name":"a","type":"int"}]}' % n}
                           ).json()["id"] for n in range(60)]
        for _ in range(2):
            for schema_id in ids:
                answer = client.get(f"/schemas/ids/{schema_id}")
                assert answer.status == 200 and f'R{schema_id - 1}' in answer.json()["schema"], answer.body
        lane = client.bridge._fast_path
        held = sum(len(entry[1]) for entry in lane._memo.values())
        assert held <= 4096 and lane._held == held, (held, lane._held)
        assert len(lane._answers) <= len(lane._memo), "no answer outlives its memo entry"
