"""The listener (every http and https listener) on loopback sockets, in
process, in front of the node's real ASGI bridge: keep-alive, HEAD, 100-continue,
early refusals, malformed requests and the client certificate it hands the app."""
from __future__ import annotations

import asyncio
import json
import socket
import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from registry.http.listener import AtOnce, Listeners
from registry.http.wire import ok_head
from tests.asgi_client import NodeClient
from tests.pki import Pki

SCHEMA = json.dumps({"type": "record", "name": "L", "fields": [{"name": "a", "type": "int"}]})


def listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


@contextmanager
def listening_on(app, context: ssl.SSLContext | None = None, at_once: AtOnce | None = None
                 ) -> Iterator[socket.socket]:
    """`app` served by the listener on a loopback socket (with TLS when given `context`),
    asking `at_once` first as the registry's listeners ask the bridge's."""
    sock = listening()
    listeners = Listeners(app, [(sock, context)], at_once=at_once)
    listeners.start()
    try:
        yield sock
    finally:
        listeners.close()
        sock.close()


@pytest.fixture
def served() -> Iterator[tuple[NodeClient, int]]:
    node = NodeClient(**{"max.request.bytes": "1024"})
    try:
        with listening_on(node.bridge, at_once=node.bridge.answer_at_once) as sock:
            yield node, sock.getsockname()[1]
    finally:
        node.close()


def exchange(conn: socket.socket, request: bytes, head_only: bool = False) -> bytes:
    """Send a request; read one whole answer (Content-Length framed; only the head for HEAD)."""
    conn.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    if head_only:
        return data
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def test_requests_follow_one_another_on_one_connection(served):
    node, port = served
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        body = json.dumps({"schema": SCHEMA}).encode()
        first = exchange(conn, b"POST /subjects/k/versions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                               b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        assert first.startswith(b"HTTP/1.1 200 OK") and json.loads(first.split(b"\r\n\r\n", 1)[1])["id"] == 1, first
        for _ in range(3):
            answer = exchange(conn, b"GET /schemas/ids/1 HTTP/1.1\r\nHost: x\r\n\r\n")
            assert answer.startswith(b"HTTP/1.1 200") and b"connection: close" not in answer.lower(), answer
        head = exchange(conn, b"HEAD /subjects HTTP/1.1\r\nHost: x\r\n\r\n", head_only=True)
        assert head.startswith(b"HTTP/1.1 200") and head.endswith(b"\r\n\r\n"), f"no body for HEAD: {head!r}"
        # The connection is still the same one and still usable after HEAD.
        assert exchange(conn, b"GET /subjects HTTP/1.1\r\nHost: x\r\n\r\n").endswith(b'["k"]')


def test_expect_100_continue_is_answered(served):
    _, port = served
    body = json.dumps({"schema": SCHEMA}).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"POST /subjects/c/versions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Expect: 100-continue\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n")
        assert conn.recv(1024).startswith(b"HTTP/1.1 100"), "the client is told to send its body"
        answer = exchange(conn, body)
        assert answer.startswith(b"HTTP/1.1 200"), answer


def test_a_body_refused_before_it_is_read_closes_the_connection(served):
    _, port = served
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        answer = exchange(conn, b"POST /subjects/big/versions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                b"Content-Length: 5000\r\n\r\n" + b"x" * 100)
        assert answer.startswith(b"HTTP/1.1 413") and b"connection: close" in answer.lower(), answer
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["error_code"] == 413
        assert conn.recv(1024) == b"", "closed rather than reading the rest of the body"


def test_a_malformed_request_gets_400_with_confluents_body(served):
    _, port = served
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        answer = exchange(conn, b"GET /subjects HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 400"), answer
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["error_code"] == 400


def test_the_client_certificate_reaches_the_app(tmp_path: Path):
    pki = Pki(tmp_path)
    seen: list[dict] = []

    async def app(scope, receive, send):
        seen.append(scope)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"{}"})

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.issue("server").pem_bundle())
    context.load_verify_locations(pki.ca_pem)
    context.verify_mode = ssl.CERT_OPTIONAL
    client = pki.issue("alice")
    client_context = ssl.create_default_context(cafile=str(pki.ca_pem))
    client_context.load_cert_chain(client.cert_pem, client.key_pem())
    with listening_on(app, context) as sock:
        with socket.create_connection(sock.getsockname(), timeout=10) as raw:
            with client_context.wrap_socket(raw, server_hostname="localhost") as conn:
                assert exchange(conn, b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.1 200")
    tls = seen[0]["extensions"]["tls"]
    assert seen[0]["scheme"] == "https" and tls["client_cert_name"] == "CN=alice,O=Registry Tests", tls
    assert tls["client_cert_chain"][0].startswith("-----BEGIN CERTIFICATE-----")
    assert tls["tls_version"] in (0x0303, 0x0304)


@pytest.fixture
def bare() -> Iterator[tuple[list[dict], int]]:
    """A bare ASGI app on the listener: it reads the whole body and answers its length, in
    the pieces the path asks for (`/stream/N`: N body messages), or fails (`/fail`)."""
    seen: list[dict] = []

    async def app(scope, receive, send):
        seen.append(scope)
        length, messages = 0, 0
        while True:
            message = await receive()
            messages += 1
            length += len(message.get("body", b""))
            if not message.get("more_body"):
                break
        if scope["path"] == "/fail":
            raise RuntimeError("a bug")
        body = json.dumps({"length": length, "messages": messages}).encode()
        pieces = int(scope["path"].rpartition("/")[2]) if scope["path"].startswith("/stream/") else 0
        if not pieces:
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]})
            await send({"type": "http.response.body", "body": body})
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        for _ in range(pieces - 1):
            await send({"type": "http.response.body", "body": b"ab", "more_body": True})
        await send({"type": "http.response.body", "body": b"cd"})

    with listening_on(app) as sock:
        yield seen, sock.getsockname()[1]


