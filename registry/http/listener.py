"""Every listener the registry serves, http and https: HTTP/1.1 on an event loop of its own.

    listeners = Listeners(bridge, [(socket_, ssl_context_or_None), ...])
    listeners.start()          # a uvloop event loop of their own, on a thread of the worker process
    listeners.close()          # stop accepting, let requests under way finish, close

Requests are read by `httptools` (llhttp, the C parser Node.js uses; uvicorn's too) in an
asyncio protocol on uvloop, and handed to the `AsgiBridge`, so the fast path, limits,
authentication, authorization, metrics and audit are identical on every listener.
What is hand-written here is the loop between the transport, the parser and the ASGI
app: keep-alive and pipelining, 100-continue, HEAD, response framing, flow control,
limits on a request's head and how long it may take to arrive.

Why not granian's own HTTP server, which served the first http listener before (it is
still the process supervisor, `registry.http.server`): each request, and each body
it hands over, crosses from its Rust runtime's thread to a Python thread of its own and
then to the event loop, three threads taking turns on the interpreter. On this 2-core
machine that cost more than parsing HTTP in Python here: a bare ASGI app answering a
GET served 51-57k requests a second here against granian's 30-33k, and the registry's
id path 39-59k against 30-39k; a bare app appending each body to Kafka spent 56-59 us
of CPU a write against 132-142 (3 rounds alternating). uvicorn serves the same protocol
but spent more of its own per request (21-24k GETs a second). Nor granian's TLS: it
never tells the app who the client is (no ASGI `tls` extension, its issue #788), and
the principal of an mTLS caller is its certificate's subject.

Sockets are bound by the supervisor before the worker is forked (`registry.http.server`),
so a busy port fails at start and a restarted worker serves the same sockets.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import socket
import ssl
import threading
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

import httptools
import orjson
import uvloop

from registry.http.security.certificates import subject_of

log = logging.getLogger(__name__)

App = Any
# As granian's buffer was: large enough that over-long targets and headers reach the
# bridge, which answers 414/431 with Confluent's body; past it, 431 here.
_MAX_HEAD_BYTES = 1024 * 1024
# Body bytes a request may have buffered, not yet taken by the app, before reading
# pauses (and pipelined requests: reading pauses while one waits behind another).
_BUFFER_BYTES = 64 * 1024
_IDLE_TIMEOUT = 75.0  # for a request head to arrive whole, on a new or kept-alive connection
_SWEEP_SECONDS = 1.0  # how often connections are checked against it
_HANDSHAKE_TIMEOUT = 10.0
_TLS_VERSIONS = {"TLSv1.2": 0x0303, "TLSv1.3": 0x0304}
_ERROR_HEADERS = [(b"content-type", b"application/vnd.schemaregistry.v1+json")]


class Listeners:
    """Serves `app` on already bound `sockets` (each with its TLS context, or None for
    plain http) from one event loop on a daemon thread. Thread-safe start/close."""

    def __init__(self, app: App, sockets: list[tuple[socket.socket, ssl.SSLContext | None]]) -> None:
        self._app = app
        self._sockets = sockets
        self._loop = uvloop.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="listeners", daemon=True)
        self._servers: list[asyncio.Server] = []
        self._connections: set[_Connection] = set()
        self._busy = 0  # requests under way (loop thread only)
        self._idle: asyncio.Future[None] | None = None
        self._sweeper: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start accepting. Blocks until every socket is being served."""
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()

    def close(self, timeout: float = 10.0) -> None:
        """Stop accepting, wait up to `timeout` s for requests under way, then close every
        connection and stop the loop. Blocks until done."""
        if self._thread.is_alive():
            try:
                asyncio.run_coroutine_threadsafe(self._stop(timeout), self._loop).result(timeout + 5)
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(timeout=5)
        if not self._thread.is_alive() and not self._loop.is_closed():
            self._servers.clear()
            self._loop.close()  # its handles refer back to these objects: no cycle left to collect

    async def _start(self) -> None:
        for sock, context in self._sockets:
            tls = context is not None
            server = await self._loop.create_server(
                lambda tls=tls: _Connection(self, tls), sock=sock, ssl=context, backlog=2048,
                ssl_handshake_timeout=_HANDSHAKE_TIMEOUT if tls else None)
            self._servers.append(server)
        self._sweeper = self._loop.create_task(self._sweep())

    async def _stop(self, timeout: float) -> None:
        for server in self._servers:
            server.close()
        if self._busy:
            self._idle = self._loop.create_future()
            try:
                await asyncio.wait_for(asyncio.shield(self._idle), timeout)
            except asyncio.TimeoutError:
                log.warning("closing %d connections with requests still under way", self._busy)
        if self._sweeper is not None:
            self._sweeper.cancel()
        for connection in list(self._connections):
            connection.close()
        await asyncio.sleep(0)  # their connection_lost callbacks

    async def _sweep(self) -> None:
        """Close the connections that have waited longer than _IDLE_TIMEOUT for a whole
        request head (one timer for all of them: a timer per request costs more)."""
        while True:
            await asyncio.sleep(_SWEEP_SECONDS)
            expired = self._loop.time() - _IDLE_TIMEOUT
            for connection in [c for c in self._connections if c.waiting_since is not None]:
                if connection.waiting_since is not None and connection.waiting_since < expired:
                    connection.close()

    def _began(self) -> None:
        self._busy += 1

    def _ended(self) -> None:
        self._busy -= 1
        if not self._busy and self._idle is not None and not self._idle.done():
            self._idle.set_result(None)


