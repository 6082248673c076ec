"""`/config` and `/mode`, global or per subject."""
from __future__ import annotations

from typing import Any

from flask import Blueprint

from registry import errors
from registry.http.bodies import config_body, config_update, flag, json_body, json_response
from registry.http.context import service
from registry.subjects import normalize_subject

config_routes = Blueprint("config", __name__)


def _subject_or_global(subject: str | None) -> str | None:
    # The default context's own subject (`:.:` after normalising, so "") is the global config.
    return None if subject is None or normalize_subject(subject) == "" else subject


@config_routes.get("/config")
@config_routes.get("/config/<subject:subject>")
def get_config(subject: str | None = None) -> Any:
    registry = service()
    subject = _subject_or_global(subject)
    if subject is None:
        return json_response(config_body(registry.config_in_scope(None)))
    if flag("defaultToGlobal"):
        return json_response(config_body(registry.config_in_scope(subject)))
    stored = registry.config(subject)
    if stored is None:
        raise errors.SubjectConfigNotFound(
            f"Subject '{subject}' does not have subject-level compatibility configured")
    return json_response(config_body(stored))


@config_routes.put("/config")
@config_routes.put("/config/<subject:subject>")
def put_config(subject: str | None = None) -> Any:
    """Merge the body into the stored config (Confluent's ConfigValue.update: absent
    fields keep their value, so `{}` changes nothing) and answer with the result."""
    value = service().set_config(_subject_or_global(subject), config_update(json_body()))
    return json_response(config_body(value, level_name="compatibility"))


@config_routes.delete("/config")
@config_routes.delete("/config/<subject:subject>")
def delete_config(subject: str | None = None) -> Any:
    try:
        previous = service().delete_compatibility(subject)
    except errors.SubjectConfigNotFound:
        # Confluent's ConfigResource.deleteSubjectConfig answers 40401 here, not 40408.
        raise errors.SubjectNotFound(f"Subject '{subject}' not found.") from None
    return json_response({"compatibilityLevel": previous.value})


@config_routes.get("/mode")
@config_routes.get("/mode/<subject:subject>")
def get_mode(subject: str | None = None) -> Any:
    registry = service()
    if subject is None:
        return json_response({"mode": registry.global_mode().value})
    mode = registry.subject_mode(subject)
    if mode is None:
        if not flag("defaultToGlobal"):
            raise errors.SubjectModeNotFound(f"Subject '{subject}' does not have subject-level mode configured")
        mode = registry.global_mode()
    return json_response({"mode": mode.value})


@config_routes.put("/mode")
@config_routes.put("/mode/<subject:subject>")
def put_mode(subject: str | None = None) -> Any:
    mode = json_body().get("mode")
    if mode is None:
        raise errors.InvalidMode("Invalid mode: none given")
    return json_response({"mode": service().set_mode(subject, mode, force=flag("force")).value})


@config_routes.delete("/mode")
@config_routes.delete("/mode/<subject:subject>")
def delete_mode(subject: str | None = None) -> Any:
    try:
        previous = service().delete_mode(subject)
    except errors.SubjectModeNotFound:
        # Confluent's ModeResource.deleteSubjectMode answers 40401 here, not 40409.
        raise errors.SubjectNotFound(f"Subject '{subject}' not found.") from None
    return json_response({"mode": previous.value})
