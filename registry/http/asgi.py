"""Serving the Flask (WSGI) app over ASGI, so that routing sees the raw request path.

Granian's WSGI interface gives apps only the percent-decoded path, which cannot tell
the subject `a/b` (sent as `a%2Fb`) from two path segments. Its ASGI interface
carries `raw_path`. This bridge answers the `GET /schemas/ids/{id}` fast path and
every other read directly on the event loop (reads only touch the in-memory cache),
and runs writes, which wait on the log, through the Flask app on a pool of threads.
Flask routes on the path exactly as the client sent it (still percent-encoded, in
`PATH_INFO`); the subject converter decodes each segment. The original request
target is also in `RAW_URI`, for forwarding.

Hand-written because the general bridges (asgiref, a2wsgi) measured 3x slower here
(bench/wsgi_servers.py: uvicorn+a2wsgi 2,085 req/s) and cannot put the fast path on
the event loop.
"""
from __future__ import annotations

import asyncio
import io
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson

import re
from collections.abc import Callable
from dataclasses import dataclass

from registry.http.bodies import CONTENT_TYPE
from registry.http.fast_path import SchemaByIdFastPath

_FAST_HEADERS = [(b"content-type", CONTENT_TYPE.encode())]
_NEVER_BLOCK = frozenset({"GET", "HEAD", "OPTIONS"})
# The environ key holding when the request came in (time.monotonic()): every wait it
# causes (an election, forwarding) counts from then.
RECEIVED = "registry.received"
# The body reaches the app whole, with CONTENT_LENGTH set to its size: how it was framed
# on the wire (chunked, say) is no longer true of it, and Werkzeug reads a request that
# says "Transfer-Encoding: chunked" as having no length.
_BODY_FRAMING = frozenset({"CONTENT_LENGTH", "TRANSFER_ENCODING"})


