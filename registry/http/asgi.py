"""Serving the Flask (WSGI) app over ASGI, so that routing sees the raw request path.

Granian's WSGI interface gives apps only the percent-decoded path, which cannot tell
the subject `a/b` (sent as `a%2Fb`) from two path segments. Its ASGI interface
carries `raw_path`. This bridge answers the `GET /schemas/ids/{id}` fast path and
every other read directly on the event loop (reads only touch the in-memory cache),
and runs writes, which wait on the log, on a pool of threads: registrations by their
direct view (`registry.http.direct`), the others through the Flask app. What it keeps
ready (the id path's answers, the read memo's) it also gives the listener to write at
once, before any of this (`answer_at_once`).
Flask routes on the path exactly as the client sent it (still percent-encoded, in
`PATH_INFO`); the subject converter decodes each segment. The original request
target is also in `RAW_URI`, for forwarding.

Around dispatch (`FrontDoor`) is the one way in for what every request shares,
whichever listener it came by and whether the fast path or Flask answers it: the route
(matched once, by Flask's own URL map, and handed to Flask), authentication and
authorization (`security.guard`, before any body is read), request metrics and the
audit log. A reader the guard remembers admitting reaches the fast path with three
dict reads (`Guard.admits_remembered_read`).

Hand-written because the general bridges (asgiref, a2wsgi) measured 3x slower here
(bench/wsgi_servers.py: uvicorn+a2wsgi 2,085 req/s) and cannot put the fast path on
the event loop.
"""
from __future__ import annotations

import asyncio
import io
import re
import sys
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import orjson

from registry.audit import AuditEvent, AuditLog
from registry.http import fast_path as fast_path_module
from registry.http.bodies import CONTENT_TYPE
from registry.http.body_deadlines import BodyDeadlines
from registry.http.context_paths import PREFIX as CONTEXT_PREFIX, BadContext, context_path
from registry.http.direct import DirectViews
from registry.http.fast_path import SchemaByIdFastPath
from registry.http import read_memo
from registry.http.metrics import RequestStats
from registry.http.negotiation import V1_JSON, response_type
from registry.http.read_memo import ReadMemo
from registry.http.routing import ROUTE_KEY, Route, Router
from registry.http.security.cross_site import CrossSite
from registry.http.security.guard import ACCESS_KEY, Access, Denied, Guard, resource_of
from registry.http.security.operations import CHANGES
from registry.http.security.policy import policy_for
from store.writer import NotWriter

