"""Listeners granian cannot serve: every `https://` listener, and any `http://` one past the first.

    listeners = Listeners(bridge, [(socket_, ssl_context_or_None), ...])
    listeners.start()          # an event loop of their own, on a thread of the worker process
    listeners.close()          # stop accepting, let requests under way finish, close

Why not granian: granian 2.8 serves one address per server, and its TLS (rustls) never
tells the app who the client is: the ASGI `tls` extension is not implemented (its
issue #788, pull request #854 still open), and its `ssl_client_verify` is all or
nothing (no REQUESTED). The principal of an mTLS caller is its certificate's subject,
so https must be served where the certificate can be read: Python's `ssl` module
under asyncio, with HTTP/1.1 from `h11` (the sans-IO parser httpx and uvicorn use).
uvicorn and hypercorn were candidates; neither passes the client certificate either
(uvicorn's pull requests for it are open), and hooking their protocol classes would
tie us to their internals. What is hand-written here is only the loop between the
socket, h11 and the ASGI app, about as much as a test client.

Requests reach the same `AsgiBridge` as granian's, so the fast path, limits,
authentication, authorization, metrics and audit are identical on every listener;
the scope carries the ASGI `extensions.tls` (the client certificate as PEM and its
RFC 4514 subject, read once per connection).

Sockets are bound by the supervisor before the worker is forked (`registry.http.server`),
so a busy port fails at start and a restarted worker serves the same sockets.
Throughput is below granian's (Python parses HTTP here); bench/read_throughput.py
measures the https listener too.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

import h11
import orjson

from registry.http.security.certificates import subject_of

log = logging.getLogger(__name__)

App = Any
# As granian's buffer: large enough that over-long targets and headers reach the bridge,
# which answers 414/431 with Confluent's body.
_MAX_HEAD_BYTES = 1024 * 1024
_READ_BYTES = 64 * 1024
_IDLE_TIMEOUT = 75.0  # for a request head to arrive whole, on a new or kept-alive connection
_HANDSHAKE_TIMEOUT = 10.0
_TLS_VERSIONS = {"TLSv1.2": 0x0303, "TLSv1.3": 0x0304}


class Listeners:
    """Serves `app` on already bound `sockets` (each with its TLS context, or None for
    plain http) from one event loop on a daemon thread. Thread-safe start/close."""

    def __init__(self, app: App, sockets: list[tuple[socket.socket, ssl.SSLContext | None]]) -> None:
        self._app = app
        self._sockets = sockets
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="listeners", daemon=True)
        self._servers: list[asyncio.Server] = []
        self._connections: set[asyncio.Task[None]] = set()
        self._busy = 0  # requests under way (loop thread only)
        self._idle = asyncio.Event()

    def start(self) -> None:
        """Start accepting. Blocks until every socket is being served."""
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()

    def close(self, timeout: float = 10.0) -> None:
        """Stop accepting, wait up to `timeout` s for requests under way, then close every
        connection and stop the loop. Blocks until done."""
        if not self._thread.is_alive():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._stop(timeout), self._loop).result(timeout + 5)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)

    async def _start(self) -> None:
        for sock, context in self._sockets:
            server = await asyncio.start_server(
                self._serve_connection, sock=sock, ssl=context, backlog=2048,
                ssl_handshake_timeout=_HANDSHAKE_TIMEOUT if context is not None else None,
                limit=_READ_BYTES)
            self._servers.append(server)

    async def _stop(self, timeout: float) -> None:
        for server in self._servers:
            server.close()
        if self._busy:
            self._idle.clear()
            try:
                await asyncio.wait_for(self._idle.wait(), timeout)
            except asyncio.TimeoutError:
                log.warning("closing %d connections with requests still under way", self._busy)
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=5)

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await _Connection(self, reader, writer).run()
        except asyncio.CancelledError:
            pass
        except Exception:  # a bug of ours must not take the listener down with it
            log.exception("error serving a connection")
        finally:
            self._connections.discard(task)
            writer.close()

    def _began(self) -> None:
        self._busy += 1

    def _ended(self) -> None:
        self._busy -= 1
        if not self._busy:
            self._idle.set()


class _Connection:
    """One client connection: requests one after the other (HTTP/1.1 keep-alive)."""

    def __init__(self, listeners: Listeners, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._listeners = listeners
        self._reader = reader
        self._writer = writer
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD_BYTES)
        raw = writer.get_extra_info("socket")
        if raw is not None and raw.family in (socket.AF_INET, socket.AF_INET6):
            # asyncio sets this only on sockets made with proto=IPPROTO_TCP, not on ones
            # accepted from a listener bound the usual way; without it a response's
            # second segment waits for the client's delayed ACK (40 ms).
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ssl_object = writer.get_extra_info("ssl_object")
        self._tls = _tls_extension(ssl_object) if ssl_object is not None else None
        self._client = _pair(writer.get_extra_info("peername"))
        self._server = _pair(writer.get_extra_info("sockname"))

    async def run(self) -> None:
        while True:
            try:
                event = await self._next_event(_IDLE_TIMEOUT)
            except h11.RemoteProtocolError as exc:
                await self._refuse(exc)
                return
            except (asyncio.TimeoutError, ConnectionError, ssl.SSLError):
                return
            if not isinstance(event, h11.Request):
                return  # the client closed the connection (or sent nothing more)
            self._listeners._began()
            try:
                await self._exchange(event)
            except (ConnectionError, ssl.SSLError, asyncio.TimeoutError):
                return
            except h11.RemoteProtocolError as exc:
                await self._refuse(exc)
                return
            finally:
                self._listeners._ended()
            if self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE:
                self._h11.start_next_cycle()
            else:
                return  # a body left unread, or Connection: close

    async def _next_event(self, timeout: float) -> Any:
        """The next h11 event, reading from the socket as needed; all of it (a request head
        sent a byte at a time included) within `timeout` s, else TimeoutError."""
        event = self._h11.next_event()
        if event is not h11.NEED_DATA:
            return event
        # asyncio.timeout, not wait_for: no task per read.
        async with asyncio.timeout(timeout):
            while event is h11.NEED_DATA:
                self._h11.receive_data(await self._reader.read(_READ_BYTES))  # b"": the end of the stream
                event = self._h11.next_event()
        return event

    async def _exchange(self, request: h11.Request) -> None:
        target = request.target
        raw_path, _, query = target.partition(b"?")
        scope: dict[str, Any] = {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": request.http_version.decode("ascii"),
            "method": request.method.decode("ascii"),
            "scheme": "https" if self._tls is not None else "http",
            "path": unquote(raw_path.decode("latin-1")), "raw_path": raw_path, "query_string": query,
            "root_path": "", "headers": list(request.headers), "client": self._client, "server": self._server,
        }
        if self._tls is not None:
            scope["extensions"] = {"tls": self._tls}
        head_only = request.method == b"HEAD"
        response: dict[str, Any] = {"start": None, "sent": False}
        body_done = [False]

        async def receive() -> dict[str, Any]:
            if body_done[0]:
                return {"type": "http.disconnect"}
            if self._h11.they_are_waiting_for_100_continue:
                self._writer.write(self._h11.send(h11.InformationalResponse(status_code=100, headers=[])))
            event = await self._next_event(_IDLE_TIMEOUT)
            if isinstance(event, h11.Data):
                return {"type": "http.request", "body": bytes(event.data), "more_body": True}
            body_done[0] = True
            if isinstance(event, h11.EndOfMessage):
                return {"type": "http.request", "body": b"", "more_body": False}
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                response["start"] = message
                return
            if message["type"] != "http.response.body" or response["start"] is None:
                return
            out: list[bytes] = []
            if not response["sent"]:
                headers = list(response["start"].get("headers", []))
                if not self._request_read():
                    # The body was not read (refused early): close, rather than read it all.
                    headers.append((b"connection", b"close"))
                status = response["start"]["status"]
                out.append(self._h11.send(h11.Response(status_code=status, headers=headers, reason=_reason(status))))
                response["sent"] = True
            body = message.get("body", b"")
            if body and not head_only:
                out.append(self._h11.send(h11.Data(data=body)))
            if not message.get("more_body", False):
                out.append(self._h11.send(h11.EndOfMessage()))
            self._writer.write(b"".join(out))  # one write: one segment for a small answer
            await self._writer.drain()

        try:
            await self._listeners._app(scope, receive, send)
        except (ConnectionError, ssl.SSLError):
            raise
        except Exception:
            log.exception("error serving %s %s", scope["method"], scope["path"])
            if response["sent"]:
                raise ConnectionError("the answer broke off") from None
            body = orjson.dumps({"error_code": 50001, "message": "Internal error in the schema registry"})
            await send({"type": "http.response.start", "status": 500, "headers": [
                (b"content-type", b"application/vnd.schemaregistry.v1+json"),
                (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})

    def _request_read(self) -> bool:
        """True once the whole request has been read. Takes what has already arrived of
        it (a bodiless request's end, a body the app left unread) and never waits for
        more; the end of a GET is an event h11 still has to hand out."""
        while self._h11.their_state is h11.SEND_BODY:
            event = self._h11.next_event()
            if event is h11.NEED_DATA or isinstance(event, h11.ConnectionClosed):
                return False
        return self._h11.their_state is h11.DONE

    async def _refuse(self, exc: h11.RemoteProtocolError) -> None:
        """Answer a request h11 could not read, when an answer can still be sent."""
        if self._h11.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        status = exc.error_status_hint
        body = orjson.dumps({"error_code": status, "message": f"Bad request: {exc}"})
        try:
            self._writer.write(self._h11.send(h11.Response(status_code=status, headers=[
                (b"content-type", b"application/vnd.schemaregistry.v1+json"),
                (b"content-length", str(len(body)).encode()), (b"connection", b"close")])))
            self._writer.write(self._h11.send(h11.Data(data=body)))
            self._writer.write(self._h11.send(h11.EndOfMessage()))
            await self._writer.drain()
        except (h11.LocalProtocolError, ConnectionError, ssl.SSLError):
            pass


def _reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return b""


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
