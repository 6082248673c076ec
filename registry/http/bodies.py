"""Request and response bodies: what the routes read from a request and how they answer.

Everything here is about HTTP's shape of the domain's values; no rule lives here.
"""
from __future__ import annotations

import json

from collections.abc import Mapping
from typing import Any

import orjson
from flask import Response, request

from registry import errors
from registry.http.negotiation import response_type
from registry.service import MAX_INT32, ConfigUpdate, NewSchema, TagRequest
from store.cache import StoredSchema
from store.contracts import (
    ContractError,
    Metadata,
    RuleSet,
    metadata_from_json,
    rule_set_from_json,
    validate_rule_set,
)
from store.records import ConfigValue, SchemaReference, SchemaValue

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
ACCEPTED_BODY_TYPES = frozenset({
    "application/vnd.schemaregistry.v1+json",
    "application/vnd.schemaregistry+json",
    "application/json",
    "application/octet-stream",
})


# ---- responses ----------------------------------------------------------------------


def json_response(body: Any, status: int = 200) -> Response:
    """`body` as JSON, typed as the request's Accept header chose (see `negotiation`)."""
    return Response(orjson.dumps(body), status=status, content_type=_negotiated())


def raw_response(text: str) -> Response:
    return Response(text, status=200, content_type=_negotiated())


def _negotiated() -> str:
    # An Accept header nothing we serve satisfies was refused before the view ran
    # (406); an error answer then still needs a type: our default.
    return response_type(request.headers.get("Accept")) or CONTENT_TYPE


def error_response(error: errors.RegistryError) -> Response:
    return json_response(error.body(), error.http_status)


def schema_body(stored: StoredSchema, holder: SchemaValue | None = None) -> dict[str, Any]:
    """The body of `GET /schemas/ids/{id}` (Confluent's SchemaString); with the version
    that answered for a `?subject=`, its subject and version lead."""
    body: dict[str, Any] = {}
    if holder is not None:
        body["subject"] = holder.subject
        body["version"] = holder.version
    body["guid"] = stored.guid
    if stored.schema_type != "AVRO":
        body["schemaType"] = stored.schema_type
    if stored.references:
        body["references"] = references_body(stored.references)
    _contracts_body(body, stored.metadata, stored.rule_set)
    body["schema"] = stored.schema
    return body


def version_body(value: SchemaValue, stored: StoredSchema | None = None) -> dict[str, Any]:
    """A subject's version as `GET /subjects/{s}/versions/{v}` answers it (Confluent's Schema)."""
    body: dict[str, Any] = {"subject": value.subject, "version": value.version, "id": value.id}
    if stored is not None:
        body["guid"] = stored.guid
    if value.schema_type != "AVRO":
        body["schemaType"] = value.schema_type
    if value.references:
        body["references"] = references_body(value.references)
    _contracts_body(body, value.metadata, value.rule_set)
    body["schema"] = value.schema
    if value.deleted:
        body["deleted"] = True
    return body


def register_body(value: SchemaValue, stored: StoredSchema | None) -> dict[str, Any]:
    """Confluent's RegisterSchemaResponse: the id, and what the registry stored."""
    body: dict[str, Any] = {"id": value.id, "version": value.version}
    if stored is not None:
        body["guid"] = stored.guid
    if value.schema_type != "AVRO":
        body["schemaType"] = value.schema_type
    if value.references:
        body["references"] = references_body(value.references)
    _contracts_body(body, value.metadata, value.rule_set)
    body["schema"] = value.schema
    return body


def _contracts_body(body: dict[str, Any], metadata: Metadata | None, rule_set: RuleSet | None) -> None:
    if metadata is not None:
        body["metadata"] = metadata.to_json()
    if rule_set is not None:
        body["ruleSet"] = rule_set.to_json()


