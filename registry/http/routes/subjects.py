"""`/subjects/...` and `/compatibility/...`: registering, looking up, reading and deleting versions."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Blueprint, request

from registry import errors
from registry.http.bodies import (
    flag,
    flag_in,
    int_arg,
    int_arg_in,
    json_body,
    json_response,
    metadata,
    new_schema,
    optional_positive,
    parse_json_body,
    raw_response,
    register_body,
    rule_set,
    tag_request,
    version_body,
)
from registry.http.context import readable, service
from registry.http.direct import DirectRequest
from registry.service import NewSchema, RegisterRequest, RegistryService

subject_routes = Blueprint("subjects", __name__)


def _schema_from_body(body: dict[str, Any], registry: RegistryService | None = None) -> NewSchema:
    return (registry or service()).with_resolved_references(new_schema(body))


@subject_routes.get("/subjects")
def list_subjects() -> Any:
    return json_response(readable(service().subjects(request.args.get("subjectPrefix", ""),
                                                     deleted=flag("deleted"), deleted_only=flag("deletedOnly"))))


def _version_body(value: Any) -> dict[str, Any]:
    return version_body(value, service().cached_schema_in(value))


@subject_routes.post("/subjects/<subject:subject>")
def lookup_schema(subject: str) -> Any:
    found = service().lookup(subject, _schema_from_body(json_body()),
                             normalize=flag("normalize"), deleted=flag("deleted"))
    return json_response(_version_body(found))


@subject_routes.get("/subjects/<subject:subject>/metadata")
def latest_with_metadata(subject: str) -> Any:
    keys, values = request.args.getlist("key"), request.args.getlist("value")
    if len(keys) > 1000:
        raise errors.UnprocessableEntity("At most 1000 metadata keys may be asked for")
    found = service().latest_with_metadata(subject, dict(zip(keys, values)), deleted=flag("deleted"))
    return json_response(_version_body(found))


@subject_routes.delete("/subjects/<subject:subject>")
def delete_subject(subject: str) -> Any:
    return json_response(service().delete_subject(subject, permanent=flag("permanent")))


@subject_routes.get("/subjects/<subject:subject>/versions")
def list_versions(subject: str) -> Any:
    return json_response(versions_answer(service(), subject, request.args))


def versions_answer(registry: RegistryService, subject: str, args: Mapping[str, str]) -> list[int]:
    """The answer to listing a subject's versions: Flask's view and the direct view."""
    found = registry.versions(subject, deleted=flag_in(args, "deleted"), deleted_only=flag_in(args, "deletedOnly"))
    offset, limit = max(int_arg_in(args, "offset", 0), 0), int_arg_in(args, "limit", -1)
    return found[offset:] if limit <= 0 else found[offset:offset + limit]


def _list_versions_direct(registry: RegistryService, request_: DirectRequest) -> list[int]:
    return versions_answer(registry, request_.arguments["subject"], request_.args)


@subject_routes.post("/subjects/<subject:subject>/versions")
def register(subject: str) -> Any:
    return json_response(register_answer(service(), subject, request.args, request.mimetype,
                                         request.get_data(cache=True)))


def register_answer(registry: RegistryService, subject: str, args: Mapping[str, str], mimetype: str,
                    raw: bytes) -> dict[str, Any]:
    """The answer to registering: Flask's view and the bridge's direct view (`DIRECT`)
    are this one function (or `register_answer_async`, its twin on the event loop)."""
    value = registry.register(subject, _register_request(registry, args, mimetype, raw))
    return register_body(value, registry.cached_schema_in(value))


async def register_answer_async(registry: RegistryService, subject: str, args: Mapping[str, str],
                                mimetype: str, raw: bytes) -> dict[str, Any]:
    """`register_answer` on the event loop, with group commit on (`RegistryService.register_async`)."""
    value = await registry.register_async(subject, _register_request(registry, args, mimetype, raw))
    return register_body(value, registry.cached_schema_in(value))


def _register_request(registry: RegistryService, args: Mapping[str, str], mimetype: str,
                      raw: bytes) -> RegisterRequest:
    body = parse_json_body(mimetype, raw)
    given = body.get("schema")
    contract_only = (given is None or given == "") and (
        body.get("metadata") is not None or body.get("ruleSet") is not None)
    # With metadata or rules but no schema, the latest version's schema is taken, as
    # Confluent does. (Confluent does that for a body with nothing at all, too; we keep
    # refusing that one with "Empty schema": it is a client's mistake, not an intent.)
    schema = None if contract_only else _schema_from_body(body, registry)
    return RegisterRequest(
        schema, normalize=flag_in(args, "normalize"),
        schema_id=optional_positive(body, "id"), version=optional_positive(body, "version"),
        metadata=metadata(body), rule_set=rule_set(body))


def _register_direct(registry: RegistryService, request_: DirectRequest) -> dict[str, Any]:
    return register_answer(registry, request_.arguments["subject"], request_.args, request_.mimetype,
                           request_.body)


async def _register_direct_async(registry: RegistryService, request_: DirectRequest) -> dict[str, Any]:
    return await register_answer_async(registry, request_.arguments["subject"], request_.args,
                                       request_.mimetype, request_.body)


@subject_routes.get("/subjects/<subject:subject>/versions/<version>")
def get_version(subject: str, version: str) -> Any:
    return json_response(version_answer(service(), subject, version, request.args))


def version_answer(registry: RegistryService, subject: str, version: str, args: Mapping[str, str]) -> dict[str, Any]:
    """The answer to reading a version: Flask's view and the bridge's direct view."""
    value = registry.version(subject, version, deleted=flag_in(args, "deleted"))
    body = version_body(value, registry.cached_schema_in(value))
    fmt = args.get("format")
    if fmt:
        body["schema"] = registry.formatted(value.schema_type, value.schema, value.references, subject, fmt)
    return body


def _get_version_direct(registry: RegistryService, request_: DirectRequest) -> dict[str, Any]:
    return version_answer(registry, request_.arguments["subject"], request_.arguments["version"], request_.args)


@subject_routes.post("/subjects/<subject:subject>/versions/<version>/tags")
def modify_tags(subject: str, version: str) -> Any:
    """A new version with tags embedded in the schema text (Confluent's modifyTags; Avro)."""
    value = service().modify_tags(subject, version, tag_request(json_body()))
    return json_response(register_body(value, service().cached_schema_in(value)))


@subject_routes.get("/subjects/<subject:subject>/versions/<version>/schema")
def get_version_schema(subject: str, version: str) -> Any:
    value = service().version(subject, version, deleted=flag("deleted"))
    return raw_response(service().formatted(value.schema_type, value.schema, value.references, subject,
                                            request.args.get("format")))


@subject_routes.get("/subjects/<subject:subject>/versions/<version>/referencedby")
def referenced_by(subject: str, version: str) -> Any:
    return json_response(service().referenced_by(subject, version))


@subject_routes.delete("/subjects/<subject:subject>/versions/<version>")
def delete_version(subject: str, version: str) -> Any:
    return json_response(service().delete_version(subject, version, permanent=flag("permanent")))


@subject_routes.post("/compatibility/subjects/<subject:subject>/versions/<version>")
def check_version(subject: str, version: str) -> Any:
    return _compatibility(subject, version)


@subject_routes.post("/compatibility/subjects/<subject:subject>/versions")
def check_all_versions(subject: str) -> Any:
    return _compatibility(subject, None)


def _compatibility(subject: str, version: str | None) -> Any:
    verbose = flag("verbose")
    try:
        problems = service().check_compatibility(subject, version, _schema_from_body(json_body()),
                                                 normalize=flag("normalize"))
    except errors.InvalidSchema as exc:
        # Confluent's CompatibilityResource: with verbose an invalid schema is an answer.
        if not verbose:
            raise
        problems = [exc.message]
    body: dict[str, Any] = {"is_compatible": not problems}
    if verbose:
        body["messages"] = problems
    return json_response(body)


# Requests the bridge answers without Flask (`registry.http.direct`), by method and the
# endpoint of the route Flask's own URL map matched: registering, every producer's first
# call for each schema, where Flask's request machinery cost a fifth of the registry's
# CPU (issue 17).
# Reading a version is every consumer's call with `use.latest.version` and every
# tool's: spread over many subjects, few of its answers are kept ready (read_memo), and
# Flask's machinery cost several times the read itself.
DIRECT = {("POST", "subjects.register"): _register_direct, ("GET", "subjects.get_version"): _get_version_direct,
          ("GET", "subjects.list_versions"): _list_versions_direct}
# Of those, the ones with a twin on the event loop, taken when the service says so
# (`DirectViews.loop_view_for`): a registration with group commit on waits for its batch
# without a thread of its own (issue 17: the hand-offs between threads cost more than
# the registration's own work).
DIRECT_ON_LOOP = {("POST", "subjects.register"): _register_direct_async}
