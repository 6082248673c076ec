"""The REST resources, grouped as Confluent groups them. Each view only translates."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, request

from registry import errors
from registry.api import flag, int_arg, json_body, json_response, raw_response, schema_body
from registry.service import MAX_INT32, NewSchema, RegisterRequest, RegistryService
from store.records import SchemaReference, SchemaValue

subject_routes = Blueprint("subjects", __name__)
schema_routes = Blueprint("schemas", __name__)
config_routes = Blueprint("config", __name__)


def _service() -> RegistryService:
    return current_app.extensions["registry.service"]


# ---- request bodies ----------------------------------------------------------------


def _new_schema(body: dict[str, Any]) -> NewSchema:
    schema = body.get("schema")
    if not isinstance(schema, str) or not schema.strip():
        raise errors.InvalidSchema("Empty schema" if schema in (None, "") else "The schema must be a string")
    schema_type = body.get("schemaType") or "AVRO"
    if not isinstance(schema_type, str):
        raise errors.UnprocessableEntity("schemaType must be a string")
    return NewSchema(schema, schema_type.upper(), _references(body.get("references")))


def _references(raw: Any) -> tuple[SchemaReference, ...]:
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
        if not _is_int(version) or not (version == -1 or 1 <= version <= MAX_INT32):
            raise errors.InvalidVersion(f"Invalid reference version {version!r}")
        refs.append(SchemaReference(name, subject, version))
    return tuple(refs)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _optional_positive(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None or (name == "version" and value == -1) or (name == "id" and value == -1):
        return None
    if not _is_int(value) or not 1 <= value <= MAX_INT32:
        raise errors.UnprocessableEntity(f"{name} must be an integer between 1 and {MAX_INT32}")
    return value


def _resolve_latest_references(schema: NewSchema) -> NewSchema:
    """References may say version -1 for "latest"; store the version they resolve to."""
    if not any(r.version == -1 for r in schema.references):
        return schema
    service = _service()
    refs = tuple(SchemaReference(r.name, r.subject, service.version(r.subject, "latest").version)
                 if r.version == -1 else r for r in schema.references)
    return NewSchema(schema.schema, schema.schema_type, refs)


# ---- responses ----------------------------------------------------------------------


def _version_body(value: SchemaValue) -> dict[str, Any]:
    body: dict[str, Any] = {"subject": value.subject, "version": value.version, "id": value.id}
    if value.schema_type != "AVRO":
        body["schemaType"] = value.schema_type
    if value.references:
        body["references"] = _references_body(value.references)
    body["schema"] = value.schema
    return body


def _references_body(refs: tuple[SchemaReference, ...]) -> list[dict[str, Any]]:
    return [{"name": r.name, "subject": r.subject, "version": r.version} for r in refs]


def _schema_id(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise errors.SchemaNotFound("Schema not found") from None
    if not 0 <= value <= MAX_INT32:
        raise errors.SchemaNotFound("Schema not found")
    return value


# ---- subjects and versions ----------------------------------------------------------


@subject_routes.get("/")
def root() -> Any:
    return json_response({})


@subject_routes.get("/subjects")
def list_subjects() -> Any:
    return json_response(_service().subjects(request.args.get("subjectPrefix", ""),
                                             deleted=flag("deleted"), deleted_only=flag("deletedOnly")))


@subject_routes.post("/subjects/<subject:subject>")
def lookup_schema(subject: str) -> Any:
    service = _service()
    found = service.lookup(subject, _resolve_latest_references(_new_schema(json_body())),
                           normalize=flag("normalize"), deleted=flag("deleted"))
    return json_response(_version_body(found))


@subject_routes.delete("/subjects/<subject:subject>")
def delete_subject(subject: str) -> Any:
    return json_response(_service().delete_subject(subject, permanent=flag("permanent")))


@subject_routes.get("/subjects/<subject:subject>/versions")
def list_versions(subject: str) -> Any:
    return json_response(_service().versions(subject, deleted=flag("deleted")))


@subject_routes.post("/subjects/<subject:subject>/versions")
def register(subject: str) -> Any:
    body = json_body()
    schema = _resolve_latest_references(_new_schema(body))
    value = _service().register(subject, RegisterRequest(
        schema, normalize=flag("normalize"),
        schema_id=_optional_positive(body, "id"), version=_optional_positive(body, "version")))
    return json_response({"id": value.id})


@subject_routes.get("/subjects/<subject:subject>/versions/<version>")
def get_version(subject: str, version: str) -> Any:
    return json_response(_version_body(_service().version(subject, version,
                                                          deleted=flag("deleted"))))


@subject_routes.get("/subjects/<subject:subject>/versions/<version>/schema")
def get_version_schema(subject: str, version: str) -> Any:
    return raw_response(_service().version(subject, version,
                                           deleted=flag("deleted")).schema)


@subject_routes.get("/subjects/<subject:subject>/versions/<version>/referencedby")
def referenced_by(subject: str, version: str) -> Any:
    return json_response(_service().referenced_by(subject, version))


@subject_routes.delete("/subjects/<subject:subject>/versions/<version>")
def delete_version(subject: str, version: str) -> Any:
    return json_response(_service().delete_version(subject, version,
                                                   permanent=flag("permanent")))


@subject_routes.post("/compatibility/subjects/<subject:subject>/versions/<version>")
def check_version(subject: str, version: str) -> Any:
    return _compatibility(subject, version)


@subject_routes.post("/compatibility/subjects/<subject:subject>/versions")
def check_all_versions(subject: str) -> Any:
    return _compatibility(subject, None)


def _compatibility(subject: str, version: str | None) -> Any:
    schema = _resolve_latest_references(_new_schema(json_body()))
    try:
        problems = _service().check_compatibility(subject, version, schema, normalize=flag("normalize"))
    except errors.InvalidSchema as exc:
        # Confluent's CompatibilityResource: with verbose an invalid schema is an answer.
        if not flag("verbose"):
            raise
        problems = [exc.message]
    body: dict[str, Any] = {"is_compatible": not problems}
    if flag("verbose"):
        body["messages"] = problems
    return json_response(body)


# ---- schemas by id ------------------------------------------------------------------


@schema_routes.get("/schemas")
def list_schemas() -> Any:
    found = _service().schemas(request.args.get("subjectPrefix", ""), deleted=flag("deleted"),
                               latest_only=flag("latestOnly"), offset=max(int_arg("offset", 0), 0),
                               limit=int_arg("limit", -1))
    return json_response([_version_body(v) for v in found])


@schema_routes.get("/schemas/types")
def schema_types() -> Any:
    return json_response(_service().schema_types())


@schema_routes.get("/schemas/ids/<schema_id>")
def get_schema(schema_id: str) -> Any:
    service = _service()
    body = schema_body(service.schema_by_id(_schema_id(schema_id), request.args.get("subject")))
    if flag("fetchMaxId"):
        body["maxId"] = service.max_id()
    return json_response(body)


@schema_routes.get("/schemas/ids/<schema_id>/schema")
def get_schema_text(schema_id: str) -> Any:
    return raw_response(_service().schema_by_id(_schema_id(schema_id), request.args.get("subject")).schema)


@schema_routes.get("/schemas/ids/<schema_id>/subjects")
def get_schema_subjects(schema_id: str) -> Any:
    return json_response(_service().subjects_of_id(_schema_id(schema_id), deleted=flag("deleted")))


@schema_routes.get("/schemas/ids/<schema_id>/versions")
def get_schema_versions(schema_id: str) -> Any:
    return json_response([{"subject": s, "version": v}
                          for s, v in _service().versions_of_id(_schema_id(schema_id), deleted=flag("deleted"))])


# ---- config, mode, metadata, health -------------------------------------------------


def _subject_or_global(subject: str | None) -> str | None:
    return None if subject is None else subject


@config_routes.get("/config")
@config_routes.get("/config/<subject:subject>")
def get_config(subject: str | None = None) -> Any:
    service = _service()
    name = subject
    if name is None:
        return json_response({"compatibilityLevel": service.global_compatibility().value})
    level = service.subject_compatibility(name)
    if level is None:
        if not flag("defaultToGlobal"):
            raise errors.SubjectConfigNotFound(
                f"Subject '{name}' does not have subject-level compatibility configured")
        level = service.global_compatibility()
    return json_response({"compatibilityLevel": level.value})


@config_routes.put("/config")
@config_routes.put("/config/<subject:subject>")
def put_config(subject: str | None = None) -> Any:
    body = json_body()
    level = body.get("compatibility", body.get("compatibilityLevel"))
    if level is None:
        raise errors.InvalidCompatibilityLevel("Invalid compatibility level: none given")
    return json_response({"compatibility": _service().set_compatibility(subject, level).value})


@config_routes.delete("/config")
@config_routes.delete("/config/<subject:subject>")
def delete_config(subject: str | None = None) -> Any:
    try:
        previous = _service().delete_compatibility(subject)
    except errors.SubjectConfigNotFound:
        # Confluent's ConfigResource.deleteSubjectConfig answers 40401 here, not 40408.
        raise errors.SubjectNotFound(f"Subject '{subject}' not found.") from None
    return json_response({"compatibilityLevel": previous.value})


@config_routes.get("/mode")
@config_routes.get("/mode/<subject:subject>")
def get_mode(subject: str | None = None) -> Any:
    service = _service()
    name = subject
    if name is None:
        return json_response({"mode": service.global_mode().value})
    mode = service.subject_mode(name)
    if mode is None:
        if not flag("defaultToGlobal"):
            raise errors.SubjectModeNotFound(f"Subject '{name}' does not have subject-level mode configured")
        mode = service.global_mode()
    return json_response({"mode": mode.value})


@config_routes.put("/mode")
@config_routes.put("/mode/<subject:subject>")
def put_mode(subject: str | None = None) -> Any:
    mode = json_body().get("mode")
    if mode is None:
        raise errors.InvalidMode("Invalid mode: none given")
    return json_response({"mode": _service().set_mode(subject, mode, force=flag("force")).value})


@config_routes.delete("/mode")
@config_routes.delete("/mode/<subject:subject>")
def delete_mode(subject: str | None = None) -> Any:
    try:
        previous = _service().delete_mode(subject)
    except errors.SubjectModeNotFound:
        # Confluent's ModeResource.deleteSubjectMode answers 40401 here, not 40409.
        raise errors.SubjectNotFound(f"Subject '{subject}' not found.") from None
    return json_response({"mode": previous.value})


@config_routes.get("/v1/metadata/id")
def metadata_id() -> Any:
    return json_response({"scope": {"path": [], "clusters": current_app.extensions["registry.metadata"]}})


@config_routes.get("/v1/metadata/version")
def metadata_version() -> Any:
    from registry import __version__

    return json_response({"version": __version__, "commitId": ""})


@config_routes.get("/leader")
def leader() -> Any:
    """Ours, for operators and failover tests: who writes, as this node sees it."""
    elector = current_app.extensions.get("registry.elector")
    service = _service()
    known = elector.leader() if elector is not None else None
    return json_response({
        "leader": known.url if known is not None else None,
        "is_leader": elector.is_leader() if elector is not None else True,
        "accepted_appends": service.accepted_appends,
    })


@config_routes.get("/health")
def health() -> Any:
    return json_response({"status": "UP"})


@config_routes.get("/ready")
def ready() -> Any:
    if not _service().is_ready():
        raise errors.NotReady("Schema registry is not ready: still reading the schema log")
    return json_response({"ready": True})
