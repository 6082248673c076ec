"""The HTTP application: a Flask app factory, and the one place errors become answers.

    bridge = build_asgi(node)        # the ASGI app the listeners serve (registry.http.listener)
    app = create_app(node, forwarder)  # the Flask app behind it

No domain rules live here and no module holds global state: build as many apps as
you like. Every error leaves through `_answer_error`, by `error_answers` (which the bridge's
direct views share); `NotWriter` becomes a forward to the leader.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask, Request, Response, request
from flask.ctx import RequestContext
from werkzeug.routing import BaseConverter, Map, MapAdapter, Rule
from urllib.parse import quote, unquote

from registry import errors
from registry.audit import AuditLog
from registry.http.asgi import ENDPOINT_KEY, RECEIVED, TO_LEADER, AsgiBridge, FrontDoor, Limits
from registry.http.bodies import error_response, json_response
from registry.http.direct import DirectViews
from registry.http.error_answers import error_answer
from registry.http.context import (
    DESCRIPTION_EXTENSION,
    GUARD_EXTENSION,
    METRICS_EXTENSION,
    NODE_EXTENSION,
    guard,
    metrics,
    node,
)
from registry.http.fast_path import SchemaByIdFastPath
from registry.http.forward import FORWARD_HEADER, Forwarder
from registry.http.metrics import NodeMetrics
from registry.http.negotiation import response_type
from registry.http.openapi import describe
from registry.http.read_memo import ReadMemo
from registry.http.routes import BLUEPRINTS, DIRECT_VIEWS, DIRECT_VIEWS_ON_LOOP
from registry.http.routing import ROUTE_KEY, Router
from registry.http.security.cross_site import CrossSite
from registry.http.security.guard import ACCESS_KEY, Guard, build_guard
from registry.http.security.tls import client_context
from registry.node import Node
from registry.subjects import normalize_subject
from store.writer import REQUEST_STARTED, NotWriter


_STARTED_TOKEN = "registry.started_token"
# Answered before the node has caught up with the log, so orchestrators can probe it.
_ALWAYS_ANSWERED = ("/ready", "/health", "/leader")
_OWN_TYPES = frozenset({"ui.ui_index", "ui.ui_file", "observability.metrics_text"})


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
    fast path, and around dispatch authentication and authorization, metrics and the
    audit log as the settings ask. `close()` on the result finishes requests under way
    and releases it. Raises ConfigError for security files or key material it cannot use."""
    settings = node_.settings
    https = any(listener.scheme == "https" for listener in settings.listeners)
    forwarder = Forwarder(settings.store_timeout_seconds, client_context(settings.tls) if https else None)
    cache, reader = node_.cache, node_.reader
    guard_ = build_guard(settings, node_.service.subjects_answering, lambda: reader.next_offset)
    metrics_ = NodeMetrics(node_) if settings.metrics_enabled else None
    audit = AuditLog(settings.audit_log_file) if settings.audit_log_file else None
    app = create_app(node_, forwarder, guard_, metrics_)
    fast_path = SchemaByIdFastPath(node_.service, node_.writer.caught_up, cache)
    limits = Limits(max_request_bytes=settings.max_request_bytes,
                    max_inflight_bytes=settings.max_inflight_request_bytes,
                    body_timeout=settings.request_body_timeout_seconds)
    door = FrontDoor(Router(app.url_map), guard_, metrics_.requests if metrics_ else None, audit,
                     node_.elector.identity.url, off_loop=frozenset({"observability.metrics_text", "schemas.list_schemas"}),
                     cross_site=CrossSite(settings.allowed_origins))

    def close() -> None:
        forwarder.close()
        for part in (guard_, metrics_, audit):
            if part is not None:
                part.close()

    memo = ReadMemo(lambda: reader.next_offset, node_.writer.caught_up)
    direct = DirectViews(node_.service, DIRECT_VIEWS, node_.writer.caught_up, settings.max_request_bytes,
                         DIRECT_VIEWS_ON_LOOP)
    return AsgiBridge(app.wsgi_app, fast_path, settings.server_threads, limits, on_close=close, door=door,
                      memo=memo, direct=direct)


