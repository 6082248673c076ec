"""The one mapping of errors to answers, for Flask's error handler and the bridge's
direct views alike: the registry's own (`registry.errors`, one type per Confluent code),
the store's (`RecordTooLarge` 42209, `StoreTimeout` 50002, `LogUnavailable` 50001),
Werkzeug's HTTP errors, and anything unexpected (50001, logged, no traceback sent).
`NotWriter` has no answer here: the write goes to the leader (`registry.http.app`).

50002 is the store's: a wait on the log that ran out. A request that spent its time
before reaching the log (`NoTimeLeft`: its parsing and compatibility checks took it)
answers 422/42201 instead, as Confluent answers a schema its checks refuse.
"""
from __future__ import annotations

import logging
from typing import Any

from werkzeug.exceptions import HTTPException

from registry import errors
from store.log import LogUnavailable, RecordTooLarge
from store.writer import NoTimeLeft, NotWriter, StoreTimeout

log = logging.getLogger(__name__)

INTERNAL_MESSAGE = "Internal error in the schema registry"


def error_answer(exc: Exception, max_request_bytes: int, serving: str) -> tuple[dict[str, Any], int] | None:
    """(Confluent's error body, HTTP status) for `exc`, raised serving `serving` (the
    method and path, for the log); None for NotWriter, which is forwarded instead."""
    if isinstance(exc, NotWriter):
        return None
    if isinstance(exc, errors.RegistryError):
        return exc.body(), exc.http_status
    if isinstance(exc, RecordTooLarge):
        return _registry(errors.SchemaTooLarge(f"Write failed because schema is too large: {exc}"))
    if isinstance(exc, NoTimeLeft):  # before StoreTimeout, which it extends
        return _registry(errors.InvalidSchema(
            f"Invalid schema: checking the request (parsing, compatibility) took longer than "
            f"the registry allows ({exc}); nothing was written"))
    if isinstance(exc, StoreTimeout):
        return _registry(errors.StoreTimeout(f"Timed out on the schema log: {exc}"))
    if isinstance(exc, LogUnavailable):
        return _registry(errors.StoreError(f"The schema log is unavailable: {exc}"))
    if isinstance(exc, HTTPException):
        status = exc.code or 500
        if status == 413:
            message = f"Request body larger than the limit of {max_request_bytes} bytes"
        else:
            message = f"HTTP {status} {exc.name}"
        return {"error_code": status, "message": message}, status
    log.error("unexpected error serving %s", serving, exc_info=exc)
    return {"error_code": 50001, "message": INTERNAL_MESSAGE}, 500


def _registry(error: errors.RegistryError) -> tuple[dict[str, Any], int]:
    return error.body(), error.http_status