def read_until_closed(conn: socket.socket) -> bytes:
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    return data


def test_a_large_body_reaches_the_app_whole_as_it_arrives(bare):
    _, port = bare
    body = b"x" * (3 * 1024 * 1024)  # many times what the listener buffers before it pauses reading
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        answer = exchange(conn, b"POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["length"] == len(body), answer
        chunked = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in (b"a" * 70000, b"b" * 5)) + b"0\r\n\r\n"
        answer = exchange(conn, b"POST /chunks HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked)
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["length"] == 70005, answer


def test_an_answer_in_pieces_is_chunked_on_http11_and_ends_the_connection_on_http10(bare):
    _, port = bare
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"GET /stream/3 HTTP/1.1\r\nHost: x\r\n\r\nGET /stream/1 HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while data.count(b"0\r\n\r\n") < 1 or b"content-length: 2\r\n\r\ncd" not in data:
            data += conn.recv(65536)
        first, _, second = data.partition(b"0\r\n\r\n")
        assert b"transfer-encoding: chunked" in first.lower() and first.endswith(b"2\r\nab\r\n2\r\nab\r\n2\r\ncd\r\n")
        assert second.startswith(b"HTTP/1.1 200") and second.endswith(b"\r\n\r\ncd"), "one message: a length"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"GET /stream/2 HTTP/1.0\r\n\r\n")
        answer = read_until_closed(conn)
        assert b"connection: close" in answer.lower() and answer.endswith(b"\r\n\r\nabcd"), answer


def test_a_failing_app_answers_500_with_confluents_body_and_closes(bare):
    _, port = bare
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"GET /fail HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = read_until_closed(conn)
        assert answer.startswith(b"HTTP/1.1 500"), answer
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["error_code"] == 50001


def test_a_head_larger_than_the_limit_gets_431_and_the_connection_closes(bare):
    seen, port = bare
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"v" * (1024 * 1024 + 1024))  # never finished
        answer = read_until_closed(conn)
    assert answer.startswith(b"HTTP/1.1 431") and b"connection: close" in answer.lower(), answer[:200]
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error_code"] == 431
    assert not seen, "the app never saw it"


def test_an_upgrade_is_answered_as_plain_http_then_the_connection_closes(bare):
    seen, port = bare
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"GET /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                     b"HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n")
        answer = read_until_closed(conn)
    assert answer.startswith(b"HTTP/1.1 200") and b"connection: close" in answer.lower(), answer
    assert [scope["path"] for scope in seen] == ["/up"]


def test_a_connection_that_never_sends_a_whole_head_is_closed(bare, monkeypatch):
    from registry.http import listener

    monkeypatch.setattr(listener, "_IDLE_TIMEOUT", 0.5)
    _, port = bare
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHo")
        began = time.monotonic()
        assert read_until_closed(conn) == b""
        assert time.monotonic() - began < 5, "closed by the sweep, within a second or two of the timeout"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        assert exchange(conn, b"GET /kept HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.1 200")
        assert read_until_closed(conn) == b"", "a kept-alive connection that goes quiet is closed as well"


def test_too_many_header_fields_get_431(bare):
    seen, port = bare
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n" + b"a: b\r\n" * 1500 + b"\r\n")
        answer = read_until_closed(conn)
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error_code"] == 431
    assert not seen


