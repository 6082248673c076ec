"""`/config` and `/mode`, global or per subject."""
from __future__ import annotations

from typing import Any

from flask import Blueprint

from registry import errors
from registry.http.bodies import flag, json_body, json_response
from registry.http.context import service

config_routes = Blueprint("config", __name__)


@config_routes.get("/config")
@config_routes.get("/config/<subject:subject>")
def get_config(subject: str | None = None) -> Any:
    registry = service()
    if subject is None:
        return json_response({"compatibilityLevel": registry.global_compatibility().value})
    level = registry.subject_compatibility(subject)
    if level is None:
        if not flag("defaultToGlobal"):
            raise errors.SubjectConfigNotFound(
                f"Subject '{subject}' does not have subject-level compatibility configured")
        level = registry.global_compatibility()
    return json_response({"compatibilityLevel": level.value})


@config_routes.put("/config")
@config_routes.put("/config/<subject:subject>")
def put_config(subject: str | None = None) -> Any:
    body = json_body()
    level = body.get("compatibility", body.get("compatibilityLevel"))
    if level is None:
        raise errors.InvalidCompatibilityLevel("Invalid compatibility level: none given")
    return json_response({"compatibility": service().set_compatibility(subject, level).value})


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
