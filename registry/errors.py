"""Every error the registry answers with: one type per Confluent error code.

Each carries its HTTP status and Confluent's `error_code`; `registry.http.error_answers`
turns them into `{"error_code": N, "message": "..."}` in one place. The store's own
exceptions (`store.writer.NotWriter`, `StoreTimeout`, `NoTimeLeft`,
`store.log.LogUnavailable`) are mapped there too.
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


# Plain HTTP errors, with Confluent's habit of repeating the status as the code.
class BadRequest(RegistryError):
    http_status, error_code = 400, 400


class Unauthorized(RegistryError):
    http_status, error_code = 401, 401


class Forbidden(RegistryError):
    http_status, error_code = 403, 403


class NotFound(RegistryError):
    http_status, error_code = 404, 404


class MethodNotAllowed(RegistryError):
    http_status, error_code = 405, 405


class NotAcceptable(RegistryError):
    http_status, error_code = 406, 406


class Conflict(RegistryError):
    http_status, error_code = 409, 409


class RequestTooLarge(RegistryError):
    http_status, error_code = 413, 413


class UnsupportedMediaType(RegistryError):
    http_status, error_code = 415, 415


class UnprocessableEntity(RegistryError):
    http_status, error_code = 422, 422


class SubjectNotFound(RegistryError):
    http_status, error_code = 404, 40401


class VersionNotFound(RegistryError):
    http_status, error_code = 404, 40402


class SchemaNotFound(RegistryError):
    http_status, error_code = 404, 40403


class SubjectSoftDeleted(RegistryError):
    http_status, error_code = 404, 40404


class SubjectNotSoftDeleted(RegistryError):
    http_status, error_code = 404, 40405


class VersionSoftDeleted(RegistryError):
    http_status, error_code = 404, 40406


class VersionNotSoftDeleted(RegistryError):
    http_status, error_code = 404, 40407


class SubjectConfigNotFound(RegistryError):
    http_status, error_code = 404, 40408


class SubjectModeNotFound(RegistryError):
    http_status, error_code = 404, 40409


class AssociationNotFound(RegistryError):
    http_status, error_code = 404, 40410


class IncompatibleSchema(RegistryError):
    http_status, error_code = 409, 409


class AssociationForResourceExists(RegistryError):
    http_status, error_code = 409, 40903


class AssociationForSubjectExists(RegistryError):
    http_status, error_code = 409, 40904


class StrongAssociationExists(RegistryError):
    http_status, error_code = 409, 40905


class NoActiveSubjectVersion(RegistryError):
    http_status, error_code = 409, 40907


class InvalidSchema(RegistryError):
    http_status, error_code = 422, 42201


class InvalidVersion(RegistryError):
    http_status, error_code = 422, 42202


class InvalidCompatibilityLevel(RegistryError):
    http_status, error_code = 422, 42203


class InvalidMode(RegistryError):
    http_status, error_code = 422, 42204


class OperationNotPermitted(RegistryError):
    http_status, error_code = 422, 42205


class ReferenceExists(RegistryError):
    http_status, error_code = 422, 42206


class InvalidSubject(RegistryError):
    http_status, error_code = 422, 42208


class SchemaTooLarge(RegistryError):
    http_status, error_code = 422, 42209


class InvalidRuleSet(RegistryError):
    http_status, error_code = 422, 42210


class ContextNotEmpty(RegistryError):
    http_status, error_code = 422, 42211


class InvalidAssociation(RegistryError):
    http_status, error_code = 422, 42212


class StoreError(RegistryError):
    http_status, error_code = 500, 50001


class StoreTimeout(RegistryError):
    http_status, error_code = 500, 50002


class ForwardingError(RegistryError):
    http_status, error_code = 500, 50003


class UnknownLeader(RegistryError):
    http_status, error_code = 500, 50004


class NotReady(RegistryError):
    """Still reading the log. 503 so that every client retries it."""

    http_status, error_code = 503, 50002