def create_app(node_: Node, forwarder: Forwarder, guard_: Guard | None = None,
               metrics_: NodeMetrics | None = None) -> Flask:
    """A Flask app serving `node_`; writes it may not append go through `forwarder`.
    `guard_` filters listings by the caller's rights and signs forwarded identities;
    `metrics_` is what `/metrics` serves."""
    max_request_bytes = node_.settings.max_request_bytes
    app = _routed_app()
    app.config["MAX_CONTENT_LENGTH"] = max_request_bytes
    app.extensions[NODE_EXTENSION] = node_
    app.extensions[GUARD_EXTENSION] = guard_
    app.extensions[METRICS_EXTENSION] = metrics_
    app.extensions[DESCRIPTION_EXTENSION] = describe(app.url_map)

    # One hook, not one per step: Flask's dispatch costs per hook it calls.
    @app.before_request
    def _before() -> None:
        current = request._get_current_object()  # type: ignore[attr-defined]
        environ = current.environ
        # First: the bridge counts the request under this endpoint, whatever follows.
        environ[ENDPOINT_KEY] = current.endpoint
        # Probes are answered whatever they accept: a health check must not fail on a header.
        probe = current.path in _ALWAYS_ANSWERED
        # A path no route names is a 404 whatever it accepts (Jersey matches first), and
        # the routes answering types of their own (the UI's files, Prometheus's text)
        # are not held to the JSON types every other resource produces.
        if (not probe and current.routing_exception is None and current.endpoint not in _OWN_TYPES
                and response_type(current.headers.get("Accept")) is None):
            raise errors.NotAcceptable("HTTP 406 Not Acceptable")
        # A write's timeout counts from when the request came in (store.writer), so
        # time queued for a server thread is not granted twice.
        received = environ.get(RECEIVED)
        if received is not None:
            environ[_STARTED_TOKEN] = REQUEST_STARTED.set(received)
        if not probe and not node_.writer.caught_up():
            raise errors.NotReady("Schema registry is not ready: still reading the schema log")
        if environ.get(TO_LEADER):
            # Its direct view found this node may not append it: forward it, without
            # running the view again (which would wait for the log a second time).
            raise NotWriter("another node leads")

    @app.teardown_request
    def _forget_receipt(_: BaseException | None) -> None:
        token = request.environ.pop(_STARTED_TOKEN, None)
        if token is not None:
            REQUEST_STARTED.reset(token)

    @app.errorhandler(Exception)
    def _answer_error(exc: Exception) -> Response:
        # One handler for everything (errors raised in an error handler would skip the
        # other handlers), and one mapping, which the bridge's direct views share.
        answer = error_answer(exc, max_request_bytes, f"{request.method} {request.path}")
        if answer is None:
            return _forward(forwarder)
        return json_response(*answer)

    return app


class _Prerouted(RequestContext):
    """Takes the route the bridge matched before dispatch (ROUTE_KEY) instead of matching
    again; Flask documents `match_request` as the hook for this."""

    def match_request(self) -> None:
        routed = self.request.environ.get(ROUTE_KEY)
        if routed is None:
            super().match_request()
        else:
            self.request.url_rule, self.request.view_args = routed


class _LazyBuildRule(Rule):
    """Werkzeug's Rule, its two URL builders compiled when first used, not when the rule
    is added. Nothing here builds URLs (see `create_url_adapter`), and compiling them
    (source through `ast` and `compile`, for each rule) was four fifths of building the
    app: ~35 ms of every start, spent while the node replays its log (bench/cold_start.py)."""

    def _compile_builder(self, append_unknown: bool = True) -> Callable[..., tuple[str, str]]:
        compiled: Callable[..., tuple[str, str]] | None = None

        def build(rule: Rule, *args: Any, **kwargs: Any) -> tuple[str, str]:
            nonlocal compiled
            if compiled is None:
                compiled = Rule._compile_builder(rule, append_unknown)
            return compiled(rule, *args, **kwargs)

        return build


class _RegistryFlask(Flask):
    url_rule_class = _LazyBuildRule
    _prerouted_adapter: MapAdapter | None = None

    def request_context(self, environ: dict[str, Any]) -> RequestContext:
        return _Prerouted(self, environ)

    def create_url_adapter(self, request: Request | None) -> MapAdapter | None:
        # A request the bridge routed (ROUTE_KEY) is matched no more, and nothing here
        # builds URLs: one adapter bound once serves them all (binding one per request
        # to its environ, as Flask does, cost ~10 us a request). Not OPTIONS: Flask's
        # answer to it asks the adapter which methods the request's own path allows.
        if request is not None and request.method != "OPTIONS" and ROUTE_KEY in request.environ:
            if self._prerouted_adapter is None:
                self._prerouted_adapter = self.url_map.bind("localhost")
            return self._prerouted_adapter
        return super().create_url_adapter(request)

    def ensure_sync(self, func: Callable[..., Any]) -> Callable[..., Any]:
        # Every view and hook here is synchronous: Flask's own check (inspect, per hook
        # and view, on every request) is spared. Flask documents this as the override.
        return func


def _routed_app() -> Flask:
    """A Flask app with every route and nothing else (no node): what `create_app`
    builds on, and what `route_map` describes."""
    # No static folder: Flask would otherwise serve /static/<path> (nothing, but a route).
    app = _RegistryFlask("registry", static_folder=None)
    app.url_map.converters["subject"] = SubjectConverter
    app.url_map.strict_slashes = False
    app.url_map.merge_slashes = False  # `//subjects` names no route: never redirect to one
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
    return app


def route_map() -> Map:
    """The URL map every node serves (for the API description; no node needed)."""
    return _routed_app().url_map


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
        body = request.get_data(cache=True)
        door, access = guard(), request.environ.get(ACCESS_KEY)
        identity = None
        if door is not None and access is not None and door.forwarded.signs and access.policy is not None:
            identity = door.forwarded.headers(access.principal, access.client, this.elector.identity.url,
                                              request.method, raw_uri, body)
        answer = forwarder.forward(this.gate.write_target, request.method, raw_uri, dict(request.headers),
                                   body, request.environ.get(RECEIVED), identity)
    except errors.RegistryError as error:
        return error_response(error)
    counted = metrics()
    if counted is not None:
        counted.requests.forwarded(answer.status)
    return Response(answer.body, status=answer.status, content_type=answer.content_type)