_FAST_HEADERS = [(b"content-type", CONTENT_TYPE.encode())]
_RAW_PREFIX = fast_path_module.RAW_PREFIX
_RAW_PREFIX_LENGTH = fast_path_module.RAW_PREFIX_LENGTH
_clock = time.perf_counter
# Where the app leaves the endpoint it routed a request to (the metrics label), so that
# counting requests needs no routing of its own.
ENDPOINT_KEY = "registry.endpoint"
_NEVER_BLOCK = frozenset({"GET", "HEAD", "OPTIONS"})
# The methods whose answers the read memo keeps (`read_memo.METHODS`), as the listener
# hands them to `answer_at_once`.
_KEPT_METHODS = {name.encode(): name for name in read_memo.METHODS}
# A body larger than this is parsed for authorization (`Guard.admit_body`) on the pool:
# nothing heavy runs on the event loop, where every other client is answered.
_MAX_LOOP_PARSE = 64 * 1024
# The environ key holding when the request came in (time.monotonic()): every wait it
# causes (an election, forwarding) counts from then.
RECEIVED = "registry.received"
# The environ key set when a direct view found that this node may not append the write
# (NotWriter): Flask forwards it to the leader without running its view again.
TO_LEADER = "registry.to_leader"
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
    def __init__(self, status: int, message: str, reason: str, error_code: int | None = None,
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.reason = reason  # the metrics label
        self.error_code = error_code or status
        self.headers = headers or []


class _Exchange:
    """What one request turned out to be, for metrics and the audit log."""

    __slots__ = ("endpoint", "route", "status", "access", "denied")

    def __init__(self) -> None:
        self.endpoint = "unmatched"  # the Flask endpoint, for metrics
        self.route: Route | None = None
        self.status = 500
        self.access: Access | None = None
        self.denied: Denied | None = None


@dataclass(frozen=True)
class FrontDoor:
    """What the bridge does around dispatch, each part optional: routing before Flask
    (`router`), authentication and authorization (`guard`), request metrics (`stats`)
    and the audit log (`audit`, with `node_url` naming this node in its lines)."""

    router: Router | None = None
    guard: Guard | None = None
    stats: RequestStats | None = None
    audit: AuditLog | None = None
    node_url: str = ""
    # Reads that may take a while (a metrics scrape over a large cache) run on the pool.
    off_loop: frozenset[str] = frozenset()
    cross_site: CrossSite = CrossSite(frozenset())  # changes a browser sends for another site


class AsgiBridge:
    """An ASGI app serving `wsgi_app` with `threads` worker threads, within `limits`."""

    def __init__(self, wsgi_app: Any, fast_path: SchemaByIdFastPath, threads: int,
                 limits: Limits = Limits(), on_close: Callable[[], None] = lambda: None,
                 door: FrontDoor = FrontDoor(), memo: ReadMemo | None = None,
                 direct: DirectViews | None = None) -> None:
        self._wsgi_app = wsgi_app
        self._direct = direct
        self._fast_path = fast_path
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="http")
        self._limits = limits
        self._body_deadlines = BodyDeadlines(limits.body_timeout)
        # Body bytes held by requests under way. Several listeners may serve this bridge
        # from event loops of their own (registry.http.listener), hence the lock.
        self._inflight = 0
        self._inflight_lock = threading.Lock()
        self._on_close = on_close
        self._door = door
        self._memo = memo
        # Routing before anything else is for authorization and the audit. Without
        # them a request is routed only on its way to Flask (a kept answer needs no
        # route), which spares Flask its own matching: the router remembers the paths
        # a client asks again and again, where Werkzeug's matcher costs ~40 us each time.
        self._routed = door.router is not None and (door.guard is not None or door.audit is not None)
        # Without authentication every reader may read any id (with it, the guard's
        # remembered decisions are the way: `_serve`). Only reads take the lane, and the
        # audit logs only changes.
        self._plain_lane = door.guard is None
        self._max_header_bytes = limits.max_header_bytes
        self._stats = door.stats
        self._cross_site = door.cross_site

    def close(self) -> None:
        """Finish the requests under way, then stop the threads. Blocks until they end."""
        self._pool.shutdown(wait=True)
        self._on_close()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw_path = scope.get("raw_path")
        if self._plain_lane and raw_path is not None and scope["method"] == "GET":
            # The id path's own lane, ahead of everything else (`_plain_read`), for a read
            # the listener did not answer at once (`answer_at_once`): one pipelined behind
            # another, say.
            started = _clock()
            answer = self._plain_read(raw_path, scope["query_string"], scope["headers"])
            if answer is not None:
                await send({"type": "http.response.start", "status": 200, "headers": answer[2]})
                await send({"type": "http.response.body", "body": answer[1]})
                stats = self._stats
                if stats is not None:
                    stats.observe_lane(_clock() - started)
                return
        # Every other request, in this same coroutine (another would cost each 0.4 us):
        # the limits, the route, the guard, the read memo, then Flask; metrics and the
        # audit whatever the outcome.
        held = [0]
        exchange = _Exchange()
        started = time.perf_counter()
        try:
            await self._serve(scope, receive, send, held, exchange)
        except _Refused as refused:
            exchange.status = refused.status
            if self._door.stats is not None:
                self._door.stats.rejected(refused.reason)
            await _send_error(send, refused.status, refused.message, refused.error_code, refused.headers)
        finally:
            if held[0]:
                with self._inflight_lock:
                    self._inflight -= held[0]
            door = self._door
            if door.stats is not None:
                door.stats.observe(exchange.endpoint, scope["method"], exchange.status, time.perf_counter() - started)
            if door.audit is not None and exchange.route is not None:
                self._audit(scope, exchange)

    def answer_at_once(self, method: bytes, raw_path: bytes, query: bytes, headers: list[tuple[bytes, bytes]],
                       body: bytes) -> tuple[bytes, bytes] | None:
        """The whole answer, as (head, body), to a request read whole (its `body` as the
        head framed it) when it is one this node keeps ready: a GET the id lane answers
        (`_plain_read`), or a GET or a lookup's POST whose answer is kept at the current
        log position (`ReadMemo`). Else None, and the request takes the way through
        `__call__`, which would give the same answer from the same memo. With
        authentication on, only the id lane's, to a reader the guard remembers admitting
        (as `_serve` answers them); the rest needs the guard's whole way in. The
        listener asks it before anything else (`Listeners(at_once=...)`): no task, no
        ASGI messages, one write. Never blocks."""
        started = _clock()
        stats = self._stats
        if method == b"GET":
            answer = self._plain_read(raw_path, query, headers, self._door.guard)
            if answer is not None:
                if stats is not None:
                    stats.observe_lane(_clock() - started)
                return answer[3], answer[1]
        if not self._plain_lane:
            return None
        name = _KEPT_METHODS.get(method)
        memo = self._memo
        if (name is None or memo is None or (name == "POST" and not memo.posts)
                or len(raw_path) + len(query) > self._limits.max_target_bytes
                or len(body) > self._limits.max_request_bytes):
            return None
        path = raw_path.decode("latin-1")
        if path[:1] != "/" or path[1:2] == "/" or (len(path) > 1 and path[-1] == "/") \
                or path.startswith(CONTEXT_PREFIX):
            return None  # refused, made plain or rewritten first, by `_serve`
        if name != "GET" and self._cross_site.refusal(name, "http", headers) is not None:
            return None  # refused by `_serve`, as every change a browser sends cross-site
        facts = _HeaderFacts(headers)
        if facts.size > self._max_header_bytes:
            return None
        content_type = facts.negotiated()
        if content_type is None:
            return None
        # Kept only if Flask answered it 200 at this position: a read, or a lookup (a POST
        # to any other route is never kept, `ReadMemo.keep`).
        kept = memo.get(memo.key(name, path, query, body, content_type, None))
        if kept is None:
            return None
        if stats is not None:
            stats.observe(kept.endpoint, name, 200, _clock() - started)
        return kept.head, kept.body

    def _plain_read(self, raw_path: bytes, query: bytes, headers: list[tuple[bytes, bytes]],
                    guard: Guard | None = None) -> fast_path_module.Answer | None:
        """The id path's own lane, for a GET: the read every consumer makes, answered
        with as little work as it needs (in process 13.7 -> about 5 us a request;
        bench/read_throughput.py --calls). It answers only what the whole way in would
        answer from the same memo (`plain_answer` says which), and with a `guard` only
        to a reader it remembers admitting to that id; anything else falls through to
        it unchanged. Its own names are bound in advance: each lookup saved is a tenth
        of a microsecond on every read."""
        if query or not raw_path.startswith(_RAW_PREFIX) or not (digits := raw_path[_RAW_PREFIX_LENGTH:]).isdigit():
            return None
        if guard is not None and not guard.admits_remembered_read(headers, digits.decode("ascii")):
            return None
        return self._fast_path.plain_answer(digits, headers, self._max_header_bytes)

    async def _serve(self, scope: dict[str, Any], receive: Any, send: Any, held: list[int],
                     exchange: _Exchange) -> None:
        """Every request the listener did not answer at once, through the same steps in
        the same order: each guarantee is a step, and an answer kept ready is one too,
        taken only once every guarantee before it has run."""
        request = self._within_limits(scope)
        self._routed_to(request, exchange)
        await self._admitted(request, receive, held, exchange)
        if await self._kept_answer(request, send, exchange):
            return
        await self._viewed(request, send, exchange)

    def _within_limits(self, scope: dict[str, Any]) -> _Request:
        """Step 1, limits: the target's and the headers' size, a target naming a path,
        the one spelling of that path, and what a `/contexts/{context}/` path stands for.
        Raises _Refused."""
        received = time.monotonic()
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode("utf-8")
        query: bytes = scope["query_string"]
        method: str = scope["method"]
        if len(raw_path) + len(query) > self._limits.max_target_bytes:
            raise _Refused(414, f"The request target is longer than {self._limits.max_target_bytes} bytes",
                           "target_too_long")
        facts = _HeaderFacts(scope["headers"])
        if facts.size > self._limits.max_header_bytes:
            raise _Refused(431, f"The request headers are larger than {self._limits.max_header_bytes} bytes",
                           "headers_too_large")
        path = origin_form(raw_path.decode("latin-1"))
        if not path.startswith("/"):
            raise _Refused(400, "The request target must be a path starting with /", "bad_target")
        if path.startswith("//"):
            # An empty first segment names no route; Werkzeug would strip it and serve
            # the path without it, so refuse it here.
            raise _Refused(404, "HTTP 404 Not Found", "bad_target")
        if len(path) > 1 and path.endswith("/") and not path.endswith("//"):
            # `/subjects/` is `/subjects`, as JAX-RS serves every resource (one slash only:
            # `/subjects//` stays a path no route names). Before any routing, so the fast
            # path, authorization and Flask all see the one path.
            path = path[:-1]
        # What a forwarded identity's signature covers: the target as it came.
        signed_uri = path + ("?" + query.decode("latin-1") if query else "")
        if path.startswith(CONTEXT_PREFIX):
            # `/contexts/{context}/...` is the qualified request it stands for (Confluent's
            # ContextFilter), from here on: routed, authorized and forwarded as that one.
            try:
                rewritten = context_path(method, path, query)
            except BadContext as exc:
                raise _Refused(400, str(exc), "bad_context") from None
            if rewritten is not None:
                path, query = rewritten
                scope = {**scope, "query_string": query}
        return _Request(scope, method, path, query, facts, signed_uri, received)

    def _routed_to(self, request: _Request, exchange: _Exchange) -> None:
        """Step 2, the route: what authorization decides on, the audit names and the
        view answers (matched here where authorization or the audit needs it, else on
        the way to the view)."""
        method, path = request.method, request.path
        if path.startswith(fast_path_module.PREFIX):
            request.fast_id = self._fast_path.schema_id(method, path, request.query, request.scope["headers"])
        if request.fast_id is not None:
            exchange.endpoint = fast_path_module.ENDPOINT
            if self._door.guard is not None or self._door.audit is not None:
                exchange.route = Route(fast_path_module.ENDPOINT, {fast_path_module.ARGUMENT: request.fast_id})
        elif self._routed:
            assert self._door.router is not None
            self._route(exchange, self._door.router, method, path)

    async def _admitted(self, request: _Request, receive: Any, held: list[int], exchange: _Exchange) -> None:
        """Step 3, authentication and authorization, whole before anything is answered:
        a change a browser sends for another site is refused; then the head (a caller
        who may not write cannot make the node buffer a body), the body within its
        limits, and what only the body can tell (a forwarded identity's signature covers
        it; references name subjects to read). Leaves the body on `request`. Raises
        _Refused."""
        scope, method = request.scope, request.method
        refusal = self._cross_site.refusal(method, scope.get("scheme", "http"), scope["headers"])
        if refusal is not None:
            raise _Refused(403, refusal, "cross_site", 40301)
        guard = self._door.guard
        if guard is not None:
            try:
                exchange.access = await guard.admit(scope, method, request.path, exchange.route)
            except Denied as denied:
                exchange.denied = denied
                raise _refusal(denied) from None
        # HTTP/1.x frames a body by its head (RFC 9112 6.3): without Content-Length or
        # Transfer-Encoding, or with a length of 0, there is none to ask for (nor a
        # coroutine to start for it: most reads).
        facts = request.facts
        http1 = scope.get("http_version", "1.1").startswith("1")
        if not (http1 and (not facts.framed or facts.length == 0)):
            request.body = await self._read_body(receive, held, facts, http1)
        if guard is not None:
            assert exchange.access is not None
            try:
                if len(request.body) > _MAX_LOOP_PARSE:  # the body is parsed: not on the loop
                    await asyncio.get_running_loop().run_in_executor(
                        self._pool, guard.admit_body, exchange.access, method, request.signed_uri, request.body)
                else:
                    guard.admit_body(exchange.access, method, request.signed_uri, request.body)
            except Denied as denied:
                exchange.denied = denied
                raise _refusal(denied) from None

    async def _kept_answer(self, request: _Request, send: Any, exchange: _Exchange) -> bool:
        """Step 4, answers kept ready, for a request admitted whole: the id path's, then
        the read memo's (keyed by what the caller may see). True when one answered;
        else notes where the view's answer will be kept."""
        if request.fast_id is not None and await self._answer_fast(request.fast_id, send, exchange):
            return True
        memo, router, method = self._memo, self._door.router, request.method
        if method == "POST" and exchange.route is None and router is not None:
            # A POST's answer is kept only for a lookup: routed first, a registration
            # (every producer's first call for each schema) skips the memo.
            self._route(exchange, router, method, request.path)
        if memo is None or method not in read_memo.METHODS or (
                method == "POST" and router is not None
                and (exchange.route is None or exchange.route.endpoint not in read_memo.HOT)):
            return False
        content_type = request.facts.negotiated()
        if content_type is None:
            return False  # 406, which the view answers
        guard = self._door.guard
        request.memo_key = memo.key(method, request.path, request.query, request.body, content_type,
                                    guard.viewer(exchange.access) if guard is not None else None)
        kept = memo.get(request.memo_key)
        if kept is not None:
            exchange.status, exchange.endpoint = 200, kept.endpoint
            await send({"type": "http.response.start", "status": 200, "headers": kept.headers})
            await send({"type": "http.response.body", "body": kept.body})
            return True
        request.position = memo.position()
        return False

    async def _viewed(self, request: _Request, send: Any, exchange: _Exchange) -> None:
        """Step 5, the view: the direct view of the route where it has one (reads here,
        writes on the pool), else Flask's; a write this node may not append goes to
        Flask's one handler of "not the writer", which forwards it to the leader."""
        method, path, query, scope = request.method, request.path, request.query, request.scope
        router = self._door.router
        if exchange.route is None and router is not None and not self._routed:
            self._route(exchange, router, method, path)
        route = exchange.route
        direct = self._direct
        to_leader = False
        if direct is not None and route is not None and (view := direct.view_for(method, route.endpoint)) is not None:
            content_type = request.facts.negotiated()  # None: 406, which Flask answers
            try:
                if content_type is None:
                    answer = None
                elif (on_loop := direct.loop_view_for(method, route.endpoint, request.body)) is not None:
                    # A registration with group commit: parsed on a thread, then waiting for
                    # its batch without one (each hand-off costs tens of microseconds).
                    answer = await direct.answer_on_loop(on_loop, route.arguments, method, path, query,
                                                         scope["headers"], request.body, request.received,
                                                         content_type)
                elif method in _NEVER_BLOCK and not _formats(query):
                    # A read: the in-memory cache only, here (a hand-off costs more).
                    answer = direct.answer(view, route.arguments, method, path, query, scope["headers"],
                                           request.body, request.received, content_type)
                else:
                    answer = await asyncio.get_running_loop().run_in_executor(
                        self._pool, direct.answer, view, route.arguments, method, path, query, scope["headers"],
                        request.body, request.received, content_type)
            except NotWriter:
                answer, to_leader = None, True
            if answer is not None:
                exchange.status = answer[0]
                self._keep(request, route.endpoint, answer[0], answer[1], answer[2])
                await send({"type": "http.response.start", "status": answer[0], "headers": answer[1]})
                await send({"type": "http.response.body", "body": answer[2]})
                return
        environ = self._environ(scope, path, request.body)
        environ[RECEIVED] = request.received
        if to_leader:
            environ[TO_LEADER] = True
        if exchange.access is not None:
            environ[ACCESS_KEY] = exchange.access
        if route is not None and route.rule is not None:
            environ[ROUTE_KEY] = (route.rule, dict(route.arguments))  # Flask routes no more
        if method in _NEVER_BLOCK and (route is None or route.endpoint not in self._door.off_loop) \
                and not _formats(query):
            # Reads only look at the in-memory cache and never wait on the log, so they
            # run here; a hand-off to a thread would cost more than the read itself.
            status, headers, response_body = self._call_wsgi(environ)
        else:
            status, headers, response_body = await asyncio.get_running_loop().run_in_executor(
                self._pool, self._call_wsgi, environ)
        exchange.status = status
        exchange.endpoint = environ.get(ENDPOINT_KEY) or exchange.endpoint
        self._keep(request, exchange.endpoint, status, headers, response_body)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": response_body})

    def _keep(self, request: _Request, endpoint: str, status: int, headers: list[tuple[bytes, bytes]],
              body: bytes) -> None:
        """Keep a view's 200 answer in the read memo, where step 4 said it may be kept."""
        if status == 200 and request.position is not None and request.memo_key is not None:
            assert self._memo is not None
            self._memo.keep(request.memo_key, request.position, endpoint, headers, body)

    @staticmethod
    def _route(exchange: _Exchange, router: Router, method: str, path: str) -> None:
        exchange.route = route = router.match(method, path)
        if route is not None:
            exchange.endpoint = route.endpoint

    async def _answer_fast(self, schema_id: str, send: Any, exchange: _Exchange) -> bool:
        """Answer from the fast path; False when it has no answer (Flask gives one)."""
        answer = self._fast_path.response(schema_id)
        if answer is None:
            return False
        exchange.status = 200
        await send({"type": "http.response.start", "status": 200, "headers": answer[0]})
        await send({"type": "http.response.body", "body": answer[1]})
        return True

    def _audit(self, scope: dict[str, Any], exchange: _Exchange) -> None:
        """One audit line if the request was a change (accepted, denied or failed)."""
        route = exchange.route
        assert route is not None and self._door.audit is not None
        method = scope["method"]
        policy = policy_for(route.endpoint, method)
        denied = exchange.denied
        # A forwarded identity that could not be believed is an attack or a broken
        # cluster, whatever it asked for: audited on every route, with the name it claimed.
        forged = denied is not None and denied.reason == "untrusted_forward"
        if not forged and (policy is None or policy.operation not in CHANGES):
            return
        access = denied.access if denied is not None else exchange.access
        principal = access.principal if access is not None else None
        query = scope["query_string"]
        raw_path = scope.get("raw_path") or scope["path"].encode("utf-8")
        target = raw_path.decode("latin-1") + ("?" + query.decode("latin-1") if query else "")
        status = exchange.status
        result = "accepted" if 200 <= status < 300 else "denied" if denied is not None or status in (401, 403) \
            else "failed"
        client = access.client if access is not None else _address(scope.get("client"))
        # What was refused: the route's operation, or one the body made it (an import).
        operation = denied.operation if denied is not None and denied.operation is not None else (
            policy.operation if policy is not None else None)
        self._door.audit.record(AuditEvent(
            principal=principal.name if principal is not None else "",
            authentication=principal.method if principal is not None else "",
            client=client, operation=operation.value if operation is not None else "",
            resource=resource_of(route),
            method=method, target=target, status=status, result=result, node=self._door.node_url,
            forwarded_by=access.forwarded_by if access is not None else "",
            claimed=denied.claimed if forged and denied is not None else "",
            reason=denied.message if forged and denied is not None else ""))

    async def _read_body(self, receive: Any, held: list[int], facts: _HeaderFacts, http1: bool) -> bytes:
        """The whole request body of a request whose head frames one (`_serve` asks only
        then on HTTP/1.x). Raises _Refused when it is larger than allowed, when all
        bodies in flight would exceed their budget, or when it stops arriving."""
        limits = self._limits
        if facts.declared > limits.max_request_bytes:
            raise _Refused(413, f"Request body larger than the limit of {limits.max_request_bytes} bytes",
                           "body_too_large")
        # On HTTP/1.x, with one Content-Length the body is whole once that many bytes
        # have arrived. Some servers hand a body over marked `more_body` and say it ended
        # only in a second, empty message (granian did, each receive a hop to its
        # runtime's thread and back: stopping at the declared length spared that hop, a
        # bare app reading a 500-byte body served 15.5k requests a second, 21.5k
        # stopping there). Ours hands over a body that has arrived whole in one message.
        remaining = facts.length if http1 else -1  # still to come, where the head says (else negative)
        chunks: list[bytes] = []
        # One deadline for the whole body, swept per loop (body_deadlines: a timer per
        # request cost ~7 us more; an asyncio.timeout more still, wait_for a task per read).
        # The loop by way of the task: on Python 3.11 each asyncio.get_running_loop() (and
        # current_task() asks for it) is a getpid() system call.
        task = asyncio.current_task()
        assert task is not None
        loop = task.get_loop()
        deadlines = self._body_deadlines
        deadlines.watch(loop, task)
        try:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    break
                chunk = message.get("body", b"")
                if chunk:
                    if held[0] + len(chunk) > limits.max_request_bytes:
                        raise _Refused(413, f"Request body larger than the limit of {limits.max_request_bytes} "
                                       "bytes", "body_too_large")
                    with self._inflight_lock:
                        if self._inflight + len(chunk) > limits.max_inflight_bytes:
                            raise _Refused(503, "Too many request bodies in flight; retry shortly",
                                           "inflight_budget")
                        self._inflight += len(chunk)
                    held[0] += len(chunk)
                    chunks.append(chunk)
                    remaining -= len(chunk)
                if not message.get("more_body") or remaining == 0:
                    break
        except asyncio.CancelledError:
            if not deadlines.expired(task):
                raise
            task.uncancel()
            raise _Refused(408, f"The request body did not arrive within {limits.body_timeout:g} s",
                           "body_timeout") from None
        finally:
            deadlines.unwatch(loop, task)
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


