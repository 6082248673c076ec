"""Every error the registry answers with: one type per Confluent error code.

Each carries its HTTP status and Confluent's `error_code`; `registry.api` turns them
into `{"error_code": N, "message": "..."}` in one place.
"""
from __future__ import annotations


class RegistryError(Exception):
    http_status = 500
    error_code = 50001

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def body(self) -> dict[str, object]:
        return {"error_code": self.error_code, "message": self.message}


def _error(name: str, http_status: int, error_code: int) -> type[RegistryError]:
    return type(name, (RegistryError,), {"http_status": http_status, "error_code": error_code})


# Plain HTTP errors, with Confluent's habit of repeating the status as the code.
BadRequest = _error("BadRequest", 400, 400)
NotFound = _error("NotFound", 404, 404)
MethodNotAllowed = _error("MethodNotAllowed", 405, 405)
NotAcceptable = _error("NotAcceptable", 406, 406)
RequestTooLarge = _error("RequestTooLarge", 413, 413)
UnsupportedMediaType = _error("UnsupportedMediaType", 415, 415)
UnprocessableEntity = _error("UnprocessableEntity", 422, 422)

SubjectNotFound = _error("SubjectNotFound", 404, 40401)
VersionNotFound = _error("VersionNotFound", 404, 40402)
SchemaNotFound = _error("SchemaNotFound", 404, 40403)
SubjectSoftDeleted = _error("SubjectSoftDeleted", 404, 40404)
SubjectNotSoftDeleted = _error("SubjectNotSoftDeleted", 404, 40405)
VersionSoftDeleted = _error("VersionSoftDeleted", 404, 40406)
VersionNotSoftDeleted = _error("VersionNotSoftDeleted", 404, 40407)
SubjectConfigNotFound = _error("SubjectConfigNotFound", 404, 40408)
SubjectModeNotFound = _error("SubjectModeNotFound", 404, 40409)

IncompatibleSchema = _error("IncompatibleSchema", 409, 409)

InvalidSchema = _error("InvalidSchema", 422, 42201)
InvalidVersion = _error("InvalidVersion", 422, 42202)
InvalidCompatibilityLevel = _error("InvalidCompatibilityLevel", 422, 42203)
InvalidMode = _error("InvalidMode", 422, 42204)
OperationNotPermitted = _error("OperationNotPermitted", 422, 42205)
ReferenceExists = _error("ReferenceExists", 422, 42206)

StoreError = _error("StoreError", 500, 50001)
StoreTimeout = _error("StoreTimeout", 500, 50002)
ForwardingError = _error("ForwardingError", 500, 50003)
UnknownLeader = _error("UnknownLeader", 500, 50004)



class NotLeader(RegistryError):
    """Internal: this node may not append; the API forwards the request to `leader_url`.

    Reaches a client only as 50004 (no leader known, or a loop) via `registry.api`.
    """

    http_status = 500
    error_code = 50004

    def __init__(self, message: str, leader_url: str | None) -> None:
        super().__init__(message)
        self.leader_url = leader_url


# Not ready yet: still reading the log. 503 so that every client retries it.
NotReady = _error("NotReady", 503, 50002)