@dataclass(frozen=True)
class Limits:
    """What one request may cost before it reaches the app; each refusal is a 4xx/5xx
    with Confluent's error body (`_Refused`)."""

    max_request_bytes: int = 16 * 1024 * 1024  # one body (413)
    max_inflight_bytes: int = 64 * 1024 * 1024  # all bodies being read or served at once (503)
    body_timeout: float = 30.0  # seconds a body may take to arrive (408)
    # The request target, path and query (414). The HTTP parser itself answers 414 with
    # no body past 64 KiB; below that this limit answers first, with Confluent's body.
    max_target_bytes: int = 16 * 1024
    max_header_bytes: int = 64 * 1024  # all header names and values together (431)


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class AsgiBridge:
    """An ASGI app serving `wsgi_app` with `threads` worker threads, within `limits`."""

    def __init__(self, wsgi_app: Any, fast_path: SchemaByIdFastPath, threads: int,
                 limits: Limits = Limits(), on_close: Callable[[], None] = lambda: None) -> None:
        self._wsgi_app = wsgi_app
        self._fast_path = fast_path
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="http")
        self._limits = limits
        self._inflight = 0  # body bytes held by requests under way (event loop only)
        self._on_close = on_close

    def close(self) -> None:
        """Finish the requests under way, then stop the threads. Blocks until they end."""
        self._pool.shutdown(wait=True)
        self._on_close()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        held = [0]
        try:
            await self._serve(scope, receive, send, held)
        except _Refused as refused:
            await _send_error(send, refused.status, refused.message)
        finally:
            self._inflight -= held[0]

    async def _serve(self, scope: dict[str, Any], receive: Any, send: Any, held: list[int]) -> None:
        received = time.monotonic()
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode("utf-8")
        query: bytes = scope["query_string"]
        if len(raw_path) + len(query) > self._limits.max_target_bytes:
            raise _Refused(414, f"The request target is longer than {self._limits.max_target_bytes} bytes")
        if sum(len(n) + len(v) for n, v in scope["headers"]) > self._limits.max_header_bytes:
            raise _Refused(431, f"The request headers are larger than {self._limits.max_header_bytes} bytes")
        path = origin_form(raw_path.decode("latin-1"))
        if not path.startswith("/"):
            raise _Refused(400, "The request target must be a path starting with /")
        if path.startswith("//"):
            # An empty first segment names no route; Werkzeug would strip it and serve
            # the path without it, so refuse it here.
            raise _Refused(404, "HTTP 404 Not Found")
        body = self._fast_path.answer(scope["method"], path, query, scope["headers"])
        if body is not None:
            await send({"type": "http.response.start", "status": 200,
                        "headers": _FAST_HEADERS + [(b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        request_body = await self._read_body(scope, receive, held)
        environ = self._environ(scope, path, request_body)
        environ[RECEIVED] = received
        if scope["method"] in _NEVER_BLOCK:
            # Reads only look at the in-memory cache and never wait on the log, so they
            # run here; a hand-off to a thread would cost more than the read itself.
            status, headers, response_body = self._call_wsgi(environ)
        else:
            status, headers, response_body = await asyncio.get_running_loop().run_in_executor(
                self._pool, self._call_wsgi, environ)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": response_body})

    async def _read_body(self, scope: dict[str, Any], receive: Any, held: list[int]) -> bytes:
        """The whole request body. Raises _Refused when it is larger than allowed, when
        all bodies in flight would exceed their budget, or when it stops arriving."""
        limits = self._limits
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > limits.max_request_bytes:
                raise _Refused(413, f"Request body larger than the limit of {limits.max_request_bytes} bytes")
        chunks: list[bytes] = []
        deadline = asyncio.get_running_loop().time() + limits.body_timeout
        while True:
            remaining = deadline - asyncio.get_running_loop().time()
            try:
                message = await asyncio.wait_for(receive(), max(remaining, 0))
            except asyncio.TimeoutError:
                raise _Refused(408, f"The request body did not arrive within {limits.body_timeout:g} s") from None
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            if chunk:
                if held[0] + len(chunk) > limits.max_request_bytes:
                    raise _Refused(413, f"Request body larger than the limit of {limits.max_request_bytes} bytes")
                if self._inflight + len(chunk) > limits.max_inflight_bytes:
                    raise _Refused(503, "Too many request bodies in flight; retry shortly")
                self._inflight += len(chunk)
                held[0] += len(chunk)
                chunks.append(chunk)
            if not message.get("more_body"):
                break
        return b"".join(chunks)

    @staticmethod
    def _environ(scope: dict[str, Any], path: str, body: bytes) -> dict[str, Any]:
        query: bytes = scope["query_string"]
        server = scope.get("server") or ("localhost", 80)
        client = scope.get("client") or ("", 0)
        raw_uri = path + ("?" + query.decode("latin-1") if query else "")
        environ: dict[str, Any] = {
            "REQUEST_METHOD": scope["method"],
            "SCRIPT_NAME": "",
            "PATH_INFO": path,
            "RAW_URI": raw_uri,
            "QUERY_STRING": query.decode("latin-1"),
            "SERVER_NAME": str(server[0]),
            "SERVER_PORT": str(server[1]),
            "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
            "REMOTE_ADDR": str(client[0]),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": scope.get("scheme", "http"),
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
            "CONTENT_LENGTH": str(len(body)),
        }
        for name, value in scope["headers"]:
            key = name.decode("latin-1").upper().replace("-", "_")
            text = value.decode("latin-1")
            if key == "CONTENT_TYPE":
                environ["CONTENT_TYPE"] = text
            elif key not in _BODY_FRAMING:
                key = "HTTP_" + key
                environ[key] = f"{environ[key]},{text}" if key in environ else text
        return environ

    def _call_wsgi(self, environ: dict[str, Any]) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Run the WSGI app on a pool thread; collect status, headers and body."""
        started: list[Any] = []

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            started[:] = [status, headers]
            return lambda data: None  # the legacy write() callable; Flask never uses it

        result = self._wsgi_app(environ, start_response)
        try:
            body = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        status, headers = started
        return (int(status.split(" ", 1)[0]),
                [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers], body)


# RFC 9112 3.2.2: an absolute-form request target, `scheme://authority/path`.
_ABSOLUTE_FORM = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")


def origin_form(target: str) -> str:
    """The path a request names: its target, less scheme and authority when the client
    sent the absolute form (as to a proxy). Any other target is routed exactly as sent,
    so `/mode/x://y/mode` names a subject `x:` under `/mode` (not found), never `/mode`.
    """
    if target.startswith("/"):
        return target
    match = _ABSOLUTE_FORM.match(target)
    if match is None:
        return target
    rest = target[match.end():]
    return rest if rest.startswith("/") else "/" + rest


async def _send_error(send: Any, status: int, message: str) -> None:
    body = orjson.dumps({"error_code": status, "message": message})
    await send({"type": "http.response.start", "status": status,
                "headers": _FAST_HEADERS + [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
