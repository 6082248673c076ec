"""`/schemas/...`: schemas by id, listing them, and the schema types served."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Blueprint, request

from registry.http.bodies import (
    flag, flag_in, int_arg, json_response, raw_response, schema_body, schema_id, version_body,
)
from registry.http.context import readable, service
from registry.http.direct import DirectRequest
from registry.service import RegistryService

schema_routes = Blueprint("schemas", __name__)


@schema_routes.get("/schemas")
def list_schemas() -> Any:
    registry = service()
    offset, limit = max(int_arg("offset", 0), 0), int_arg("limit", -1)
    found = registry.schemas(request.args.get("subjectPrefix", ""), deleted=flag("deleted"),
                             latest_only=flag("latestOnly"))
    # Only what the caller may read, then the page (Confluent's normalizeLimit: <= 0 is no limit).
    shown = set(readable(dict.fromkeys(v.subject for v in found)))
    visible = [v for v in found if v.subject in shown]
    return json_response([version_body(v, registry.cached_schema_in(v))
                          for v in visible[offset:None if limit <= 0 else offset + limit]])


@schema_routes.get("/schemas/types")
def schema_types() -> Any:
    return json_response(service().schema_types())


@schema_routes.get("/schemas/ids/<schema_id_text>")
def get_schema(schema_id_text: str) -> Any:
    return json_response(schema_answer(service(), schema_id_text, request.args))


def schema_answer(registry: RegistryService, schema_id_text: str, args: Mapping[str, str]) -> dict[str, Any]:
    """The answer to reading a schema by id: Flask's view and the bridge's direct view
    (a deserializer's `?subject=` read, which the id path does not take)."""
    stored, holder = registry.schema_by_id(schema_id(schema_id_text), args.get("subject"))
    body = schema_body(stored, holder)
    fmt = args.get("format")
    if fmt:
        body["schema"] = registry.formatted(stored.schema_type, stored.schema, stored.references,
                                            holder.subject if holder else "", fmt)
    if flag_in(args, "fetchMaxId"):
        body["maxId"] = registry.max_id(stored.context)
    return body


def _get_schema_direct(registry: RegistryService, request_: DirectRequest) -> dict[str, Any]:
    return schema_answer(registry, request_.arguments["schema_id_text"], request_.args)


DIRECT = {("GET", "schemas.get_schema"): _get_schema_direct}


@schema_routes.get("/schemas/ids/<schema_id_text>/schema")
def get_schema_text(schema_id_text: str) -> Any:
    stored, holder = service().schema_by_id(schema_id(schema_id_text), request.args.get("subject"))
    return raw_response(service().formatted(stored.schema_type, stored.schema, stored.references,
                                            holder.subject if holder else "", request.args.get("format")))


@schema_routes.get("/schemas/ids/<schema_id_text>/subjects")
def get_schema_subjects(schema_id_text: str) -> Any:
    return json_response(readable(service().subjects_of_id(schema_id(schema_id_text), deleted=flag("deleted"),
                                                           subject=request.args.get("subject"))))


@schema_routes.get("/schemas/ids/<schema_id_text>/versions")
def get_schema_versions(schema_id_text: str) -> Any:
    found = service().versions_of_id(schema_id(schema_id_text), deleted=flag("deleted"),
                                     subject=request.args.get("subject"))
    shown = set(readable(dict.fromkeys(s for s, _ in found)))
    return json_response([{"subject": s, "version": v} for s, v in found if s in shown])


@schema_routes.get("/schemas/guids/<guid>")
def get_schema_by_guid(guid: str) -> Any:
    stored = service().schema_by_guid(guid)
    return json_response(schema_body(stored))


@schema_routes.get("/schemas/guids/<guid>/ids")
def get_ids_of_guid(guid: str) -> Any:
    return json_response([{"context": context, "id": schema_id}
                          for context, schema_id in service().ids_of_guid(guid)])
