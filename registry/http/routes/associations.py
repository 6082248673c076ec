"""`/associations/...`: Confluent 8's associations of subjects with resources (topics).

Served: create (`POST /associations`), reads by subject, by resource name and by
resource id, and delete by resource id. Not served: the upsert
(`PUT /associations/resources/{id}`), the batch operations and `cascadeLifecycle`
deletes (they answer Confluent's error bodies saying so).
"""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, request

from registry import errors
from registry.associations import AssociationRequest, AssociationSpec, Created, invalid
from registry.http.bodies import (
    CONTENT_TYPE,
    flag,
    int_arg,
    json_body,
    json_response,
    metadata,
    new_schema,
    optional_positive,
    rule_set,
    version_body,
)
from registry.http.context import node, readable, service
from registry.service import RegisterRequest
from store.records import AssociationValue

association_routes = Blueprint("associations", __name__)
_MAX_ASSOCIATIONS = 16


def association_body(value: AssociationValue) -> dict[str, Any]:
    """Confluent's Association entity."""
    body: dict[str, Any] = {"subject": value.subject, "guid": value.guid, "resourceName": value.resource_name,
                            "resourceNamespace": value.resource_namespace, "resourceId": value.resource_id,
                            "resourceType": value.resource_type, "associationType": value.association_type}
    if value.lifecycle:
        body["lifecycle"] = value.lifecycle
    body["frozen"] = value.frozen
    if value.create_ts is not None:
        # Confluent's updateTs is the record's time; we never update an association in
        # place (no upsert), so it is the creation time.
        body["createTs"] = value.create_ts
        body["updateTs"] = value.create_ts
    return body


def _filters() -> dict[str, Any]:
    lifecycle = request.args.get("lifecycle")
    if lifecycle is not None and lifecycle not in ("STRONG", "WEAK"):
        raise errors.NotFound("HTTP 404 Not Found")  # JAX-RS cannot bind the enum: no resource
    return {"resource_type": request.args.get("resourceType") or None,
            "association_types": request.args.getlist("associationType")[:8], "lifecycle": lifecycle}


def _page(found: list[AssociationValue]) -> Any:
    """Those the caller may read (through their subjects), then the page."""
    shown = set(readable(dict.fromkeys(a.subject for a in found)))
    found = [a for a in found if a.subject in shown]
    offset, limit = max(int_arg("offset", 0), 0), int_arg("limit", -1)
    found = found[offset:] if limit <= 0 else found[offset:offset + limit]
    return json_response([association_body(a) for a in found])


@association_routes.get("/associations/subjects/<subject:subject>")
def by_subject(subject: str) -> Any:
    return _page(node().associations.by_subject(subject, **_filters()))


@association_routes.get("/associations/resources/<subject:namespace>/<subject:name>")
def by_resource_name(namespace: str, name: str) -> Any:
    return _page(node().associations.by_resource(namespace, name, **_filters()))


@association_routes.get("/associations/resources/<subject:resource_id>")
def by_resource_id(resource_id: str) -> Any:
    return _page(node().associations.by_resource_id(resource_id, **_filters()))


@association_routes.post("/associations")
def create() -> Any:
    created = node().associations.create(_request(json_body()), dry_run=flag("dryRun"))
    return json_response(_created_body(created))


@association_routes.delete("/associations/resources/<subject:resource_id>")
def delete(resource_id: str) -> Any:
    if flag("cascadeLifecycle"):
        raise errors.OperationNotPermitted(
            "cascadeLifecycle is not supported by this registry: delete the subject, then the association")
    node().associations.delete(resource_id, request.args.get("resourceType") or None,
                               request.args.getlist("associationType")[:8])
    return Response(status=204, content_type=CONTENT_TYPE)


@association_routes.put("/associations/resources/<subject:resource_id>")
@association_routes.post("/associations:batch")  # the operation as Confluent's OpenAPI file names it
@association_routes.post("/associations:batchGet")
@association_routes.post("/associations:batchMutate")
def not_served(resource_id: str = "") -> Any:
    raise errors.OperationNotPermitted(
        "This association operation is not supported by this registry; create, read and delete are")


def _text(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise invalid(name, "must be a string")
    return value


def _request(body: dict[str, Any]) -> AssociationRequest:
    raw = body.get("associations")
    if raw is not None and (not isinstance(raw, list) or len(raw) > _MAX_ASSOCIATIONS):
        raise invalid("associations", f"must be a list of at most {_MAX_ASSOCIATIONS} associations")
    specs = []
    for item in raw or []:
        if not isinstance(item, dict):
            raise invalid("associations", "each association must be an object")
        frozen = item.get("frozen")
        if frozen is not None and not isinstance(frozen, bool):
            raise invalid("frozen", "must be a boolean")
        schema = item.get("schema")
        register = None
        if schema is not None:
            if not isinstance(schema, dict):
                raise invalid("schema", "must be an object")
            register = RegisterRequest(service().with_resolved_references(new_schema(schema)),
                                       normalize=item.get("normalize") is True,
                                       version=optional_positive(schema, "version"),
                                       metadata=metadata(schema), rule_set=rule_set(schema))
        specs.append(AssociationSpec(_text(item, "associationType"), _text(item, "subject"),
                                     _text(item, "lifecycle"), frozen, register))
    return AssociationRequest(_text(body, "resourceName") or "", _text(body, "resourceNamespace") or "",
                              _text(body, "resourceId"), tuple(specs), _text(body, "resourceType"))


def _created_body(created: Created) -> dict[str, Any]:
    """Confluent's AssociationResponse."""
    req = created.request
    infos = []
    for value in created.associations:
        info: dict[str, Any] = {"subject": value.subject, "associationType": value.association_type,
                                "lifecycle": value.lifecycle, "frozen": value.frozen}
        registered = created.registered.get(value.association_type)
        if registered is not None:
            info["schema"] = version_body(registered, service().cached_schema_in(registered))
        infos.append(info)
    body: dict[str, Any] = {"resourceName": req.resource_name, "resourceNamespace": req.resource_namespace}
    if req.resource_id:
        body["resourceId"] = req.resource_id
    body["resourceType"] = "topic"
    if infos:
        body["associations"] = infos
    return body
