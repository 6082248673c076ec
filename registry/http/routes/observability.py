"""`/metrics` (Prometheus) and `/openapi.json` (the API this node serves)."""
from __future__ import annotations

from typing import Any

import orjson
from flask import Blueprint, Response, current_app
from prometheus_client import CONTENT_TYPE_LATEST

from registry import errors
from registry.http.context import DESCRIPTION_EXTENSION, metrics

observability_routes = Blueprint("observability", __name__)


@observability_routes.get("/metrics")
def metrics_text() -> Any:
    found = metrics()
    if found is None:
        raise errors.NotFound("HTTP 404 Not Found: metrics.enabled is false")
    return Response(found.exposition(), status=200, content_type=CONTENT_TYPE_LATEST)


@observability_routes.get("/openapi.json")
def openapi() -> Any:
    return Response(orjson.dumps(current_app.extensions[DESCRIPTION_EXTENSION]), status=200,
                    content_type="application/json")