class _Request:
    """One request as the parser reads it: its scope, and its body as it arrives."""

    __slots__ = ("scope", "keep_alive", "expects_continue", "chunks", "buffered", "complete", "waiter")

    def __init__(self, scope: dict[str, Any], keep_alive: bool, expects_continue: bool) -> None:
        self.scope = scope
        self.keep_alive = keep_alive
        self.expects_continue = expects_continue
        self.chunks: list[bytes] = []
        self.buffered = 0
        self.complete = False  # the whole body has been read
        self.waiter: asyncio.Future[None] | None = None  # the app waiting for more body

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)


class _Connection(asyncio.Protocol):
    """One client connection: requests read as they arrive, answered one after the other
    (HTTP/1.1 keep-alive; pipelined requests wait their turn)."""

    def __init__(self, listeners: Listeners, tls: bool) -> None:
        self._listeners = listeners
        self._loop = listeners._loop
        self._tls_on = tls
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._tls: dict[str, Any] | None = None
        self._client: tuple[str, int] | None = None
        self._server: tuple[str, int] | None = None
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._in_head = False  # a request's head is being read
        self._head_bytes = 0
        self._incoming: _Request | None = None  # the request whose body is being read
        self._queue: collections.deque[_Request] = collections.deque()  # [0] is being answered
        self._serving = False
        self._reading = True
        self._lost = False
        self._refused = False  # the parser failed: nothing more is read
        self._drained: asyncio.Future[None] | None = None  # while the transport's buffer is full
        self.waiting_since: float | None = None  # waiting for a request head (the idle sweep)

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's own transport classes
        self._listeners._connections.add(self)
        raw = transport.get_extra_info("socket")
        if raw is not None and raw.family in (socket.AF_INET, socket.AF_INET6):
            # Without it a response's second segment waits for the client's delayed ACK.
            try:
                raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        if self._tls_on:
            ssl_object = transport.get_extra_info("ssl_object")
            self._tls = _tls_extension(ssl_object) if ssl_object is not None else None
        self._client = _pair(transport.get_extra_info("peername"))
        self._server = _pair(transport.get_extra_info("sockname"))
        self.waiting_since = self._loop.time()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._refused = True  # nothing more is parsed
        self._parser = None  # type: ignore[assignment]  # it refers back to this protocol: no cycle to collect
        self._listeners._connections.discard(self)
        for request in self._queue:
            request.wake()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            # An upgrade (or CONNECT) is not served: its request is answered, then the
            # connection closes (what follows the head is not HTTP).
            self._refused = True
            if self._queue:
                self._queue[-1].keep_alive = False
            else:
                self._refuse(400, "Bad request: protocol upgrades are not supported")
            return
        except httptools.HttpParserError as exc:
            self._refused = True
            if self._incoming is not None:
                self._incoming.wake()  # its body will not come: the app is told it is gone
            self._refuse(400, f"Bad request: {exc}")
            return
        if self._in_head:
            self._head_bytes += len(data)
            if self._head_bytes > _MAX_HEAD_BYTES:
                self._refused = True
                self._refuse(431, f"Request header fields too large: the head exceeds {_MAX_HEAD_BYTES} bytes")

    def pause_writing(self) -> None:
        if self._drained is None or self._drained.done():
            self._drained = self._loop.create_future()

    def resume_writing(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    # httptools' callbacks

    def on_message_begin(self) -> None:
        self._in_head = True
        self._head_bytes = 0
        self._url = b""
        self._headers = []

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        self._in_head = False
        self.waiting_since = None
        parser = self._parser
        raw_path, _, query = self._url.partition(b"?")
        method = parser.get_method().decode("ascii")
        version = parser.get_http_version()
        scope: dict[str, Any] = {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": version, "method": method,
            "scheme": "https" if self._tls_on else "http",
            "path": unquote(raw_path.decode("latin-1")), "raw_path": raw_path, "query_string": query,
            "root_path": "", "headers": self._headers, "client": self._client, "server": self._server,
        }
        if self._tls is not None:
            scope["extensions"] = {"tls": self._tls}
        expects = version == "1.1" and any(
            name == b"expect" and value.lower() == b"100-continue" for name, value in self._headers)
        request = _Request(scope, parser.should_keep_alive(), expects)
        self._incoming = request
        self._queue.append(request)
        if len(self._queue) > 1:
            self._pause()  # pipelined: read on once the ones ahead are answered
        if not self._serving:
            self._serving = True
            self._loop.create_task(self._serve())

    def on_body(self, body: bytes) -> None:
        request = self._incoming
        if request is None:
            return
        request.chunks.append(body)
        request.buffered += len(body)
        request.wake()
        if request.buffered > _BUFFER_BYTES:
            self._pause()

    def on_message_complete(self) -> None:
        request = self._incoming
        if request is None:
            return
        self._incoming = None
        request.complete = True
        request.wake()

    # serving

    def _pause(self) -> None:
        if self._reading and self._transport is not None:
            self._reading = False
            self._transport.pause_reading()

    def _resume(self) -> None:
        if not self._reading and not self._lost and self._transport is not None:
            self._reading = True
            self._transport.resume_reading()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    async def _serve(self) -> None:
        """Answer the queued requests in order; close when one says so."""
        listeners = self._listeners
        try:
            while self._queue and not self._lost:
                request = self._queue[0]
                listeners._began()
                try:
                    keep = await self._exchange(request)
                finally:
                    listeners._ended()
                self._queue.popleft()
                if not keep:
                    self.close()
                    return
                if len(self._queue) <= 1 and (not self._queue or self._queue[0].buffered <= _BUFFER_BYTES):
                    self._resume()
            if self._refused and not self._lost and not self._queue:
                self.close()  # the request after the last one answered could not be read
        except Exception:  # a bug of ours must not take the listener down with it
            log.exception("error serving a connection")
            self.close()
        finally:
            self._serving = False
            if not self._queue:
                self.waiting_since = self._loop.time()

    async def _exchange(self, request: _Request) -> bool:
        """Run the app for `request`; True when the connection may carry the next one."""
        transport = self._transport
        assert transport is not None
        scope = request.scope
        head_only = scope["method"] == "HEAD"
        state: dict[str, Any] = {"start": None, "sent": False, "chunked": False, "keep": True,
                                 "ended": False, "body_done": False}

        async def receive() -> dict[str, Any]:
            if state["body_done"] or self._lost:
                return {"type": "http.disconnect"}
            while not request.chunks and not request.complete:
                if self._refused:
                    return {"type": "http.disconnect"}
                if request.expects_continue:
                    request.expects_continue = False
                    transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                request.waiter = self._loop.create_future()
                self._resume()
                await request.waiter
                if self._lost:
                    return {"type": "http.disconnect"}
            body = b"".join(request.chunks) if len(request.chunks) != 1 else request.chunks[0]
            request.chunks.clear()
            request.buffered = 0
            more = not request.complete
            if not more:
                state["body_done"] = True
            elif self._queue and self._queue[0] is request and len(self._queue) == 1:
                self._resume()
            return {"type": "http.request", "body": body, "more_body": more}

        async def send(message: dict[str, Any]) -> None:
            kind = message["type"]
            if kind == "http.response.start":
                state["start"] = message
                return
            if kind != "http.response.body" or state["start"] is None or state["ended"]:
                return
            body = message.get("body", b"")
            more = message.get("more_body", False)
            out: list[bytes] = []
            if not state["sent"]:
                out.append(self._head(request, state, len(body), more))
                state["sent"] = True
            if state["chunked"]:
                if body and not head_only:
                    out.append(b"%x\r\n%s\r\n" % (len(body), body))
                if not more:
                    out.append(b"0\r\n\r\n")
            elif body and not head_only:
                out.append(body)
            if not more:
                state["ended"] = True
            if not self._lost:
                transport.write(b"".join(out) if len(out) > 1 else out[0])  # one write: one segment
                if self._drained is not None and not self._drained.done():
                    await self._drained

        try:
            await self._listeners._app(scope, receive, send)
        except Exception:
            log.exception("error serving %s %s", scope["method"], scope["path"])
            if state["sent"]:
                return False  # the answer broke off
            state["start"] = None
            await _answer_error(send, 500, 50001, "Internal error in the schema registry")
            return False
        if not state["ended"]:
            if not state["sent"]:
                log.error("no answer to %s %s", scope["method"], scope["path"])
                await _answer_error(send, 500, 50001, "Internal error in the schema registry")
            return False
        return state["keep"] and not self._lost

    def _head(self, request: _Request, state: dict[str, Any], length: int, more: bool) -> bytes:
        """The status line and headers of the answer to `request` (decides its framing and
        whether the connection goes on)."""
        start = state["start"]
        status = start["status"]
        headers = start.get("headers", ())
        parts = [b"HTTP/1.1 %d %s\r\n" % (status, _reason(status))]
        framed = False
        for name, value in headers:
            if not framed and name.lower() in (b"content-length", b"transfer-encoding"):
                framed = True
            parts.append(b"%s: %s\r\n" % (name, value))
        keep = request.keep_alive and request.complete and not self._refused
        if not framed and status >= 200 and status not in (204, 304):
            if not more:
                parts.append(b"content-length: %d\r\n" % length)
            elif request.scope["http_version"] == "1.1":
                parts.append(b"transfer-encoding: chunked\r\n")
                state["chunked"] = True
            else:
                keep = False  # HTTP/1.0: the end of the connection ends the body
        if not keep:
            # Not every request was read (a body refused early): close rather than read it all.
            parts.append(b"connection: close\r\n")
        state["keep"] = keep
        parts.append(b"\r\n")
        return b"".join(parts)

    def _refuse(self, status: int, message: str) -> None:
        """Answer a request the parser could not read, if no other is under way, and close."""
        if self._queue or self._transport is None:
            return  # the one under way is answered; the connection then closes
        body = orjson.dumps({"error_code": status, "message": message})
        self._transport.write(b"".join([
            b"HTTP/1.1 %d %s\r\n" % (status, _reason(status)),
            b"content-type: application/vnd.schemaregistry.v1+json\r\n",
            b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body), body]))
        self.close()


async def _answer_error(send: Any, status: int, code: int, message: str) -> None:
    body = orjson.dumps({"error_code": code, "message": message})
    await send({"type": "http.response.start", "status": status,
                "headers": [*_ERROR_HEADERS, (b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


_REASONS = {status.value: status.phrase.encode("ascii") for status in HTTPStatus}


def _reason(status: int) -> bytes:
    return _REASONS.get(status, b"")


def _pair(address: Any) -> tuple[str, int] | None:
    if not address or not isinstance(address, tuple):
        return None
    return str(address[0]), int(address[1])


def _tls_extension(ssl_object: ssl.SSLObject) -> dict[str, Any]:
    """The ASGI TLS extension's fields for one connection (its client certificate, if
    it sent one the context verified)."""
    der = ssl_object.getpeercert(binary_form=True)
    return {
        "server_cert": None,
        "client_cert_chain": [ssl.DER_cert_to_PEM_cert(der)] if der else [],
        "client_cert_name": subject_of(der) if der else None,
        "client_cert_error": None,  # a certificate that fails verification ends the handshake
        "tls_version": _TLS_VERSIONS.get(ssl_object.version() or ""),
        "cipher_suite": None,
    }