def test_requests_pipelined_past_the_limit_end_the_connection_after_those_read(bare):
    seen, port = bare
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        # However the bytes are split into reads, some read holds more than 100 requests.
        conn.sendall(b"GET /p HTTP/1.1\r\nHost: x\r\n\r\n" * 5000)
        answers = read_until_closed(conn)  # closed, not all 5,000 answered
    count = answers.count(b"HTTP/1.1 200 OK")
    assert 1 <= count < 5000 and count == len(seen), (count, len(seen))
    assert answers.endswith(b'"messages": 1}'), "every answer sent is whole"


def test_a_header_that_would_split_the_answer_is_never_sent():
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"x-echo", b"a\r\nset-cookie: evil=1"), (b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"{}"})

    with listening_on(app) as sock, socket.create_connection(sock.getsockname(), timeout=10) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = read_until_closed(conn)
    assert answer.startswith(b"HTTP/1.1 500") and b"evil" not in answer, answer


def test_a_client_that_ends_its_side_after_its_request_is_still_answered(bare):
    seen, port = bare
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"POST /half HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
        conn.shutdown(socket.SHUT_WR)
        answer = read_until_closed(conn)
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b'{"length": 3, "messages": 1}'), answer


def test_the_absolute_form_routes_by_its_path_and_a_fragment_is_dropped(bare):
    seen, port = bare
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        for target in (b"http://registry:8081/subjects/a%2Fb?x=1", b"/subjects/c?y=2#part", b"http://registry"):
            assert exchange(conn, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.1 200")
        answer = exchange(conn, b"GET http://[bad HTTP/1.1\r\nHost: x\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 400"), answer
    assert [(s["raw_path"], s["path"], s["query_string"]) for s in seen] == [
        (b"/subjects/a%2Fb", "/subjects/a/b", b"x=1"), (b"/subjects/c", "/subjects/c", b"y=2"), (b"/", "/", b"")]


class _ReadyOrNot:
    """A bare ASGI app answering `app <path>` and the body it read (after 0.3 s for
    `/slow`), and an `at_once` for it that answers `/ready` itself, fails on `/broken`
    and leaves the rest to the app; each records what it was given."""

    def __init__(self) -> None:
        self.app_paths: list[str] = []
        self.asked: list[bytes] = []
        self.begun = 0  # requests the app began to answer

    async def __call__(self, scope, receive, send) -> None:
        self.begun += 1
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["path"] == "/slow":
            await asyncio.sleep(0.3)
        self.app_paths.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"app " + scope["path"].encode() + (b" " + body if body else b"")})

    def at_once(self, method: bytes, raw_path: bytes, query: bytes, headers: list[tuple[bytes, bytes]],
                body: bytes) -> tuple[bytes, bytes] | None:
        self.asked.append(method + b" " + raw_path + (b" " + body if body else b""))
        if raw_path == b"/broken":
            raise RuntimeError("a bug in at_once")
        if raw_path != b"/ready":
            return None
        return ok_head([(b"content-type", b"text/plain")], 7), b"at once"


def body_of(answer: bytes) -> bytes:
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
    return answer.partition(b"\r\n\r\n")[2]


