"""Our own API description (OpenAPI 3.0), generated from the routes the app serves.

    description = describe(app.url_map)     # served at /openapi.json; docs/openapi.json holds a copy

Paths, methods and path parameters come from Flask's URL map itself, so the
description cannot name a route we do not serve or miss one we do. What the map
cannot know (a summary, the query parameters a view reads, the bodies it takes and
answers) is declared per endpoint in `DOCS`; tests/unit/registry/http/test_openapi.py checks that
every route has an entry, that each entry's query parameters are exactly the ones its
view reads, and that docs/openapi.json is this function's output
(`schema-registry openapi > docs/openapi.json` writes it again).

Every operation also documents a `default` answer: Confluent's error body, which is
what any other status carries (401 and 403 included when security is on).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from werkzeug.routing import Map

from registry import __version__

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_REQUEST_TYPES = (CONTENT_TYPE, "application/vnd.schemaregistry+json", "application/json")
# Path arguments as the description names them (Confluent's names).
_PATH_NAMES = {"schema_id_text": "id"}
_ARGUMENT = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # boolean, integer or string
    description: str


@dataclass(frozen=True)
class Doc:
    summary: str
    tag: str
    answer: dict[str, Any]  # the 200 body's JSON Schema
    query: tuple[Param, ...] = ()
    body: str | None = None  # a component schema name
    answer_type: str = CONTENT_TYPE
    extra: dict[str, Any] = field(default_factory=dict)  # more operation fields
    no_content: bool = False  # success is 204 with no body


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


_DELETED = Param("deleted", "boolean", "Include soft-deleted versions")
_NORMALIZE = Param("normalize", "boolean", "Normalize the schema before comparing it")
_PERMANENT = Param("permanent", "boolean", "Delete for good (hard delete) what was soft-deleted")
_PREFIX = Param("subjectPrefix", "string", "Only subjects starting with this prefix")
_DEFAULT_TO_GLOBAL = Param("defaultToGlobal", "boolean", "Answer the global value when the subject has none")
_VERBOSE = Param("verbose", "boolean", "Say why a schema is incompatible")
_SCHEMA_TEXT = {"description": "The schema text itself (JSON for AVRO and JSON, the .proto text for PROTOBUF)"}

_FORMAT = Param("format", "string", "serialized: a Protobuf schema as its base64 FileDescriptorProto "
                                    "(other formats answer the text as stored)")
_OFFSET = Param("offset", "integer", "Skip this many")
_LIMIT = Param("limit", "integer", "At most this many (<= 0: all)")
_CONTEXT_OF = Param("subject", "string", "A subject naming the context to look the id up in")
_ASSOCIATION_TYPE = Param("associationType", "string", "Only associations of this type (repeatable)")
_ASSOCIATION_FILTERS = (Param("resourceType", "string", "Only associations of this resource type"),
                        _ASSOCIATION_TYPE, Param("lifecycle", "string", "Only STRONG or WEAK associations"),
                        _OFFSET, _LIMIT)

DOCS: dict[tuple[str, str], Doc] = {
    ("subjects.list_subjects", "GET"): Doc(
        "List the subjects (those the caller may read)", "Subjects", _array({"type": "string"}),
        (_PREFIX, _DELETED, Param("deletedOnly", "boolean", "Only soft-deleted subjects"))),
    ("subjects.lookup_schema", "POST"): Doc(
        "Find the version of a subject that holds a schema", "Subjects", _ref("SubjectVersion"),
        (_NORMALIZE, _DELETED), body="SchemaRequest"),
    ("subjects.delete_subject", "DELETE"): Doc(
        "Delete a subject (soft, or hard with permanent=true); answers the versions deleted", "Subjects",
        _array({"type": "integer"}), (_PERMANENT,)),
    ("subjects.list_versions", "GET"): Doc(
        "List a subject's versions", "Subjects", _array({"type": "integer"}),
        (_DELETED, Param("deletedOnly", "boolean", "Only soft-deleted versions"), _OFFSET, _LIMIT)),
    ("subjects.latest_with_metadata", "GET"): Doc(
        "The latest version of a subject whose metadata matches (Confluent's data contracts; "
        "without metadata the latest)", "Subjects", _ref("SubjectVersion"),
        (Param("key", "string", "A metadata property name (repeatable, paired with value)"),
         Param("value", "string", "The value the key must have"), _DELETED)),
    ("subjects.modify_tags", "POST"): Doc(
        "Tags on a version (Confluent's data contracts: not served, 42205)", "Subjects", {"type": "object"},
        body="Any"),
    ("subjects.register", "POST"): Doc(
        "Register a schema under a subject (an explicit id and version in IMPORT mode)", "Subjects",
        _ref("RegisterAnswer"), (_NORMALIZE,), body="RegisterRequest"),
    ("subjects.get_version", "GET"): Doc(
        "Get a version of a subject (a number, or latest)", "Subjects", _ref("SubjectVersion"),
        (_DELETED, _FORMAT)),
    ("subjects.get_version_schema", "GET"): Doc(
        "Get only the schema text of a version", "Subjects", _SCHEMA_TEXT, (_DELETED, _FORMAT)),
    ("subjects.referenced_by", "GET"): Doc(
        "Ids of the schemas that reference a version", "Subjects", _array({"type": "integer"})),
    ("subjects.delete_version", "DELETE"): Doc(
        "Delete a version (soft, or hard with permanent=true); answers its number", "Subjects",
        {"type": "integer"}, (_PERMANENT,)),
    ("subjects.check_version", "POST"): Doc(
        "Check a schema against one version of a subject", "Compatibility", _ref("CompatibilityAnswer"),
        (_VERBOSE, _NORMALIZE), body="SchemaRequest"),
    ("subjects.check_all_versions", "POST"): Doc(
        "Check a schema against the versions its subject's level compares with", "Compatibility",
        _ref("CompatibilityAnswer"), (_VERBOSE, _NORMALIZE), body="SchemaRequest"),
    ("schemas.list_schemas", "GET"): Doc(
        "List subject versions (those the caller may read)", "Schemas", _array(_ref("SubjectVersion")),
        (_PREFIX, _DELETED, Param("latestOnly", "boolean", "Only each subject's latest version"),
         Param("offset", "integer", "Skip this many"), Param("limit", "integer", "At most this many (<= 0: all)"))),
    ("schemas.schema_types", "GET"): Doc(
        "The schema types this registry serves", "Schemas", _array({"type": "string"})),
    ("schemas.get_schema", "GET"): Doc(
        "Get a schema by id", "Schemas", _ref("SchemaById"),
        (_CONTEXT_OF, _FORMAT, Param("fetchMaxId", "boolean", "Also answer the highest id in use"))),
    ("schemas.get_schema_text", "GET"): Doc(
        "Get only the schema text of an id", "Schemas", _SCHEMA_TEXT, (_CONTEXT_OF, _FORMAT)),
    ("schemas.get_schema_subjects", "GET"): Doc(
        "The subjects that use an id (those the caller may read)", "Schemas", _array({"type": "string"}),
        (_DELETED, _CONTEXT_OF)),
    ("schemas.get_schema_versions", "GET"): Doc(
        "The subject versions that use an id (those the caller may read)", "Schemas",
        _array(_ref("SubjectAndVersion")), (_DELETED, _CONTEXT_OF)),
    ("schemas.get_schema_by_guid", "GET"): Doc(
        "Get a schema by its guid", "Schemas", _ref("SchemaById")),
    ("schemas.get_ids_of_guid", "GET"): Doc(
        "The ids a guid has, per context", "Schemas", _array({"type": "object", "properties": {
            "context": {"type": "string"}, "id": {"type": "integer"}}})),
    ("contexts.list_contexts", "GET"): Doc(
        "List the contexts", "Contexts", _array({"type": "string"}),
        (Param("contextPrefix", "string", "Only contexts starting with this"), _OFFSET, _LIMIT)),
    ("contexts.delete_context", "DELETE"): Doc(
        "Delete an empty context", "Contexts", {}, no_content=True),
    ("associations.by_subject", "GET"): Doc(
        "The associations of a subject", "Associations", _array(_ref("Association")), _ASSOCIATION_FILTERS),
    ("associations.by_resource_id", "GET"): Doc(
        "The associations of a resource, by id", "Associations", _array(_ref("Association")),
        _ASSOCIATION_FILTERS),
    ("associations.by_resource_name", "GET"): Doc(
        "The associations of a resource, by namespace and name", "Associations", _array(_ref("Association")),
        _ASSOCIATION_FILTERS),
    ("associations.create", "POST"): Doc(
        "Associate a resource with subjects (registering their schemas)", "Associations", {"type": "object"},
        (Param("dryRun", "boolean", "Check only; write nothing"),), body="Any"),
    ("associations.delete", "DELETE"): Doc(
        "Delete a resource's associations", "Associations", {},
        (Param("resourceType", "string", "Only associations of this resource type"), _ASSOCIATION_TYPE,
         Param("cascadeLifecycle", "boolean", "Also delete the subjects of strong associations")),
        no_content=True),
    ("associations.not_served", "POST"): Doc(
        "Batch and upsert association operations (not served, 42205)", "Associations", {"type": "object"},
        body="Any"),
    ("associations.not_served", "PUT"): Doc(
        "Upsert of an association (not served, 42205)", "Associations", {"type": "object"}, body="Any"),
    ("config.get_config", "GET"): Doc(
        "Get the compatibility level (global, or a subject's)", "Config", _ref("Config"), (_DEFAULT_TO_GLOBAL,)),
    ("imports.import_schemas", "POST"): Doc(
        "Ours: many IMPORT registrations in one request and one append; each entry answers alone",
        "Subjects", _ref("ImportAnswer"), body="ImportRequest"),
    ("imports.import_settings", "POST"): Doc(
        "Ours: many config and mode writes in one request and one append; each entry answers alone",
        "Config", _ref("ImportAnswer"), body="ImportSettingsRequest"),
    ("config.put_config", "PUT"): Doc(
        "Set the compatibility level (global, or a subject's)", "Config", _ref("ConfigUpdate"),
        body="ConfigUpdate"),
    ("config.delete_config", "DELETE"): Doc(
        "Delete the compatibility level (global, or a subject's); answers the level removed", "Config",
        _ref("Config")),
    ("config.get_mode", "GET"): Doc(
        "Get the mode (global, or a subject's)", "Mode", _ref("Mode"), (_DEFAULT_TO_GLOBAL,)),
    ("config.put_mode", "PUT"): Doc(
        "Set the mode (global, or a subject's)", "Mode", _ref("Mode"),
        (Param("force", "boolean", "Set IMPORT even though schemas exist"),), body="Mode"),
    ("config.delete_mode", "DELETE"): Doc(
        "Delete the mode (global, or a subject's); answers the mode removed", "Mode", _ref("Mode")),
    ("cluster.root", "GET"): Doc("An empty object (Confluent's root resource)", "Node", {"type": "object"}),
    ("cluster.root", "POST"): Doc("An empty object, whatever the body", "Node", {"type": "object"}),
    ("cluster.metadata_id", "GET"): Doc("The Kafka and registry cluster ids", "Node", _ref("MetadataId")),
    ("cluster.metadata_version", "GET"): Doc("This registry's version", "Node", _ref("MetadataVersion")),
    ("cluster.metadata_deployment", "GET"): Doc("How this registry is deployed", "Node", {"type": "object"}),
    ("cluster.leader", "GET"): Doc("Who writes, as this node sees it", "Node", _ref("Leader")),
    ("cluster.health", "GET"): Doc("Whether the process serves at all", "Node", _ref("Health")),
    ("cluster.ready", "GET"): Doc("Whether reads and writes are served (503 until caught up and a writer is known)",
                                  "Node", _ref("Ready")),
    ("observability.metrics_text", "GET"): Doc(
        "Prometheus metrics (404 when metrics.enabled is false)", "Node", {"type": "string"},
        answer_type="text/plain; version=0.0.4; charset=utf-8"),
    ("ui.ui_index", "GET"): Doc("The web UI's page", "UI", {"type": "string"}, answer_type="text/html"),
    ("ui.ui_file", "GET"): Doc("One of the web UI's static files (404 for any other name)", "UI",
                               {"type": "string"}, answer_type="application/octet-stream"),
    ("observability.openapi", "GET"): Doc(
        "This description", "Node", {"type": "object"}, answer_type="application/json"),
}

_REFERENCE = {"type": "object", "required": ["name", "subject", "version"], "properties": {
    "name": {"type": "string"}, "subject": {"type": "string"}, "version": {"type": "integer"}}}
_SCHEMA_TYPE = {"type": "string", "description": "AVRO (the default), JSON or PROTOBUF"}
_LEVEL = {"type": "string", "enum": ["BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
                                     "FULL_TRANSITIVE", "NONE"]}

COMPONENTS: dict[str, Any] = {
    "Error": {"type": "object", "required": ["error_code", "message"], "properties": {
        "error_code": {"type": "integer"}, "message": {"type": "string"}}},
    "SchemaReference": _REFERENCE,
    "SchemaRequest": {"type": "object", "required": ["schema"], "properties": {
        "schema": {"type": "string"}, "schemaType": _SCHEMA_TYPE,
        "references": _array(_ref("SchemaReference"))}},
    "RegisterRequest": {"type": "object", "required": ["schema"], "properties": {
        "schema": {"type": "string"}, "schemaType": _SCHEMA_TYPE,
        "references": _array(_ref("SchemaReference")),
        "id": {"type": "integer", "description": "IMPORT mode: the id to register under"},
        "version": {"type": "integer", "description": "IMPORT mode: the version to register as"}}},
    "ImportRequest": {"type": "object", "required": ["schemas"], "properties": {
        "schemas": {"type": "array", "maxItems": 10_000, "items": {
            "type": "object", "required": ["subject", "schema", "id", "version"], "properties": {
                "subject": {"type": "string", "minLength": 1}, "schema": {"type": "string"}, "schemaType": _SCHEMA_TYPE,
                "references": _array(_ref("SchemaReference")), "id": {"type": "integer"},
                "version": {"type": "integer"}, "metadata": {"type": "object"}, "ruleSet": {"type": "object"}}}}}},
    "ImportSettingsRequest": {"type": "object", "required": ["settings"], "properties": {
        "settings": {"type": "array", "maxItems": 10_000, "items": {
            "type": "object", "description": "a config (a PUT /config body) or a mode for a subject (null: global)",
            "properties": {"subject": {"type": "string", "nullable": True}, "config": _ref("ConfigUpdate"),
                           "mode": {"type": "string"}}}}}},
    "ImportAnswer": {"type": "object", "required": ["results"], "properties": {
        "results": _array({"type": "object", "description": "subject, version and id; or error_code and message"})}},
    "RegisterAnswer": {"type": "object", "required": ["id"], "properties": {
        "id": {"type": "integer"}, "version": {"type": "integer"}, "guid": {"type": "string"},
        "schemaType": _SCHEMA_TYPE, "schema": {"type": "string"}, "references": _array(_ref("SchemaReference")),
        "metadata": {"type": "object"}, "ruleSet": {"type": "object"}}},
    "Association": {"type": "object", "description": "Confluent's association of a resource with a subject"},
    "Any": {"type": "object"},
    "SubjectVersion": {"type": "object", "required": ["subject", "version", "id", "schema"], "properties": {
        "subject": {"type": "string"}, "version": {"type": "integer"}, "id": {"type": "integer"},
        "schemaType": _SCHEMA_TYPE, "references": _array(_ref("SchemaReference")), "schema": {"type": "string"}}},
    "SubjectAndVersion": {"type": "object", "required": ["subject", "version"], "properties": {
        "subject": {"type": "string"}, "version": {"type": "integer"}}},
    "SchemaById": {"type": "object", "required": ["schema"], "properties": {
        "schema": {"type": "string"}, "schemaType": _SCHEMA_TYPE, "references": _array(_ref("SchemaReference")),
        "maxId": {"type": "integer"}}},
    "CompatibilityAnswer": {"type": "object", "required": ["is_compatible"], "properties": {
        "is_compatible": {"type": "boolean"}, "messages": _array({"type": "string"})}},
    "Config": {"type": "object", "required": ["compatibilityLevel"], "properties": {"compatibilityLevel": _LEVEL}},
    "ConfigUpdate": {"type": "object", "properties": {"compatibility": _LEVEL, "compatibilityLevel": _LEVEL},
                     "description": "`compatibility` (Confluent's name) or `compatibilityLevel`"},
    "Mode": {"type": "object", "required": ["mode"], "properties": {"mode": {
        "type": "string", "enum": ["READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT"]}}},
    "MetadataId": {"type": "object", "required": ["scope"], "properties": {"scope": {"type": "object"}}},
    "MetadataVersion": {"type": "object", "required": ["version"], "properties": {
        "version": {"type": "string"}, "commitId": {"type": "string"}}},
    "Leader": {"type": "object", "required": ["leader", "is_leader"], "properties": {
        "leader": {"type": "string", "nullable": True}, "is_leader": {"type": "boolean"},
        "accepted_appends": {"type": "integer"}, "problem": {"type": "string", "nullable": True}}},
    "Health": {"type": "object", "required": ["status"], "properties": {"status": {"type": "string"}}},
    "Ready": {"type": "object", "required": ["ready"], "properties": {"ready": {"type": "boolean"}}},
}

_PATH_DESCRIPTIONS = {
    "subject": "A subject name, percent-encoded (a `/` in it as %2F)",
    "version": "A version number, or `latest` (or -1)",
    "id": "A schema id",
}


def path_template(rule: str) -> str:
    """`/subjects/<subject:subject>` -> `/subjects/{subject}` (with our names for arguments)."""
    return _ARGUMENT.sub(lambda m: "{" + _PATH_NAMES.get(m.group(1), m.group(1)) + "}", rule)


def served_operations(url_map: Map) -> set[tuple[str, str, str]]:
    """(path template, method, endpoint) for every route the map serves (no HEAD/OPTIONS,
    which every route answers)."""
    return {(path_template(rule.rule), method, rule.endpoint)
            for rule in url_map.iter_rules()
            for method in (rule.methods or ()) if method not in ("HEAD", "OPTIONS")}


def describe(url_map: Map) -> dict[str, Any]:
    """The OpenAPI 3.0 description of what `url_map` serves."""
    paths: dict[str, dict[str, Any]] = {}
    for template, method, endpoint in sorted(served_operations(url_map)):
        doc = DOCS.get((endpoint, method))
        if doc is None:  # tests/unit/registry/http/test_openapi.py fails on this: every route has its entry
            doc = Doc(f"{endpoint} (undocumented)", "Undocumented", {})
        paths.setdefault(template, {})[method.lower()] = _operation(template, method, endpoint, doc)
    return {
        "openapi": "3.0.3",
        "info": {"title": "schema-registry-py", "version": __version__,
                 "description": "A schema registry speaking Confluent Schema Registry's REST API. Error answers "
                                "carry Confluent's body: {\"error_code\": N, \"message\": \"...\"}."},
        "paths": paths,
        "components": {"schemas": COMPONENTS, "securitySchemes": {
            "basic": {"type": "http", "scheme": "basic"},
            "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}}},
    }


def _operation(template: str, method: str, endpoint: str, doc: Doc) -> dict[str, Any]:
    parameters = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"},
                   "description": _PATH_DESCRIPTIONS.get(name, name)}
                  for name in re.findall(r"{([^}]+)}", template)]
    parameters += [{"name": p.name, "in": "query", "required": False, "schema": {"type": p.type},
                    "description": p.description} for p in doc.query]
    operation: dict[str, Any] = {
        "operationId": re.sub(r"[^A-Za-z0-9]+", "_", f"{method.lower()} {template}").strip("_"),
        "summary": doc.summary,
        "tags": [doc.tag],
        "responses": {
            **({"204": {"description": "No Content"}} if doc.no_content else
               {"200": {"description": "OK", "content": {doc.answer_type: {"schema": doc.answer}}}}),
            "default": {"description": "Confluent's error body", "content": {CONTENT_TYPE: {"schema": _ref("Error")}}},
        },
        "security": [{}, {"basic": []}, {"bearer": []}],
        **doc.extra,
    }
    if parameters:
        operation["parameters"] = parameters
    if doc.body is not None:
        operation["requestBody"] = {"required": True, "content": {t: {"schema": _ref(doc.body)} for t in _REQUEST_TYPES}}
    return operation
