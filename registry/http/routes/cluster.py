"""The node itself: root, metadata, leader, health and readiness."""
from __future__ import annotations

from typing import Any

from flask import Blueprint

from registry import __version__, errors
from registry.http.bodies import json_response
from registry.http.context import node

cluster_routes = Blueprint("cluster", __name__)


@cluster_routes.get("/")
def root() -> Any:
    return json_response({})


@cluster_routes.get("/v1/metadata/id")
def metadata_id() -> Any:
    this = node()
    return json_response({"scope": {"path": [], "clusters": {
        "kafka-cluster": this.cluster_id,
        "schema-registry-cluster": this.settings.get("schema.registry.group.id")}}})


@cluster_routes.get("/v1/metadata/version")
def metadata_version() -> Any:
    return json_response({"version": __version__, "commitId": ""})


@cluster_routes.get("/v1/metadata/deployment")
def metadata_deployment() -> Any:
    return json_response({"attributes": []})


@cluster_routes.get("/leader")
def leader() -> Any:
    """Ours, for operators and failover tests: who writes, as this node sees it."""
    this = node()
    known = this.elector.leader()
    return json_response({
        "leader": known.url if known is not None else None,
        "is_leader": this.gate.is_leader(),
        "accepted_appends": this.writer.accepted_appends,
    })


@cluster_routes.get("/health")
def health() -> Any:
    return json_response({"status": "UP"})


@cluster_routes.get("/ready")
def ready() -> Any:
    writer = node().writer
    if not writer.caught_up():
        raise errors.NotReady("Schema registry is not ready: still reading the schema log")
    if not writer.writable():
        raise errors.NotReady("Schema registry is not ready: no leader is known yet")
    return json_response({"ready": True})
