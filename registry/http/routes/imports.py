"""`POST /import/schemas`: ours, not Confluent's. Many IMPORT registrations in one request
and one append, for `schema-registry import` (an import of 100,000 schemas one
`POST /subjects/{s}/versions` at a time spends most of its time in HTTP round trips).

    POST /import/schemas
    {"schemas": [{"subject": "orders-value", "version": 1, "id": 7, "schema": "...",
                  "schemaType": "AVRO", "references": [...], "metadata": {...}, "ruleSet": {...}}, ...]}
    200 {"results": [{"subject": "orders-value", "version": 1, "id": 7} | {"error_code": 42205, "message": "..."}, ...]}

Each entry is taken as `POST /subjects/{subject}/versions` takes it in IMPORT mode (its
subject must be in IMPORT mode, `id` and `version` are required) and succeeds or fails
alone; the results are in the entries' order. References resolve against what the
registry held when the request came: an entry cannot reference another entry of the same
request (`schema-registry import` sends referenced versions in an earlier request). Authorization: `import` on the registry
as a whole. At most `MAX_ENTRIES` entries a request, within the request body limit.
"""
from __future__ import annotations

from typing import Any

from flask import Blueprint

from registry import errors
from registry.http.bodies import json_body, json_response, metadata, new_schema, optional_positive, rule_set
from registry.http.context import service
from registry.service import RegisterRequest

import_routes = Blueprint("imports", __name__)

MAX_ENTRIES = 10_000


def _entry(raw: Any) -> tuple[str, RegisterRequest] | errors.RegistryError:
    """One entry as a registration, or the error refusing it."""
    try:
        if not isinstance(raw, dict):
            raise errors.UnprocessableEntity("Each imported schema must be a JSON object")
        subject = raw.get("subject")
        if not isinstance(subject, str):
            raise errors.UnprocessableEntity("Each imported schema needs its subject, a string")
        schema_id, version = optional_positive(raw, "id"), optional_positive(raw, "version")
        if schema_id is None or version is None:
            raise errors.UnprocessableEntity("Each imported schema needs its id and version")
        schema = service().with_resolved_references(new_schema(raw))
        return subject, RegisterRequest(schema, schema_id=schema_id, version=version,
                                        metadata=metadata(raw), rule_set=rule_set(raw))
    except errors.RegistryError as exc:
        return exc


@import_routes.post("/import/schemas")
def import_schemas() -> Any:
    entries = json_body().get("schemas")
    if not isinstance(entries, list):
        raise errors.UnprocessableEntity("The body must hold a list of schemas under \"schemas\"")
    if len(entries) > MAX_ENTRIES:
        raise errors.UnprocessableEntity(f"At most {MAX_ENTRIES} schemas may be imported in one request")
    results = service().import_many([_entry(raw) for raw in entries])
    return json_response({"results": [
        result.body() if isinstance(result, errors.RegistryError)
        else {"subject": result.subject, "version": result.version, "id": result.id}
        for result in results]})
