"""Writes the bridge answers without Flask: its direct views.

Registering is every producer's first call for each schema, and Flask's request
machinery (its request context, `request.args`, the Response object, the WSGI
environ built for it) was a fifth of the registry's CPU per registration (issue 17).
A direct view is the same function Flask's view calls (`routes.subjects.register_answer`),
found by the endpoint Flask's own URL map matched (`routing.Router`): there is one
routing table and one view. The bridge has already done what every request shares
(limits, authentication and authorization, metrics, the audit); what Flask's
`before_request` adds is done here too: the Accept header's type (the bridge asks only
when one is acceptable), readiness, and the request's receipt time for the write's
timeout. Errors leave through the one mapping (`error_answers`).

Anything else goes to Flask, unchanged: a node not ready and a query string that is
not UTF-8 (Werkzeug's reading of it decides). A write this node may not append raises
`NotWriter` out of `answer`: the bridge then has Flask forward it to the leader, without
running the view again (a write that waited for an election must not wait twice).
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import orjson
import werkzeug.urls  # noqa: F401  (registers the "werkzeug.url_quote" codec error handler)
from werkzeug.datastructures import ImmutableMultiDict
from werkzeug.http import parse_options_header

from registry.http.error_answers import error_answer
from registry.service import RegistryService
from store.writer import REQUEST_STARTED

# (status, headers, body) as the bridge sends them.
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


@dataclass(frozen=True, slots=True)
class DirectRequest:
    """What a direct view reads of a request, each part as Flask's request gives it."""

    arguments: Mapping[str, Any]  # the route's converted path arguments (`subject` decoded)
    args: Mapping[str, str]  # the query parameters (`request.args`: `get` gives the first)
    mimetype: str  # the Content-Type, less parameters, lower case (`request.mimetype`)
    body: bytes


DirectView = Callable[[RegistryService, DirectRequest], Any]
LoopView = Callable[[RegistryService, DirectRequest], Awaitable[Any]]


class DirectViews:
    """The direct views of one node (`views`, by method and Flask endpoint), answering on the
    bridge's pool threads, and their twins answering on the event loop (`on_loop`).
    Thread-safe: holds no state of its own."""

    def __init__(self, service: RegistryService, views: Mapping[tuple[str, str], DirectView],
                 ready: Callable[[], bool], max_request_bytes: int,
                 on_loop: Mapping[tuple[str, str], LoopView] | None = None) -> None:
        self._service = service
        self._views = dict(views)  # by (method, Flask endpoint)
        # Their twins on the event loop, while the service takes writes that way
        # (group commit on: `RegistryService.register_async`).
        self._on_loop = dict(on_loop or {}) if service.group_commit else {}
        self._ready = ready
        self._max_request_bytes = max_request_bytes

    def view_for(self, method: str, endpoint: str) -> DirectView | None:
        """The direct view of this method on this endpoint, if there is one. By both: a
        rule matches other methods too (OPTIONS, say, which Flask answers itself)."""
        return self._views.get((method, endpoint))

    def loop_view_for(self, method: str, endpoint: str, body: bytes) -> LoopView | None:
        """The twin of `view_for`'s view to run on the event loop itself, if it has one
        and the body is small enough for its JSON to be read there (the schema in it is
        parsed and checked on a writer's thread, whatever its size)."""
        if len(body) > _MAX_LOOP_BODY:
            return None
        return self._on_loop.get((method, endpoint))

    def answer(self, view: DirectView, arguments: Mapping[str, Any], method: str, path: str, query: bytes,
               headers: Iterable[tuple[bytes, bytes]], body: bytes, received: float,
               content_type: str) -> Answer | None:
        """The answer of `view` to this request, typed `content_type` (what its Accept
        header chose), or None when Flask must answer it. `received`: when the request
        came in (time.monotonic()), from which a write's timeout counts. Blocks as the
        view does (a write waits on the log); run it on a pool thread. Raises NotWriter
        when this node may not append the write (to be forwarded to the leader)."""
        request = self._request(arguments, query, headers, body)
        if request is None:
            return None
        token = REQUEST_STARTED.set(received)
        try:
            status, result = 200, view(self._service, request)
        except Exception as exc:  # every error leaves through the one mapping
            status, result = self._mapped(exc, method, path)
        finally:
            REQUEST_STARTED.reset(token)
        return _answer(status, result, content_type)

    async def answer_on_loop(self, view: LoopView, arguments: Mapping[str, Any], method: str, path: str,
                             query: bytes, headers: Iterable[tuple[bytes, bytes]], body: bytes,
                             received: float, content_type: str) -> Answer | None:
        """`answer` with a view from `loop_view_for`, on the event loop."""
        request = self._request(arguments, query, headers, body)
        if request is None:
            return None
        token = REQUEST_STARTED.set(received)
        try:
            status, result = 200, await view(self._service, request)
        except Exception as exc:  # every error leaves through the one mapping
            status, result = self._mapped(exc, method, path)
        finally:
            REQUEST_STARTED.reset(token)
        return _answer(status, result, content_type)

    def _request(self, arguments: Mapping[str, Any], query: bytes, headers: Iterable[tuple[bytes, bytes]],
                 body: bytes) -> DirectRequest | None:
        """What the view reads of the request, or None when Flask must answer it."""
        if not self._ready():
            return None
        try:
            args = ImmutableMultiDict(parse_qsl(query.decode(), keep_blank_values=True,
                                                errors="werkzeug.url_quote")) if query else _NO_ARGS
        except UnicodeDecodeError:
            return None
        mimetype = ""
        for name, value in headers:
            if name == b"content-type":  # the last one, as the WSGI environ keeps it
                mimetype = value.decode("latin-1")
        if mimetype:
            mimetype = parse_options_header(mimetype)[0].lower()
        return DirectRequest(arguments, args, mimetype, body)

    def _mapped(self, exc: Exception, method: str, path: str) -> tuple[Any, int]:
        """(status, body) of a view's error; re-raises NotWriter (the bridge has Flask
        forward it to the leader)."""
        mapped = error_answer(exc, self._max_request_bytes, f"{method} {path}")
        if mapped is None:
            raise exc
        result, status = mapped
        return status, result


def _answer(status: int, result: Any, content_type: str) -> Answer:
    data = orjson.dumps(result)
    return status, [(b"content-type", content_type.encode("latin-1")),
                    (b"content-length", b"%d" % len(data))], data


# A body up to this size has its JSON read on the event loop (microseconds), a larger one
# on a pool thread; the schema it holds is never parsed on the loop (`register_async`).
_MAX_LOOP_BODY = 4 * 1024

_NO_ARGS: ImmutableMultiDict[str, str] = ImmutableMultiDict()