async def _send_error(send: Any, status: int, message: str, error_code: int,
                      headers: list[tuple[bytes, bytes]]) -> None:
    body = orjson.dumps({"error_code": error_code, "message": message})
    await send({"type": "http.response.start", "status": status,
                "headers": _FAST_HEADERS + [(b"content-length", str(len(body)).encode())] + headers})
    await send({"type": "http.response.body", "body": body})


class _Request:
    """A request on its way through `_serve`'s steps: what each step found of it."""

    __slots__ = ("scope", "method", "path", "query", "facts", "signed_uri", "received", "body", "fast_id",
                 "memo_key", "position")

    def __init__(self, scope: dict[str, Any], method: str, path: str, query: bytes, facts: _HeaderFacts,
                 signed_uri: str, received: float) -> None:
        self.scope = scope  # with the query a `/contexts/` path stands for
        self.method = method
        self.path = path  # the path as routed: one spelling, the qualified one under `/contexts/`
        self.query = query
        self.facts = facts
        self.signed_uri = signed_uri  # the target as it came, which a forwarded identity signs
        self.received = received  # when it came in (time.monotonic()): a write's timeout counts from then
        self.body = b""
        self.fast_id: str | None = None  # the id's digits, where the id path may answer it
        self.memo_key: Hashable | None = None  # where the view's answer is kept (step 4)
        self.position: int | None = None  # the log position it is kept at