def config_body(value: ConfigValue, level_name: str = "compatibilityLevel") -> dict[str, Any]:
    """A config as Confluent's Config (`compatibilityLevel`) or ConfigUpdateRequest
    (`compatibility`) shows it."""
    body: dict[str, Any] = {}
    for name, item in (("alias", value.alias), ("aliasForDeks", value.alias_for_deks),
                       ("normalize", value.normalize), ("validateFields", value.validate_fields),
                       ("validateNewSchemas", value.validate_new_schemas),
                       ("validateRules", value.validate_rules),
                       (level_name, value.compatibility_level),
                       ("compatibilityPolicy", value.compatibility_policy),
                       ("compatibilityGroup", value.compatibility_group)):
        if item is not None and item != "":
            body[name] = item
    for name, contract in (("defaultMetadata", value.default_metadata),
                           ("overrideMetadata", value.override_metadata),
                           ("defaultRuleSet", value.default_rule_set),
                           ("overrideRuleSet", value.override_rule_set)):
        if contract is not None:
            body[name] = contract.to_json()
    return body


def references_body(refs: tuple[SchemaReference, ...]) -> list[dict[str, Any]]:
    return [{"name": r.name, "subject": r.subject, "version": r.version} for r in refs]


# ---- requests -----------------------------------------------------------------------


def json_body() -> dict[str, Any]:
    """The request body as a JSON object, or a 4xx error."""
    return parse_json_body(request.mimetype, request.get_data(cache=True))


# First bytes of a body that may not be plain UTF-8: a NUL (UTF-16/32), or a byte
# order mark's first byte (UTF-8's EF, UTF-16's FE/FF).
_NOT_UTF8_LEADS = frozenset({b"\x00", b"\xef", b"\xfe", b"\xff"})


def parse_json_body(mimetype: str, raw: bytes) -> dict[str, Any]:
    """A body of type `mimetype` (parameters left out, lower case; "" when none was
    given) as a JSON object, or a 4xx error."""
    if mimetype and mimetype not in ACCEPTED_BODY_TYPES:
        raise errors.UnsupportedMediaType("HTTP 415 Unsupported Media Type")  # Jersey's text, clients match it
    if raw[:1] in _NOT_UTF8_LEADS or raw[1:2] == b"\x00":
        # UTF-16 or UTF-32 (with or without a byte order mark), or UTF-8 with one: Jackson
        # tells the encoding from the first bytes (RFC 4627's rule, json.detect_encoding).
        try:
            raw = raw.decode(json.detect_encoding(raw)).encode("utf-8")
        except (UnicodeDecodeError, UnicodeEncodeError) as exc:
            raise errors.BadRequest(f"Malformed JSON: {exc}") from None
    try:
        body = orjson.loads(raw or b"null")
    except orjson.JSONDecodeError as exc:
        raise errors.BadRequest(f"Malformed JSON: {exc}") from None
    if not isinstance(body, dict):
        raise errors.UnprocessableEntity("The request body must be a JSON object")
    return body


def flag(name: str, default: bool = False) -> bool:
    """A boolean query parameter, read as Confluent's (JAX-RS) server does."""
    return flag_in(request.args, name, default)


def flag_in(args: Mapping[str, str], name: str, default: bool = False) -> bool:
    """`flag`, from query parameters `args` (a MultiDict: `get` gives the first value)."""
    if name not in args:
        # Werkzeug's MultiDict.get raises and catches an HTTPException for a missing key
        # (1.2 us, where `in` takes 0.03): most requests name no flag.
        return default
    value = args.get(name)
    return default if value is None else value.strip().lower() == "true"


def int_arg(name: str, default: int) -> int:
    return int_arg_in(request.args, name, default)


def int_arg_in(args: Mapping[str, str], name: str, default: int) -> int:
    """`int_arg`, from query parameters `args`; not an integer: 422."""
    value = args.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise errors.UnprocessableEntity(f"Query parameter {name} must be an integer, got {value!r}") from None


def metadata(body: dict[str, Any], name: str = "metadata") -> Metadata | None:
    """Metadata a body gives (None if it gives none); malformed: 422."""
    try:
        return metadata_from_json(body.get(name), strict=True)
    except ContractError as exc:
        raise errors.UnprocessableEntity(f"Invalid {name}: {exc}") from None


def rule_set(body: dict[str, Any], name: str = "ruleSet") -> RuleSet | None:
    """A rule set a body gives, validated as Confluent's RuleSet.validate (42210)."""
    try:
        found = rule_set_from_json(body.get(name), strict=True)
        if found is not None:
            validate_rule_set(found)
    except ContractError as exc:
        raise errors.InvalidRuleSet(str(exc)) from None
    return found


