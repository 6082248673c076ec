"""Every listener the registry serves, http and https: HTTP/1.1 on an event loop of its own.

    listeners = Listeners(bridge, [(socket_, ssl_context_or_None), ...], at_once=bridge.answer_at_once)
    listeners.start()          # a uvloop event loop of their own, on a thread of the worker process
    listeners.close()          # stop accepting, let requests under way finish, close

Requests are read by `httptools` (llhttp, the C parser Node.js uses; uvicorn's too) in an
asyncio protocol on uvloop, and handed to the `AsgiBridge`, so the fast path, limits,
authentication, authorization, metrics and audit are identical on every listener.
What is hand-written here is the loop between the transport, the parser and the ASGI
app: keep-alive and pipelining, 100-continue, HEAD, response framing, flow control,
limits on a request's head and how long it may take to arrive, and closing without
losing the answers to a reset.

Why not granian's own HTTP server, which served the first http listener before (it is
still the process supervisor, `registry.http.server`): each request, and each body
it hands over, crosses from its Rust runtime's thread to a Python thread of its own and
then to the event loop, three threads taking turns on the interpreter. On this 2-core
machine that cost more than parsing HTTP in Python here: a minimal httptools server
written for the comparison answered a bare ASGI app's GETs at 51-57k a second against
granian's 30-33k, and a bare app appending each body to Kafka spent 56-59 us of CPU a
write against 132-142 (3 rounds alternating). uvicorn serves the same way but spent more
of its own per request (21-24k GETs a second). With this module the registry's id path
served 48k requests a second against 34k on granian, and registrations on Kafka 1.21x
(`bench/read_throughput.py --calls`, `bench/register_latency.py`, both `--before`).
Nor granian's TLS: it never tells the app who the client is (no ASGI `tls` extension,
its issue #788), and the principal of an mTLS caller is its certificate's subject.

Why hand-written: uvicorn, the library that does this, served a bare app under half as
many requests a second (above), and its client certificate support is not merged either.

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
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

import httptools
import orjson
import uvloop

from registry.http.security.certificates import subject_of
from registry.http.wire import header_lines, status_line

log = logging.getLogger(__name__)

App = Any
AtOnce = Callable[[bytes, bytes, bytes, list[tuple[bytes, bytes]], bytes], tuple[bytes, bytes] | None]
# As granian's buffer was: large enough that over-long targets and headers reach the
# bridge, which answers 414/431 with Confluent's body; past it, 431 here.
_MAX_HEAD_BYTES = 1024 * 1024
# Body bytes a request may have buffered, not yet taken by the app, before reading
# pauses (and pipelined requests: reading pauses while one waits behind another).
_BUFFER_BYTES = 64 * 1024
# Header fields a request may have (their bytes are bounded by _MAX_HEAD_BYTES; this
# bounds the list each one becomes: the bridge refuses more than 64 KiB of them anyway).
_MAX_HEADERS = 1000
# Requests read ahead of the one being answered (pipelined); past it the connection
# closes once those are answered, as HTTP lets a server do.
_MAX_PIPELINED = 100
_IDLE_TIMEOUT = 75.0  # for a request head to arrive whole, on a new or kept-alive connection
_LINGER = 2.0  # for a client to end its side once ours has ended (`_Connection.finish`)
_SWEEP_SECONDS = 1.0  # how often connections are checked against it
_HANDSHAKE_TIMEOUT = 10.0
_TLS_VERSIONS = {"TLSv1.2": 0x0303, "TLSv1.3": 0x0304}
_ERROR_HEADERS = [(b"content-type", b"application/vnd.schemaregistry.v1+json")]


class Listeners:
    """Serves `app` on already bound `sockets` (each with its TLS context, or None for
    plain http) from one event loop on a daemon thread. Thread-safe start/close.

    `at_once`, if given, is asked first about each GET and POST that can be answered
    the moment it has been read: HTTP/1.1, its body (if any) framed by a Content-Length
    and come whole with its head, nothing ahead of it on the connection, the connection
    staying open, no 100-continue or upgrade asked. Called with the method, the raw
    path, the query, the headers and the body, it returns the whole answer as (head,
    body), a 200 whose head frames the body (`registry.http.wire.ok_head`), or None, and
    the request goes to `app` as any other. It runs on the event loop and must never
    block. The registry answers the hot reads it keeps ready this way
    (`AsgiBridge.answer_at_once`): no task, no ASGI messages, one write."""

    def __init__(self, app: App, sockets: list[tuple[socket.socket, ssl.SSLContext | None]],
                 at_once: AtOnce | None = None) -> None:
        self._app = app
        self.at_once = at_once
        self._sockets = sockets
        self._loop = uvloop.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="listeners", daemon=True)
        self._servers: list[asyncio.Server] = []
        self._connections: set[_Connection] = set()
        self.busy = 0  # requests under way (loop thread only)
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
        if self.busy:
            self._idle = self._loop.create_future()
            try:
                await asyncio.wait_for(asyncio.shield(self._idle), timeout)
            except asyncio.TimeoutError:
                log.warning("closing %d connections with requests still under way", self.busy)
        if self._sweeper is not None:
            self._sweeper.cancel()
        for connection in list(self._connections):
            connection.close()
        await asyncio.sleep(0)  # their connection_lost callbacks

    async def _sweep(self) -> None:
        """Close the connections that have waited longer than _IDLE_TIMEOUT for a whole
        request head, or lingered longer than _LINGER (one timer for all of them: a timer
        per request costs more)."""
        while True:
            await asyncio.sleep(_SWEEP_SECONDS)
            now = self._loop.time()
            expired, lingered = now - _IDLE_TIMEOUT, now - _LINGER
            for connection in list(self._connections):
                since = connection.waiting_since
                linger = connection.linger_since
                if (since is not None and since < expired) or (linger is not None and linger < lingered):
                    connection.close()

    def ended(self) -> None:
        """A request under way has been answered."""
        self.busy -= 1
        if not self.busy and self._idle is not None and not self._idle.done():
            self._idle.set_result(None)


class _Overflow(Exception):
    """Raised from a parser callback to stop reading a connection past a limit."""


class _Exchange:
    """One request and its answer: the scope, the body as it arrives, and the ASGI
    `receive` and `send` the app is given (methods, not closures: less to build per
    request)."""

    __slots__ = ("connection", "scope", "keep_alive", "expects_continue", "chunks", "buffered", "complete",
                 "waiter", "body_done", "start", "sent", "chunked", "ended", "keep", "head_only")

    def __init__(self, connection: _Connection, scope: dict[str, Any], keep_alive: bool,
                 expects_continue: bool) -> None:
        self.connection = connection
        self.scope = scope
        self.keep_alive = keep_alive
        self.expects_continue = expects_continue
        self.chunks: list[bytes] = []
        self.buffered = 0
        self.complete = False  # the whole body has been read
        self.waiter: asyncio.Future[None] | None = None  # the app waiting for more body
        self.body_done = False  # the app has been given all of it
        self.start: dict[str, Any] | None = None
        self.sent = False  # the head of the answer
        self.chunked = False
        self.ended = False  # the whole answer
        self.keep = True  # the connection may carry the next request
        self.head_only = scope["method"] == "HEAD"

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def receive(self) -> dict[str, Any]:
        connection = self.connection
        if self.body_done or connection.lost:
            return {"type": "http.disconnect"}
        while not self.chunks and not self.complete:
            if connection.refused:
                return {"type": "http.disconnect"}  # the rest of the body could not be read
            if self.expects_continue:
                self.expects_continue = False
                connection.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.waiter = connection.loop.create_future()
            connection.resume()
            await self.waiter
            if connection.lost:
                return {"type": "http.disconnect"}
        chunks = self.chunks
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self.buffered = 0
        more = not self.complete
        if more:
            connection.resume()
        else:
            self.body_done = True
        return {"type": "http.request", "body": body, "more_body": more}

    async def send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.start = message
            return
        if kind != "http.response.body" or self.start is None or self.ended:
            return
        body = message.get("body", b"")
        more = message.get("more_body", False)
        out = self._head(len(body), more) if not self.sent else b""
        self.sent = True
        if self.head_only:
            pass
        elif self.chunked:
            if body:
                out += b"%x\r\n%s\r\n" % (len(body), body)
            if not more:
                out += b"0\r\n\r\n"
        else:
            out += body
        if not more:
            self.ended = True
        connection = self.connection
        if not connection.lost:
            connection.write(out)  # one write: one segment for a small answer
            drained = connection.drained
            if drained is not None and not drained.done():
                await drained

    def _head(self, length: int, more: bool) -> bytes:
        """The status line and headers (decides the framing, and whether the connection
        goes on)."""
        start = self.start
        assert start is not None
        status = start["status"]
        lines, framed = header_lines(start.get("headers", ()))  # ValueError: a 500, never sent
        parts = [status_line(status), *lines]
        keep = self.keep_alive and self.complete and not self.connection.refused
        if not framed and status >= 200 and status != 204 and status != 304:
            if not more:
                parts.append(b"content-length: %d\r\n" % length)
            elif self.scope["http_version"] == "1.1":
                parts.append(b"transfer-encoding: chunked\r\n")
                self.chunked = True
            else:
                keep = False  # HTTP/1.0: the end of the connection ends the body
        if not keep:
            # Not every request was read (a body refused early): close rather than read it all.
            parts.append(b"connection: close\r\n")
        self.keep = keep
        parts.append(b"\r\n")
        return b"".join(parts)


class _Connection(asyncio.Protocol):
    """One client connection: requests read as they arrive, answered one after the other
    (HTTP/1.1 keep-alive; pipelined requests wait their turn)."""

    def __init__(self, listeners: Listeners, tls: bool) -> None:
        self._listeners = listeners
        self.loop = listeners._loop
        self._tls_on = tls
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._tls: dict[str, Any] | None = None
        self._client: tuple[str, int] | None = None
        self._server: tuple[str, int] | None = None
        self._url = b""  # of the request whose head is being read; empty between heads
        self._headers: list[tuple[bytes, bytes]] = []
        self._expect: bytes | None = None
        self._plain = True  # of the head being read: no chunked body, 100-continue or upgrade asked
        self._at_once = listeners.at_once
        # A request `at_once` may answer (`Listeners`), from its head to its end, if that
        # comes in the same read: method, raw path, query, headers, the body so far.
        self._quick: tuple[bytes, bytes, bytes, list[tuple[bytes, bytes]], list[bytes]] | None = None
        self._head_bytes = 0
        self._too_large = False  # the head went past a limit (431)
        self._incoming: _Exchange | None = None  # the request whose body is being read
        self._queue: collections.deque[_Exchange] = collections.deque()  # [0] is being answered
        self._serving = False
        self._reading = True
        self.lost = False
        self.refused = False  # the parser failed (or the connection ended): nothing more is read
        self.drained: asyncio.Future[None] | None = None  # while the transport's buffer is full
        self.waiting_since: float | None = None  # waiting for a request head (the idle sweep)
        self.linger_since: float | None = None  # our side ended, the client's not yet (`finish`)
        self._ended = False  # the client ended its side

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
        self.waiting_since = self.loop.time()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.refused = True
        self._parser = None  # type: ignore[assignment]  # it refers back to this protocol: no cycle to collect
        self._listeners._connections.discard(self)
        for exchange in self._queue:
            exchange.wake()
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return
        try:
            self._parser.feed_data(data)
            if self._quick is not None:  # its body goes on past this read: the app reads the rest
                quick, self._quick = self._quick, None
                self._admit_quick(quick)
        except httptools.HttpParserUpgrade:
            # An upgrade (or CONNECT) is not served: its request is answered, then the
            # connection closes (what follows the head is not HTTP).
            self.refused = True
            if self._queue:
                self._queue[-1].keep_alive = False
            else:
                self._refuse(400, "Bad request: protocol upgrades are not supported")
            return
        except httptools.HttpParserError as exc:
            self.refused = True
            self._discard_unread()
            if self._incoming is not None:
                self._incoming.wake()  # its body will not come: the app is told it is gone
            if self._too_large:
                self._refuse(431, f"Request header fields too large: more than {_MAX_HEADERS} fields")
            else:
                self._refuse(400, f"Bad request: {exc}")
            return
        if self._url:  # a head begun, not yet whole (every head has a target before its fields)
            self._head_bytes += len(data)
            if self._head_bytes > _MAX_HEAD_BYTES:
                self.refused = True
                self._refuse(431, f"Request header fields too large: the head exceeds {_MAX_HEAD_BYTES} bytes")
        else:
            self._head_bytes = 0

    def eof_received(self) -> bool:
        """The client ended its side: requests read are still answered (a client may end
        its side once it has sent one), then the connection closes."""
        self._ended = True
        self.refused = True
        if self._incoming is not None:
            self._incoming.wake()  # its body will not come
        return bool(self._queue)  # True keeps the transport open to answer them

    def pause_writing(self) -> None:
        if self.drained is None or self.drained.done():
            self.drained = self.loop.create_future()

    def resume_writing(self) -> None:
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)

    # httptools' callbacks

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(self._headers) >= _MAX_HEADERS:
            self._too_large = True
            raise _Overflow  # ends the parse: feed_data raises HttpParserCallbackError
        name = name.lower()
        if name in _NOT_PLAIN:
            self._plain = False
            if name == b"expect":
                self._expect = value
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        if len(self._queue) > _MAX_PIPELINED:
            raise _Overflow  # those read so far are answered, then the connection closes
        parser = self._parser
        url = self._url
        self._url = b""
        if b"#" in url:
            url = url.partition(b"#")[0]  # a fragment is the client's own, never the server's
        if url[:1] == b"/" or url == b"*":
            raw_path, _, query = url.partition(b"?")
        else:  # the absolute form (RFC 9112 3.2.2), as a proxy sends it: its path routes
            parsed = httptools.parse_url(url)  # not a URL: HttpParserCallbackError, a 400
            raw_path, query = parsed.path or b"/", parsed.query or b""
        method = parser.get_method()
        version = parser.get_http_version()
        headers = self._headers
        self._headers = []
        expect = self._expect
        self._expect = None
        plain = self._plain
        self._plain = True
        keep_alive = parser.should_keep_alive()
        if (plain and (method == b"GET" or method == b"POST") and self._at_once is not None and not self._queue
                and keep_alive and version == "1.1" and (self.drained is None or self.drained.done())):
            # Nothing ahead of it to answer, room to write: asked once its body is read
            # (`on_message_complete`), unless that takes more than this read (`data_received`).
            self._quick = (method, raw_path, query, headers, [])
            return
        self._admit(method, version, raw_path, query, headers, keep_alive, expect)

    def _admit(self, method: bytes, version: str, raw_path: bytes, query: bytes,
               headers: list[tuple[bytes, bytes]], keep_alive: bool, expect: bytes | None) -> None:
        """Queue the request for the app, and start answering if nothing is under way."""
        self.waiting_since = None
        scope: dict[str, Any] = {
            "type": "http", "asgi": _ASGI, "http_version": version,
            "method": _METHODS.get(method) or method.decode("ascii"),
            "scheme": "https" if self._tls_on else "http",
            "path": unquote(raw_path.decode("latin-1")) if b"%" in raw_path else raw_path.decode("latin-1"),
            "raw_path": raw_path, "query_string": query,
            "root_path": "", "headers": headers, "client": self._client, "server": self._server,
        }
        if self._tls is not None:
            scope["extensions"] = {"tls": self._tls}
        expects = expect is not None and version == "1.1" and expect.lower() == b"100-continue"
        exchange = _Exchange(self, scope, keep_alive, expects)
        self._incoming = exchange
        queue = self._queue
        queue.append(exchange)
        if len(queue) > 1:
            self._pause()  # pipelined: read on once the ones ahead are answered
        if not self._serving:
            self._serving = True
            self.loop.create_task(self._serve())

    def on_body(self, body: bytes) -> None:
        if self._quick is not None:
            self._quick[4].append(body)
            return
        exchange = self._incoming
        if exchange is None:
            return
        exchange.chunks.append(body)
        exchange.buffered += len(body)
        if exchange.waiter is not None:
            exchange.wake()
        if exchange.buffered > _BUFFER_BYTES:
            self._pause()

    def on_message_complete(self) -> None:
        quick = self._quick
        if quick is not None:
            self._quick = None
            method, raw_path, query, headers, chunks = quick
            body = b"".join(chunks) if len(chunks) != 1 else chunks[0]
            if self._answered_at_once(method, raw_path, query, headers, body):
                return
            self._admit_quick(quick)
        exchange = self._incoming
        if exchange is None:
            return
        self._incoming = None
        exchange.complete = True
        if exchange.waiter is not None:
            exchange.wake()

    # serving

    def _admit_quick(self, quick: tuple[bytes, bytes, bytes, list[tuple[bytes, bytes]], list[bytes]]) -> None:
        """Hand a request `at_once` did not answer to the app, with its body so far."""
        method, raw_path, query, headers, chunks = quick
        self._admit(method, "1.1", raw_path, query, headers, True, None)
        exchange = self._incoming
        assert exchange is not None
        exchange.chunks = chunks
        exchange.buffered = sum(map(len, chunks))
        if exchange.buffered > _BUFFER_BYTES:
            self._pause()

    def _answered_at_once(self, method: bytes, raw_path: bytes, query: bytes, headers: list[tuple[bytes, bytes]],
                          body: bytes) -> bool:
        """Whether the app's `at_once` answered the request (written here, whole)."""
        assert self._at_once is not None
        try:
            answer = self._at_once(method, raw_path, query, headers, body)
        except Exception:  # a bug of ours: the way through the app answers (a 500 at worst)
            log.exception("error answering %s %r at once", method, raw_path)
            return False
        if answer is None:
            return False
        head, body = answer
        self.write(head + body)  # one write: one segment for a small answer
        self.waiting_since = self.loop.time()
        return True

    def write(self, data: bytes) -> None:
        if self._transport is not None:
            self._transport.write(data)

    def _discard_unread(self) -> None:
        """Read on (and drop) what the client still sends: closing with unread bytes
        makes the kernel reset the connection, and the client could lose our answers."""
        if not self._reading and not self.lost and self._transport is not None:
            self._reading = True
            self._transport.resume_reading()

    def _pause(self) -> None:
        if self.refused:
            return
        if self._reading and self._transport is not None:
            self._reading = False
            self._transport.pause_reading()

    def resume(self) -> None:
        """Read on, unless requests wait in line or a body's buffer is full."""
        if self._reading or self.lost or self._transport is None:
            return
        queue = self._queue
        if len(queue) > 1 or (queue and queue[0].buffered > _BUFFER_BYTES):
            return
        self._reading = True
        self._transport.resume_reading()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def finish(self) -> None:
        """Close once the answers written are sent, without losing them to a reset:
        closing with unread bytes from the client makes the kernel reset the connection,
        and a client still sending (a refused body, requests pipelined past the limit)
        could lose what it was answered. So our side ends first (a FIN after the
        answers), what the client still sends is read and dropped, and the connection
        closes when the client ends its side, or _LINGER seconds later (the sweep)."""
        transport = self._transport
        if transport is None or self.lost:
            return
        self.refused = True  # nothing more is parsed
        self._discard_unread()
        if not self._ended and self.linger_since is None and transport.can_write_eof():
            transport.write_eof()
            self.linger_since = self.loop.time()
        else:
            transport.close()

    async def _serve(self) -> None:
        """Answer the queued requests in order; close when one says so."""
        listeners = self._listeners
        queue = self._queue
        try:
            while queue and not self.lost:
                exchange = queue[0]
                listeners.busy += 1
                try:
                    keep = await self._answer(exchange)
                finally:
                    listeners.ended()
                queue.popleft()
                if not keep:
                    self.finish()
                    return
                if not self._reading:
                    self.resume()
            if self.refused and not self.lost:
                self.finish()  # the request after the last one answered could not be read
        except Exception:  # a bug of ours must not take the listener down with it
            log.exception("error serving a connection")
            self.finish()
        finally:
            self._serving = False
            if not queue:
                self.waiting_since = self.loop.time()

    async def _answer(self, exchange: _Exchange) -> bool:
        """Run the app for `exchange`; True when the connection may carry the next one."""
        scope = exchange.scope
        try:
            await self._listeners._app(scope, exchange.receive, exchange.send)
        except Exception:
            log.exception("error serving %s %s", scope["method"], scope["path"])
            if exchange.sent:
                return False  # the answer broke off
            exchange.start = None
            await _answer_error(exchange.send, 500, 50001, "Internal error in the schema registry")
            return False
        if not exchange.ended:
            if not exchange.sent:
                log.error("no answer to %s %s", scope["method"], scope["path"])
                await _answer_error(exchange.send, 500, 50001, "Internal error in the schema registry")
            return False
        return exchange.keep and not self.lost

    def _refuse(self, status: int, message: str) -> None:
        """Answer a request the parser could not read, if no other is under way, and close."""
        if self._queue or self._transport is None:
            return  # the one under way is answered; the connection then closes
        body = orjson.dumps({"error_code": status, "message": message})
        self._transport.write(b"".join([
            status_line(status),
            b"content-type: application/vnd.schemaregistry.v1+json\r\n",
            b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body), body]))
        self.finish()


async def _answer_error(send: Any, status: int, code: int, message: str) -> None:
    body = orjson.dumps({"error_code": code, "message": message})
    await send({"type": "http.response.start", "status": status,
                "headers": [*_ERROR_HEADERS, (b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


# Header fields that take a request off the way of answers at once (`_Connection._quick`):
# a chunked body, a client waiting to be told to send its body, or an upgrade (whose
# request is answered, then the connection closes).
_NOT_PLAIN = frozenset({b"transfer-encoding", b"expect", b"upgrade"})
_METHODS = {method.encode("ascii"): method for method in ("GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS")}
_ASGI = {"version": "3.0", "spec_version": "2.3"}


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
