"""Request and response bodies: what the routes read from a request and how they answer.

Everything here is about HTTP's shape of the domain's values; no rule lives here.
"""
from __future__ import annotations

from typing import Any

import orjson
from flask import Response, request

from registry import errors
from registry.service import MAX_INT32, NewSchema
from store.cache import StoredSchema
from store.records import SchemaReference, SchemaValue

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
ACCEPTED_BODY_TYPES = frozenset({
    "application/vnd.schemaregistry.v1+json",
    "application/vnd.schemaregistry+json",
    "application/json",
    "application/octet-stream",
})


# ---- responses ----------------------------------------------------------------------


def json_response(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status=status, content_type=CONTENT_TYPE)


def raw_response(text: str) -> Response:
    return Response(text, status=200, content_type=CONTENT_TYPE)


def error_response(error: errors.RegistryError) -> Response:
    return json_response(error.body(), error.http_status)


def schema_body(stored: StoredSchema) -> dict[str, Any]:
    """The body of `GET /schemas/ids/{id}`."""
    body: dict[str, Any] = {}
    if stored.schema_type != "AVRO":
        body["schemaType"] = stored.schema_type
    if stored.references:
        body["references"] = references_body(stored.references)
    body["schema"] = stored.schema
    return body


def version_body(value: SchemaValue) -> dict[str, Any]:
    """A subject's version as `GET /subjects/{s}/versions/{v}` answers it."""
    body: dict[str, Any] = {"subject": value.subject, "version": value.version, "id": value.id}
    if value.schema_type != "AVRO":
        body["schemaType"] = value.schema_type
    if value.references:
        body["references"] = references_body(value.references)
    body["schema"] = value.schema
    return body


def references_body(refs: tuple[SchemaReference, ...]) -> list[dict[str, Any]]:
    return [{"name": r.name, "subject": r.subject, "version": r.version} for r in refs]


# ---- requests -----------------------------------------------------------------------


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


def new_schema(body: dict[str, Any]) -> NewSchema:
    """The schema a register, lookup or compatibility request names."""
    schema = body.get("schema")
    if not isinstance(schema, str) or not schema.strip():
        raise errors.InvalidSchema("Empty schema" if schema in (None, "") else "The schema must be a string")
    schema_type = body.get("schemaType") or "AVRO"
    if not isinstance(schema_type, str):
        raise errors.UnprocessableEntity("schemaType must be a string")
    return NewSchema(schema, schema_type.upper(), references(body.get("references")))


def references(raw: Any) -> tuple[SchemaReference, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise errors.UnprocessableEntity("references must be a list")
    refs = []
    for item in raw:
        if not isinstance(item, dict):
            raise errors.UnprocessableEntity("each reference must be an object")
        name, subject, version = item.get("name"), item.get("subject"), item.get("version")
        if not isinstance(name, str) or not isinstance(subject, str) or not name or not subject:
            raise errors.UnprocessableEntity("a reference needs a string name and subject")
        if not is_int(version) or not (version == -1 or 1 <= version <= MAX_INT32):
            raise errors.InvalidVersion(f"Invalid reference version {version!r}")
        refs.append(SchemaReference(name, subject, version))
    return tuple(refs)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def optional_positive(body: dict[str, Any], name: str) -> int | None:
    """`id` or `version` of an IMPORT registration: absent, -1, or 1..2^31-1."""
    value = body.get(name)
    if value is None or value == -1:
        return None
    if not is_int(value) or not 1 <= value <= MAX_INT32:
        raise errors.UnprocessableEntity(f"{name} must be an integer between 1 and {MAX_INT32}")
    return value


def schema_id(raw: str) -> int:
    """A schema id from the path; an id that cannot exist is simply not found."""
    try:
        value = int(raw)
    except ValueError:
        raise errors.SchemaNotFound("Schema not found") from None
    if not 0 <= value <= MAX_INT32:
        raise errors.SchemaNotFound("Schema not found")
    return value
