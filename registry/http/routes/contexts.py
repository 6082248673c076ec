"""`/contexts`: the contexts subjects live in (Confluent's ContextsResource)."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, request

from registry.http.bodies import CONTENT_TYPE, int_arg, json_response
from registry.http.context import service

context_routes = Blueprint("contexts", __name__)


@context_routes.get("/contexts")
def list_contexts() -> Any:
    found = service().contexts(request.args.get("contextPrefix", ""))
    offset, limit = max(int_arg("offset", 0), 0), int_arg("limit", -1)
    return json_response(found[offset:] if limit <= 0 else found[offset:offset + limit])


@context_routes.delete("/contexts/<subject:context>")
def delete_context(context: str) -> Any:
    """204 once the context is forgotten; 42211 while a subject lives in it."""
    service().delete_context(context)
    return Response(status=204, content_type=CONTENT_TYPE)
