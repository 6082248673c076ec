"""The HTTP application: a Flask app factory, and the one place errors become answers.

    bridge = build_asgi(node)        # the ASGI app granian serves (registry.http.server)
    app = create_app(node, forwarder)  # the Flask app behind it

No domain rules live here and no module holds global state: build as many apps as
you like. Every error leaves through `_answer_error`: the registry's own
(`registry.errors`, one type per Confluent code), the store's (`NotWriter` becomes a
forward to the leader, `RecordTooLarge` 42209, `StoreTimeout` 50002, `LogUnavailable`
50001), Werkzeug's HTTP
errors, and anything unexpected (a 500 without a traceback).
"""
from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException
from werkzeug.routing import BaseConverter
from urllib.parse import quote, unquote

from registry import errors
from registry.http.asgi import RECEIVED, AsgiBridge, Limits
from registry.http.bodies import error_response, json_response
from registry.http.context import NODE_EXTENSION, node
from registry.http.fast_path import SchemaByIdFastPath
from registry.http.forward import FORWARD_HEADER, Forwarder
from registry.http.negotiation import response_type
from registry.http.routes import BLUEPRINTS
from registry.node import Node
from registry.subjects import normalize_subject
from store.log import LogUnavailable, RecordTooLarge
from store.writer import NotWriter, StoreTimeout

log = logging.getLogger(__name__)

# Answered before the node has caught up with the log, so orchestrators can probe it.
_ALWAYS_ANSWERED = ("/ready", "/health", "/leader")


class SubjectConverter(BaseConverter):
    """A subject in a path: one percent-encoded segment, decoded as UTF-8.

    Routing runs on the path as the client encoded it (see `AsgiBridge`), so the
    subject `a/b`, sent as `a%2Fb`, stays one segment and cannot be confused with the
    route around it, whatever the subject contains.
    """

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        # `:.:name` and `name` are one subject (Confluent's QualifiedSubject.normalize).
        return normalize_subject(unquote(value, encoding="utf-8", errors="replace"))

    def to_url(self, value: str) -> str:
        return quote(value, safe="")


def build_asgi(node_: Node) -> AsgiBridge:
    """The node's whole HTTP front end: the Flask app behind an ASGI bridge with the id
    fast path. `close()` on the result finishes requests under way and releases it."""
    settings = node_.settings
    forwarder = Forwarder(settings.store_timeout_seconds)
    app = create_app(node_, forwarder)
    fast_path = SchemaByIdFastPath(node_.service, node_.writer.caught_up)
    limits = Limits(max_request_bytes=settings.max_request_bytes,
                    max_inflight_bytes=settings.max_inflight_request_bytes,
                    body_timeout=settings.request_body_timeout_seconds)
    return AsgiBridge(app.wsgi_app, fast_path, settings.server_threads, limits, on_close=forwarder.close)


def create_app(node_: Node, forwarder: Forwarder) -> Flask:
    """A Flask app serving `node_`; writes it may not append go through `forwarder`."""
    max_request_bytes = node_.settings.max_request_bytes
    app = Flask("registry")
    app.wsgi_app = _without_trailing_slash(app.wsgi_app)  # type: ignore[method-assign]
    app.config["MAX_CONTENT_LENGTH"] = max_request_bytes
    app.extensions[NODE_EXTENSION] = node_
    app.url_map.converters["subject"] = SubjectConverter
    app.url_map.strict_slashes = False
    app.url_map.merge_slashes = False  # `//subjects` names no route: never redirect to one
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)

    @app.before_request
    def _negotiate() -> None:
        # Probes are answered whatever they accept: a health check must not fail on a header.
        if request.path not in _ALWAYS_ANSWERED and response_type(request.headers.get("Accept")) is None:
            raise errors.NotAcceptable("HTTP 406 Not Acceptable")

    @app.before_request
    def _require_ready() -> None:
        if not node_.writer.caught_up() and request.path not in _ALWAYS_ANSWERED:
            raise errors.NotReady("Schema registry is not ready: still reading the schema log")

    @app.errorhandler(Exception)
    def _answer_error(exc: Exception) -> Response:
        # One handler for everything, so the mapping reads top to bottom. (Errors raised
        # in an error handler would skip the other handlers: this one returns them.)
        if isinstance(exc, errors.RegistryError):
            return error_response(exc)
        if isinstance(exc, NotWriter):
            return _forward(forwarder)
        if isinstance(exc, RecordTooLarge):
            return error_response(errors.SchemaTooLarge(f"Write failed because schema is too large: {exc}"))
        if isinstance(exc, StoreTimeout):
            return error_response(errors.StoreTimeout(f"Timed out on the schema log: {exc}"))
        if isinstance(exc, LogUnavailable):
            return error_response(errors.StoreError(f"The schema log is unavailable: {exc}"))
        if isinstance(exc, HTTPException):
            status = exc.code or 500
            if status == 413:
                message = f"Request body larger than the limit of {max_request_bytes} bytes"
            else:
                message = f"HTTP {status} {exc.name}"
            return json_response({"error_code": status, "message": message}, status)
        log.exception("unexpected error serving %s %s", request.method, request.path)
        return json_response({"error_code": 50001, "message": "Internal error in the schema registry"}, 500)

    return app


def _without_trailing_slash(wsgi_app: Any) -> Any:
    """Serve `/subjects/` as `/subjects`, as JAX-RS does for every resource (one slash
    only: `//` stays a path no route names)."""
    def app(environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if len(path) > 1 and path.endswith("/") and not path.endswith("//"):
            environ["PATH_INFO"] = path[:-1]
        return wsgi_app(environ, start_response)
    return app


def _forward(forwarder: Forwarder) -> Response:
    """Send the write this node may not append to the leader; answer with its reply."""
    this = node()
    try:
        if request.headers.get(FORWARD_HEADER) == this.elector.identity.url:
            # Another node sent it here as to the leader, and we are not: the two disagree
            # about who leads (one of them is behind). Forwarding on could loop.
            raise errors.UnknownLeader("Forwarded here, but this node is not the leader "
                                       f"({this.gate.leader_url() or 'none known'} is)")
        problem = this.gate.leader_problem()
        if problem is not None:
            raise errors.UnknownLeader(problem)
        raw_uri = request.environ.get("RAW_URI") or request.full_path.rstrip("?")
        answer = forwarder.forward(this.gate.write_target, request.method, raw_uri, dict(request.headers),
                                   request.get_data(cache=True), request.environ.get(RECEIVED))
    except errors.RegistryError as error:
        return error_response(error)
    return Response(answer.body, status=answer.status, content_type=answer.content_type)
