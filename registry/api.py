"""The HTTP API: a Flask application factory that translates HTTP to the service.

No domain rules live here. Errors are mapped to Confluent's error body in one place
(`_registry_error`), and anything unexpected becomes a 500 without a traceback.
"""
from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote, unquote

import orjson
from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException
from werkzeug.routing import BaseConverter

from registry import errors
from registry.forward import FORWARD_HEADER, Forwarder
from registry.service import RegistryService
from store.cache import StoredSchema

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
ACCEPTED_BODY_TYPES = frozenset({
    "application/vnd.schemaregistry.v1+json",
    "application/vnd.schemaregistry+json",
    "application/json",
    "application/octet-stream",
})
# Answered before the node has caught up with the log, so orchestrators can probe it.
_ALWAYS_ANSWERED = ("/ready", "/health", "/leader")


def json_response(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status=status, content_type=CONTENT_TYPE)


def raw_response(text: str) -> Response:
    return Response(text, status=200, content_type=CONTENT_TYPE)


def json_body() -> dict[str, Any]:
    """The request body as a JSON object, or a 4xx error."""
    mimetype = request.mimetype
    if mimetype and mimetype not in ACCEPTED_BODY_TYPES:
        raise errors.UnsupportedMediaType(
            f"Unsupported content type {mimetype}; use {CONTENT_TYPE} or application/json")
    raw = request.get_data(cache=True)
    try:
        body = orjson.loads(raw or b"null")
    except orjson.JSONDecodeError as exc:
        raise errors.BadRequest(f"Malformed JSON: {exc}") from None
    if not isinstance(body, dict):
        raise errors.UnprocessableEntity("The request body must be a JSON object")
    return body


def flag(name: str, default: bool = False) -> bool:
    """A boolean query parameter, read as Confluent's (JAX-RS) server does."""
    value = request.args.get(name)
    return default if value is None else value.strip().lower() == "true"


def int_arg(name: str, default: int) -> int:
    value = request.args.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise errors.UnprocessableEntity(f"Query parameter {name} must be an integer, got {value!r}") from None


class SubjectConverter(BaseConverter):
    """A subject in a path: one percent-encoded segment, decoded as UTF-8.

    Routing runs on the path as the client encoded it (see `RawPathMiddleware`), so
    the subject `a/b`, sent as `a%2Fb`, stays one segment and cannot be confused
    with the route around it, whatever the subject contains.
    """

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return unquote(value, encoding="utf-8", errors="replace")

    def to_url(self, value: str) -> str:
        return quote(value, safe="")


class RawPathMiddleware:
    """Route on the request path as sent, when the server tells us what it was.

    WSGI's PATH_INFO is already percent-decoded, which turns `%2F` inside a subject
    into a path separator. Servers that keep the original request target (our ASGI
    bridge, gunicorn, Werkzeug's test client) put it in RAW_URI or REQUEST_URI; we
    route on that. With a server that keeps neither, subjects containing `/` cannot
    be told apart from the route and are not supported.
    """

    def __init__(self, app: Any) -> None:
        self._app = app

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
        if raw:
            path = raw.split("?", 1)[0]
            if "://" in path:  # an absolute-form request target
                path = "/" + path.split("://", 1)[1].partition("/")[2]
            environ["PATH_INFO"] = path
        return self._app(environ, start_response)