def config_update(body: dict[str, Any]) -> ConfigUpdate:
    """A `PUT /config` body: `compatibility` (or `compatibilityLevel`), `normalize`,
    `compatibilityGroup` and the default/override contracts; a contract set to null
    is cleared."""
    level = body.get("compatibility", body.get("compatibilityLevel"))
    if level is not None and not isinstance(level, str):
        raise errors.InvalidCompatibilityLevel(
            "Invalid compatibility level. Valid values are none, backward, forward, full, "
            "backward_transitive, forward_transitive, and full_transitive")
    normalize = body.get("normalize")
    if normalize is not None and not isinstance(normalize, bool):
        raise errors.UnprocessableEntity("normalize must be a boolean")
    group = body.get("compatibilityGroup")
    if group is not None and (not isinstance(group, str) or len(group) > 1024):
        raise errors.UnprocessableEntity("compatibilityGroup must be a string of at most 1024 characters")
    cleared = frozenset(name for name in ("defaultMetadata", "overrideMetadata", "defaultRuleSet",
                                          "overrideRuleSet", "compatibilityGroup", "normalize")
                        if name in body and body[name] is None)
    return ConfigUpdate(level, normalize, group, metadata(body, "defaultMetadata"),
                        metadata(body, "overrideMetadata"), rule_set(body, "defaultRuleSet"),
                        rule_set(body, "overrideRuleSet"), cleared)


_ENTITY_TYPES = frozenset({"sr_record", "sr_field"})
_MAX_TAG_ENTRIES = 256


def _schema_tags(raw: Any, name: str) -> dict[tuple[str, str], list[str]]:
    """`tagsToAdd` / `tagsToRemove`: [{"entity": {"entityPath", "entityType"}, "tags": [...]}]."""
    if raw is None:
        return {}
    if not isinstance(raw, list) or len(raw) > _MAX_TAG_ENTRIES:
        raise errors.UnprocessableEntity(f"{name} must be a list of at most {_MAX_TAG_ENTRIES} entries")
    found: dict[tuple[str, str], list[str]] = {}
    for item in raw:
        entity = item.get("entity") if isinstance(item, dict) else None
        tags = item.get("tags") if isinstance(item, dict) else None
        path = entity.get("entityPath") if isinstance(entity, dict) else None
        kind = entity.get("entityType") if isinstance(entity, dict) else None
        if (not isinstance(path, str) or not path or len(path) > 4096 or kind not in _ENTITY_TYPES
                or not isinstance(tags, list) or len(tags) > _MAX_TAG_ENTRIES
                or not all(isinstance(t, str) and 0 < len(t) <= 256 for t in tags)):
            raise errors.UnprocessableEntity(
                f"each {name} entry needs an entity (entityPath, entityType sr_record or sr_field) "
                f"and at most {_MAX_TAG_ENTRIES} tags of at most 256 characters")
        found.setdefault((path, kind), []).extend(tags)
    return found


def tag_request(body: dict[str, Any]) -> TagRequest:
    """A `POST .../tags` body (Confluent's TagSchemaRequest)."""
    remove = body.get("rulesToRemove")
    if remove is not None and (not isinstance(remove, list) or len(remove) > 1000
                               or not all(isinstance(r, str) for r in remove)):
        raise errors.UnprocessableEntity("rulesToRemove must be a list of rule names")
    merge = rule_set(body, "rulesToMerge")
    given = rule_set(body)
    if given is not None and (merge is not None or remove is not None):
        raise errors.InvalidRuleSet("ruleSet should be omitted if specifying rulesToMerge or rulesToRemove")
    return TagRequest(_schema_tags(body.get("tagsToAdd"), "tagsToAdd"),
                      _schema_tags(body.get("tagsToRemove"), "tagsToRemove"),
                      optional_positive(body, "newVersion"), metadata(body), given, merge,
                      tuple(remove or ()))


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
    """A schema id from the path. Not a number: a plain 404 (JAX-RS cannot bind an
    Integer path parameter, so no resource matches); a number no id can have: 40403."""
    digits = raw[1:] if raw[:1] in "+-" else raw
    value = int(raw) if digits.isascii() and digits.isdigit() and len(digits) <= 10 else None
    if value is None or not -MAX_INT32 - 1 <= value <= MAX_INT32:
        raise errors.NotFound("HTTP 404 Not Found")
    if value < 0:
        raise errors.SchemaNotFound(f"Schema {value} not found")
    return value
