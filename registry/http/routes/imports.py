"""`POST /import/schemas` and `POST /import/settings`: ours, not Confluent's. Many IMPORT
registrations, or many config and mode writes, in one request and one append, for
`schema-registry import` (an import of 100,000 schemas one `POST /subjects/{s}/versions`
at a time spends most of its time in HTTP round trips, and one `PUT /config/{s}` per
subject commits once per subject).

    POST /import/schemas
    {"schemas": [{"subject": "orders-value", "version": 1, "id": 7, "schema": "...",
                  "schemaType": "AVRO", "references": [...], "metadata": {...}, "ruleSet": {...}}, ...]}
    200 {"results": [{"subject": "orders-value", "version": 1, "id": 7} | {"error_code": 42205, "message": "..."}, ...]}

Each entry is taken as `POST /subjects/{subject}/versions` takes it in IMPORT mode (its
subject must be in IMPORT mode, `id` and `version` are required) and succeeds or fails
alone; the results are in the entries' order. References resolve against what the
registry held when the request came: an entry cannot reference another entry of the same
request (`schema-registry import` sends referenced versions in an earlier request).

    POST /import/settings
    {"settings": [{"subject": "orders-value", "config": {"compatibility": "FULL", ...}},
                  {"subject": "orders-value", "mode": "READONLY"}, {"subject": null, "config": {...}}, ...]}
    200 {"results": [{"subject": "orders-value", "config": {"compatibility": "FULL", ...}}
                     | {"subject": "orders-value", "mode": "READONLY"} | {"error_code": 42203, "message": "..."}, ...]}

Each entry holds a `config` (a `PUT /config/{subject}` body) or a `mode` (as `PUT
/mode/{subject}` takes it, without force); a null or absent subject is the global one, as
is the default context's own (`:.:`).
Entries apply in order and succeed or fail alone.

Authorization, for both: `import` on the registry as a whole. At most `MAX_ENTRIES`
entries a request, within the request body limit.
"""
from __future__ import annotations

from typing import Any

from flask import Blueprint

from registry import errors
from registry.http.bodies import (
    config_body, config_update, json_body, json_response, metadata, new_schema, optional_positive, rule_set,
)
from registry.http.context import service
from registry.modes import Mode
from registry.service import RegisterRequest, SettingChange
from registry.subjects import normalize_subject

import_routes = Blueprint("imports", __name__)

MAX_ENTRIES = 10_000


def _entry(raw: Any) -> tuple[str, RegisterRequest] | errors.RegistryError:
    """One entry as a registration, or the error refusing it."""
    try:
        if not isinstance(raw, dict):
            raise errors.UnprocessableEntity("Each imported schema must be a JSON object")
        subject = raw.get("subject")
        if not isinstance(subject, str) or not subject:
            # Not even empty: no `POST /subjects/{subject}/versions` can name that subject.
            raise errors.UnprocessableEntity("Each imported schema needs its subject, a non-empty string")
        schema_id, version = optional_positive(raw, "id"), optional_positive(raw, "version")
        if schema_id is None or version is None:
            raise errors.UnprocessableEntity("Each imported schema needs its id and version")
        schema = service().with_resolved_references(new_schema(raw))
        return subject, RegisterRequest(schema, schema_id=schema_id, version=version,
                                        metadata=metadata(raw), rule_set=rule_set(raw))
    except errors.RegistryError as exc:
        return exc


def _entries(name: str) -> list[Any]:
    """The body's list under `name`, at most MAX_ENTRIES long. Raises UnprocessableEntity."""
    entries = json_body().get(name)
    if not isinstance(entries, list):
        raise errors.UnprocessableEntity(f"The body must hold a list of {name} under \"{name}\"")
    if len(entries) > MAX_ENTRIES:
        raise errors.UnprocessableEntity(f"At most {MAX_ENTRIES} {name} may be imported in one request")
    return entries


def _setting(raw: Any) -> SettingChange | errors.RegistryError:
    """One settings entry as a change, or the error refusing it."""
    try:
        if not isinstance(raw, dict):
            raise errors.UnprocessableEntity("Each imported setting must be a JSON object")
        subject = raw.get("subject")
        if subject is not None and not isinstance(subject, str):
            raise errors.UnprocessableEntity("An imported setting's subject must be a string or null")
        if ("config" in raw) == ("mode" in raw):
            raise errors.UnprocessableEntity("Each imported setting holds either a config or a mode")
        # The default context's own subject ("", ":.:") is the global one, as in the log's
        # keys; so the answer names what was set.
        if subject is not None and normalize_subject(subject) == "":
            subject = None
        if "config" in raw:
            if not isinstance(raw["config"], dict):
                raise errors.UnprocessableEntity("An imported config must be a JSON object")
            return SettingChange(subject, config_update(raw["config"]))
        mode = raw["mode"]
        if not isinstance(mode, str):
            raise errors.InvalidMode("Invalid mode: a mode is a string")
        return SettingChange(subject, mode)
    except errors.RegistryError as exc:
        return exc


@import_routes.post("/import/settings")
def import_settings() -> Any:
    entries = _entries("settings")
    changes = [_setting(raw) for raw in entries]
    results = service().import_settings(changes)
    answers: list[dict[str, Any]] = []
    for change, result in zip(changes, results):
        if isinstance(result, errors.RegistryError):
            answers.append(result.body())
        elif isinstance(result, Mode):
            assert isinstance(change, SettingChange)
            answers.append({"subject": change.subject, "mode": result.value})
        else:
            answers.append({"subject": result.subject, "config": config_body(result, level_name="compatibility")})
    return json_response({"results": answers})


@import_routes.post("/import/schemas")
def import_schemas() -> Any:
    entries = _entries("schemas")
    results = service().import_many([_entry(raw) for raw in entries])
    return json_response({"results": [
        result.body() if isinstance(result, errors.RegistryError)
        else {"subject": result.subject, "version": result.version, "id": result.id}
        for result in results]})