class SchemaByIdFastPath:
    """Answers `GET /schemas/ids/{id}` (no query string) without entering Flask.

    It is the read every consumer makes, and Flask's per-request machinery costs
    several times the lookup itself. The body is built by the same function the
    Flask view uses (`schema_body`) and memoised per id; the memo entry is reused only
    while the cache still holds the very same `StoredSchema`, so a hard delete is seen
    at once. Anything else (not ready, unknown id, other paths, query strings) goes
    to Flask unchanged, so errors keep one way out. Never blocks.
    """

    _PREFIX = "/schemas/ids/"

    def __init__(self, service: RegistryService) -> None:
        self._service = service
        self._memo: dict[int, tuple[object, bytes]] = {}

    def answer(self, method: str, path: str, query: str | bytes) -> bytes | None:
        """The response body when this request is one the fast path serves, else None."""
        if method != "GET" or query or not path.startswith(self._PREFIX) or not self._service.is_ready():
            return None
        digits = path[len(self._PREFIX):]
        if not digits.isdigit() or len(digits) > 10:
            return None
        schema_id = int(digits)
        stored = self._service.cached_schema(schema_id)
        if stored is None:
            return None
        memo = self._memo.get(schema_id)
        if memo is not None and memo[0] is stored:
            return memo[1]
        body = orjson.dumps(schema_body(stored))
        self._memo[schema_id] = (stored, body)
        return body

    def wsgi(self, app: Any) -> Any:
        """`app` with this fast path in front of it, for WSGI servers."""

        def serve(environ: dict[str, Any], start_response: Any) -> Any:
            body = self.answer(environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", ""),
                               environ.get("QUERY_STRING", ""))
            if body is None:
                return app(environ, start_response)
            start_response("200 OK", [("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body)))])
            return [body]

        return serve


def schema_body(stored: StoredSchema) -> dict[str, Any]:
    """The body of `GET /schemas/ids/{id}`."""
    body: dict[str, Any] = {}
    if stored.schema_type != "AVRO":
        body["schemaType"] = stored.schema_type
    if stored.references:
        body["references"] = [{"name": r.name, "subject": r.subject, "version": r.version}
                              for r in stored.references]
    body["schema"] = stored.schema
    return body


def create_app(service: RegistryService, *, max_request_bytes: int = 16 * 1024 * 1024,
               cluster_id: str = "embedded", registry_group: str = "schema-registry",
               forwarder: Forwarder | None = None, elector: Any = None) -> Flask:
    """Build a Flask app serving `service`. No global state: build as many as you like."""
    from registry.routes import config_routes, schema_routes, subject_routes

    app = Flask("registry")
    app.config["MAX_CONTENT_LENGTH"] = max_request_bytes
    app.extensions["registry.service"] = service
    app.extensions["registry.elector"] = elector
    app.extensions["registry.metadata"] = {"kafka-cluster": cluster_id,
                                           "schema-registry-cluster": registry_group}
    app.url_map.converters["subject"] = SubjectConverter
    app.register_blueprint(subject_routes)
    app.register_blueprint(schema_routes)
    app.register_blueprint(config_routes)
    app.url_map.strict_slashes = False
    fast_path = SchemaByIdFastPath(service)
    app.extensions["registry.fast_path"] = fast_path
    app.wsgi_app = RawPathMiddleware(fast_path.wsgi(app.wsgi_app))  # type: ignore[method-assign]

    @app.before_request
    def _require_ready() -> None:
        if not service.is_ready() and request.path not in _ALWAYS_ANSWERED:
            raise errors.NotReady("Schema registry is not ready: still reading the schema log")

    @app.errorhandler(errors.NotLeader)
    def _forward_to_leader(exc: errors.NotLeader) -> Response:
        # A follower validated the write and found it needs an append: the leader does it.
        # (Errors raised in an error handler would skip the other handlers: return them.)
        try:
            if exc.leader_url is None:
                raise errors.UnknownLeader("Unknown leader: no node may write at the moment; retry shortly")
            if request.headers.get(FORWARD_HEADER):
                raise errors.UnknownLeader(f"Forwarded here, but this node is not the leader ({exc.leader_url} is)")
            if forwarder is None:
                raise errors.UnknownLeader("This node does not forward writes")
            raw_uri = request.environ.get("RAW_URI") or request.full_path.rstrip("?")
            answer = forwarder.forward(exc.leader_url, request.method, raw_uri, dict(request.headers),
                                       request.get_data(cache=True))
        except errors.RegistryError as error:
            return json_response(error.body(), error.http_status)
        return Response(answer.body, status=answer.status, content_type=answer.content_type)

    @app.errorhandler(errors.RegistryError)
    def _registry_error(exc: errors.RegistryError) -> Response:
        return json_response(exc.body(), exc.http_status)

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Response:
        status = exc.code or 500
        if status == 413:
            message = f"Request body larger than the limit of {max_request_bytes} bytes"
        else:
            message = f"HTTP {status} {exc.name}"
        return json_response({"error_code": status, "message": message}, status)

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Response:
        log.exception("unexpected error serving %s %s", request.method, request.path)
        return json_response({"error_code": 50001, "message": "Internal error in the schema registry"}, 500)

    return app
