"""Request bodies over raw sockets to a real registry: a body framed by Content-Length
is read to its declared end and no further (the bridge does not wait for a separate
end-of-body message), and the connection goes on with the next request in order,
pipelined or not, as it does after a chunked body."""
from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

from tests.api.support import RegistryProcess, register, unique_record


def answers(conn: socket.socket, count: int) -> list[bytes]:
    """Read `count` whole answers (Content-Length framed) from `conn`."""
    data, out = b"", []
    while len(out) < count:
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            assert chunk, f"the server closed the connection after {len(out)} answers: {data!r}"
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(rest) < length:
            chunk = conn.recv(65536)
            assert chunk, "the server closed the connection mid-answer"
            rest += chunk
        out.append(head + b"\r\n\r\n" + rest[:length])
        data = rest[length:]
    return out


def post(path: str, body: bytes) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def status_and_body(answer: bytes) -> tuple[int, object]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"connection: close" not in head.lower(), head
    return int(head.split(b" ")[1]), json.loads(body)


def test_bodies_of_a_declared_length_keep_the_connection_going(registry: RegistryProcess, subject: str):
    schema = unique_record("framing")
    schema_id = register(registry, subject, schema)
    body = json.dumps({"schema": schema}).encode()
    address = urlsplit(registry.url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as conn:
        # One after another on one connection: lookup, read, lookup.
        for request in (post(f"/subjects/{subject}", body),
                        f"GET /subjects/{subject}/versions/1 HTTP/1.1\r\nHost: x\r\n\r\n".encode(),
                        post(f"/subjects/{subject}", body)):
            conn.sendall(request)
            status, answer = status_and_body(answers(conn, 1)[0])
            assert status == 200 and answer["id"] == schema_id, answer
        # Pipelined: the next request's bytes follow the body at once; they are the next
        # request, not more body.
        conn.sendall(post(f"/subjects/{subject}", body) + f"GET /schemas/ids/{schema_id}/versions HTTP/1.1\r\n"
                     "Host: x\r\n\r\n".encode() + post(f"/subjects/{subject}", body))
        first, second, third = (status_and_body(a) for a in answers(conn, 3))
        assert first[0] == 200 and first[1]["id"] == schema_id, first
        assert second == (200, [{"subject": subject, "version": 1}]), second
        assert third[0] == 200 and third[1]["version"] == 1, third
        # A body that arrives in two pieces is waited for to its declared end.
        request = post(f"/subjects/{subject}", body)
        conn.sendall(request[:-10])
        time.sleep(0.2)
        conn.sendall(request[-10:])
        status, answer = status_and_body(answers(conn, 1)[0])
        assert status == 200 and answer["id"] == schema_id, answer
        # A chunked body, then one of a declared length, on the same connection.
        chunked = (f"POST /subjects/{subject} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n").encode()
        for piece in (body[:20], body[20:]):
            chunked += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        conn.sendall(chunked + b"0\r\n\r\n" + post(f"/subjects/{subject}", body))
        for answer in answers(conn, 2):
            status, decoded = status_and_body(answer)
            assert status == 200 and decoded["id"] == schema_id, decoded
