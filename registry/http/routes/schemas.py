"""`/schemas/...`: schemas by id, listing them, and the schema types served."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, request

from registry.http.bodies import flag, int_arg, json_response, raw_response, schema_body, schema_id, version_body
from registry.http.context import service

schema_routes = Blueprint("schemas", __name__)


@schema_routes.get("/schemas")
def list_schemas() -> Any:
    found = service().schemas(request.args.get("subjectPrefix", ""), deleted=flag("deleted"),
                              latest_only=flag("latestOnly"), offset=max(int_arg("offset", 0), 0),
                              limit=int_arg("limit", -1))
    return json_response([version_body(v) for v in found])


@schema_routes.get("/schemas/types")
def schema_types() -> Any:
    return json_response(service().schema_types())


@schema_routes.get("/schemas/ids/<schema_id_text>")
def get_schema(schema_id_text: str) -> Any:
    registry = service()
    body = schema_body(registry.schema_by_id(schema_id(schema_id_text), request.args.get("subject")))
    if flag("fetchMaxId"):
        body["maxId"] = registry.max_id()
    return json_response(body)


@schema_routes.get("/schemas/ids/<schema_id_text>/schema")
def get_schema_text(schema_id_text: str) -> Any:
    return raw_response(service().schema_by_id(schema_id(schema_id_text), request.args.get("subject")).schema)


@schema_routes.get("/schemas/ids/<schema_id_text>/subjects")
def get_schema_subjects(schema_id_text: str) -> Any:
    return json_response(service().subjects_of_id(schema_id(schema_id_text), deleted=flag("deleted")))


@schema_routes.get("/schemas/ids/<schema_id_text>/versions")
def get_schema_versions(schema_id_text: str) -> Any:
    return json_response([{"subject": s, "version": v}
                          for s, v in service().versions_of_id(schema_id(schema_id_text), deleted=flag("deleted"))])
