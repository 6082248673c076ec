"""What a view needs from the node serving it: found on the current Flask app.

`create_app` puts the node (and the guard and metrics, when there are any) in
`app.extensions`; views reach them through these functions only, so no module holds
global state.
"""
from __future__ import annotations

from collections.abc import Iterable

from flask import current_app, request

from registry.http.metrics import NodeMetrics
from registry.http.security.guard import ACCESS_KEY, Guard
from registry.node import Node
from registry.service import RegistryService

NODE_EXTENSION = "registry.node"
GUARD_EXTENSION = "registry.guard"
METRICS_EXTENSION = "registry.metrics"
DESCRIPTION_EXTENSION = "registry.openapi"


def node() -> Node:
    return current_app.extensions[NODE_EXTENSION]


def service() -> RegistryService:
    return node().service


def guard() -> Guard | None:
    return current_app.extensions.get(GUARD_EXTENSION)


def metrics() -> NodeMetrics | None:
    return current_app.extensions.get(METRICS_EXTENSION)


def readable(subjects: Iterable[str]) -> list[str]:
    """The subjects the caller may read, in order: what a listing shows them."""
    door = guard()
    if door is None:
        return list(subjects)
    return door.readable(request.environ.get(ACCESS_KEY), subjects)