class _HeaderFacts:
    """What the bridge needs of a request's headers, read in one pass: their size (431),
    whether a body is framed, the largest Content-Length declared (413) and the body's
    length where the head fixes it, and the Accept values (the type a kept answer is
    kept under)."""

    __slots__ = ("size", "framed", "declared", "length", "_accept")

    def __init__(self, headers: list[tuple[bytes, bytes]]) -> None:
        size, framed, declared, lengths, chunked = 0, False, -1, 0, False
        accept: list[bytes] | None = None
        for name, value in headers:
            size += len(name) + len(value)
            if name == b"content-length":
                framed = True
                lengths += 1
                if value.isdigit():
                    # Past 19 digits, larger than any limit (and int() would refuse 4,300).
                    declared = max(declared, int(value) if len(value) < 20 else 1 << 64)
            elif name == b"transfer-encoding":
                framed = chunked = True
            elif name == b"accept":
                if accept is None:
                    accept = []
                accept.append(value)
        self.size, self.framed, self.declared, self._accept = size, framed, declared, accept
        # The body's length where the head fixes it: one Content-Length, in digits, and no
        # Transfer-Encoding (which would override it); else -1.
        self.length = declared if lengths == 1 and not chunked else -1

    def negotiated(self) -> str | None:
        """The content type the Accept header(s) choose (None: 406, which Flask answers)."""
        if self._accept is None:
            return V1_JSON
        return response_type(",".join(value.decode("latin-1") for value in self._accept))


def _formats(query: bytes) -> bool:
    """Whether a read asks for its schema `format`ted (`?format=resolved`, say): that parses
    the schema, which costs what its shape costs, so it runs on the pool, never the loop.
    Keys are percent-decoded as Werkzeug reads them (`%66ormat` is `format`)."""
    if not query:
        return False
    if b"format" in query:
        return True
    return b"%" in query and any(key == "format" for key, _ in parse_qsl(
        query.decode("utf-8", "replace"), keep_blank_values=True, errors="replace"))


def _refusal(denied: Denied) -> _Refused:
    headers = [(b"www-authenticate", denied.challenge.encode("latin-1"))] if denied.challenge else []
    return _Refused(denied.status, denied.message, denied.reason, denied.error_code, headers)


def _address(client: Any) -> str:
    return f"{client[0]}:{client[1]}" if client else ""