def test_a_request_read_whole_is_answered_at_once_and_every_other_by_the_app():
    app = _ReadyOrNot()
    with listening_on(app, at_once=app.at_once) as sock:
        with socket.create_connection(sock.getsockname(), timeout=10) as conn:
            def ask(request: bytes) -> bytes:
                return body_of(exchange(conn, request))

            assert ask(b"GET /ready HTTP/1.1\r\nHost: x\r\n\r\n") == b"at once"
            assert ask(b"POST /ready HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello") == b"at once"
            assert ask(b"GET /other?q=1 HTTP/1.1\r\nHost: x\r\n\r\n") == b"app /other"
            assert ask(b"GET /broken HTTP/1.1\r\nHost: x\r\n\r\n") == b"app /broken"
            # Not asked: a body in chunks, a client waiting for 100-continue, other methods.
            assert ask(b"POST /ready HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                       b"2\r\nab\r\n0\r\n\r\n") == b"app /ready ab"
            conn.sendall(b"POST /ready HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
            assert conn.recv(1024).startswith(b"HTTP/1.1 100")
            assert ask(b"cd") == b"app /ready cd"
            assert ask(b"PUT /ready HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n") == b"app /ready"
            head = exchange(conn, b"HEAD /ready HTTP/1.1\r\nHost: x\r\n\r\n", head_only=True)
            assert head.startswith(b"HTTP/1.1 200") and head.endswith(b"\r\n\r\n"), head
            # Asked, but a body that goes on past the read holding its head goes to the app whole.
            begun = app.begun
            conn.sendall(b"POST /ready HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nabc")
            deadline = time.monotonic() + 10
            while app.begun == begun:  # the rest is sent only once the app has the request
                assert time.monotonic() < deadline, "the app never got the request"
                time.sleep(0.01)
            assert ask(b"def") == b"app /ready abcdef"
            assert ask(b"GET /ready HTTP/1.1\r\nHost: x\r\n\r\n") == b"at once", "still open"
            conn.sendall(b"GET /ready HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
            upgraded = read_until_closed(conn)
            assert upgraded.endswith(b"app /ready") and b"connection: close" in upgraded.lower(), upgraded
        # Nor a connection closing after it, nor HTTP/1.0: the app frames those answers.
        for request in (b"GET /ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", b"GET /ready HTTP/1.0\r\n\r\n"):
            with socket.create_connection(sock.getsockname(), timeout=10) as conn:
                conn.sendall(request)
                answer = read_until_closed(conn)
                assert answer.endswith(b"app /ready") and b"connection: close" in answer.lower(), answer
    assert app.asked == [b"GET /ready", b"POST /ready hello", b"GET /other", b"GET /broken", b"GET /ready"], (
        "asked only about requests read whole with their heads")
    assert app.app_paths == ["/other", "/broken"] + ["/ready"] * 8


def test_a_get_behind_one_under_way_waits_its_turn():
    app = _ReadyOrNot()
    with listening_on(app, at_once=app.at_once) as sock, socket.create_connection(sock.getsockname(), timeout=10) as conn:
        conn.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /ready HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while data.count(b"HTTP/1.1 200") < 2 or not data.endswith(b"app /ready"):
            chunk = conn.recv(65536)
            assert chunk, data
            data += chunk
        assert data.index(b"app /slow") < data.index(b"app /ready"), data
    assert app.asked == [b"GET /slow"], "the second was queued behind the first, so the app answered it"


def test_a_connection_answered_at_once_is_kept_while_in_use_and_closed_when_idle(monkeypatch):
    from registry.http import listener

    monkeypatch.setattr(listener, "_IDLE_TIMEOUT", 1.0)
    app = _ReadyOrNot()
    with listening_on(app, at_once=app.at_once) as sock, socket.create_connection(sock.getsockname(), timeout=10) as conn:
        began = time.monotonic()
        while time.monotonic() - began < 3.5:  # well past the timeout, never idle that long
            assert body_of(exchange(conn, b"GET /ready HTTP/1.1\r\nHost: x\r\n\r\n")) == b"at once"
            time.sleep(0.1)
        quiet = time.monotonic()
        assert read_until_closed(conn) == b""
        assert time.monotonic() - quiet < 5, "closed by the sweep once idle"
    assert not app.app_paths


def test_the_registrys_answers_at_once_are_its_own(served):
    node, port = served
    given: list[bytes] = []
    answer_at_once = node.bridge.answer_at_once

    def recording(method: bytes, raw_path: bytes, query: bytes, headers: list[tuple[bytes, bytes]],
                  body: bytes) -> tuple[bytes, bytes] | None:
        answer = answer_at_once(method, raw_path, query, headers, body)
        if answer is not None:
            given.append(method + b" " + raw_path + (b"?" + query if query else b""))
        return answer

    assert node.post("/subjects/k/versions", {"schema": SCHEMA}).status == 200
    lookup = json.dumps({"schema": SCHEMA}).encode()
    requests = [(b"GET", target, b"") for target in (b"/schemas/ids/1", b"/subjects", b"/subjects/k/versions/latest",
                                                      b"/config", b"/subjects/k/versions?x=1")]
    requests += [(b"POST", b"/subjects/k", lookup), (b"POST", b"/subjects/k/versions", lookup)]
    with listening_on(node.bridge, at_once=recording) as sock:
        for method, target, body in requests:
            framing = b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body) if body else b""
            # HTTP/1.0 is never answered at once: the whole way in, Flask where nothing is kept.
            with socket.create_connection(sock.getsockname(), timeout=10) as conn:
                conn.sendall(method + b" " + target + b" HTTP/1.0\r\n" + framing + b"\r\n" + body)
                reference = read_until_closed(conn)
            with socket.create_connection(sock.getsockname(), timeout=10) as conn:
                request = method + b" " + target + b" HTTP/1.1\r\nHost: x\r\n" + framing + b"\r\n" + body
                answers = [exchange(conn, request) for _ in range(2)]
            if target == b"/subjects/k/versions":
                assert not given[-1].endswith(target), "a registration is never answered at once"
            else:
                assert given[-1] == method + b" " + target, f"{target!r} was answered at once (kept since its first answer)"
            for answer in answers:
                head, _, answered = answer.partition(b"\r\n\r\n")
                ref_head, _, ref_body = reference.partition(b"\r\n\r\n")
                assert answered == ref_body and head.startswith(b"HTTP/1.1 200 OK\r\n"), (target, answer, reference)
                assert _header(head, b"content-type") == _header(ref_head, b"content-type")
                assert _header(head, b"content-length") == b"%d" % len(answered)


def _header(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None
