"""Drive the registry's real ASGI front end in-process, for tests that need no socket.

    with NodeClient() as client:               # a single node on the in-memory log
        client.post("/subjects/s/versions", {"schema": '"string"'}).json()

Requests go through exactly what the listeners call: a GET or a POST read whole first
to `AsgiBridge.answer_at_once` (the answers kept ready), then, as every other request,
`AsgiBridge` itself (raw path, id fast path, body limits), then Flask. Paths are sent
as raw bytes, percent-encoding and all.
"""
from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from registry.http.app import build_asgi
from registry.http.asgi import AsgiBridge
from registry.http.listener import AtOnce
from registry.node import Node, build_node
from registry.settings import load_settings
from store.log import Log
from store.memory_log import MemoryLog

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


class AsgiClient:
    """Synchronous requests to an ASGI app (and its `at_once`, as `Listeners` takes it).
    Not thread-safe; one request at a time."""

    def __init__(self, app: Any, at_once: AtOnce | None = None) -> None:
        self.app = app
        self.at_once = at_once

    def request(self, method: str, target: str, body: bytes | str | dict | None = None,
                headers: dict[str, str] | list[tuple[str, str]] | None = None, chunks: list[bytes] | None = None,
                more_after_last: bool = False, extensions: dict[str, Any] | None = None) -> Answer:
        """One request. `chunks` sends the body in pieces; `more_after_last` says more
        would follow the last one, which never comes (a body that stops arriving).
        `extensions` go in the ASGI scope (`tls`, as an https listener sets it)."""
        if isinstance(body, dict):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        raw = target.encode("latin-1") if isinstance(target, str) else target
        path, _, query = raw.partition(b"?")
        # A list of pairs sends a header several times (a dict, once each).
        sent = list(headers.items() if isinstance(headers, dict) else headers or [])
        if body is not None and not any(k.lower() == "content-type" for k, _ in sent):
            sent.append(("Content-Type", CONTENT_TYPE))
        framing = {"content-length", "transfer-encoding"}
        if (body is not None or chunks is not None) and not any(k.lower() in framing for k, _ in sent):
            # As any HTTP/1.1 client frames a body (without, the server reads none).
            sent.append(("Content-Length", str(len(body) if chunks is None else sum(map(len, chunks)))))
        messages = ([{"type": "http.request", "body": c, "more_body": more_after_last or i < len(chunks) - 1}
                     for i, c in enumerate(chunks)] if chunks is not None
                    else [{"type": "http.request", "body": body or b"", "more_body": False}])
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
            "scheme": "http", "path": path.decode("latin-1"), "raw_path": path, "query_string": query,
            "root_path": "", "server": ("127.0.0.1", 8081), "client": ("127.0.0.1", 50000),
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in sent],
        }
        if extensions is not None:
            scope["extensions"] = extensions
        if (self.at_once is not None and method in ("GET", "POST") and chunks is None
                and not any(k.lower() in _NOT_AT_ONCE for k, _ in sent)):
            # As the listener asks it: the body whole, on a connection staying open.
            answer = self.at_once(method.encode(), path, query, scope["headers"], body or b"")
            if answer is not None:
                return _parsed(*answer)
        started: dict[str, Any] = {}
        parts: list[bytes] = []

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop(0)
            await asyncio.sleep(3600)  # the client sent everything: nothing more arrives
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                started.update(message)
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))

        asyncio.run(self.app(scope, receive, send))
        return Answer(started["status"],
                      {k.decode("latin-1"): v.decode("latin-1") for k, v in started.get("headers", [])},
                      b"".join(parts))

    def get(self, target: str, **kw: Any) -> Answer:
        return self.request("GET", target, **kw)

    def post(self, target: str, body: Any = None, **kw: Any) -> Answer:
        return self.request("POST", target, body, **kw)

    def put(self, target: str, body: Any = None, **kw: Any) -> Answer:
        return self.request("PUT", target, body, **kw)

    def delete(self, target: str, **kw: Any) -> Answer:
        return self.request("DELETE", target, **kw)


# What keeps the listener from asking `at_once` (besides a body in pieces).
_NOT_AT_ONCE = frozenset({"transfer-encoding", "expect", "upgrade", "connection"})


def _parsed(head: bytes, body: bytes) -> Answer:
    """An answer given at once, read back from the wire's bytes."""
    lines = head.split(b"\r\n")
    assert lines[0].startswith(b"HTTP/1.1 ") and head.endswith(b"\r\n\r\n"), head
    headers = dict(line.decode("latin-1").split(": ", 1) for line in lines[1:] if line)
    assert int(headers["content-length"]) == len(body), "the head frames the body"
    return Answer(int(lines[0].split()[1]), headers, body)


class NodeClient(AsgiClient):
    """A node (a single one by default, on the in-memory log) and a client for its front end."""

    def __init__(self, log: Log | None = None, **properties: str) -> None:
        self.node: Node = build_node(load_settings(environ={}, overrides=properties), log or MemoryLog())
        assert self.node.writer.wait_ready(5), "the node must catch up with its log"
        self.bridge: AsgiBridge = build_asgi(self.node)
        super().__init__(self.bridge, self.bridge.answer_at_once)

    def close(self) -> None:
        self.bridge.close()
        self.node.close()

    def __enter__(self) -> NodeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
