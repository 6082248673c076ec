"""The registry's domain rules: the only place they live, one module per concern.

Reads come from the cache. A write validates the request, then plans its records
against a cache caught up with the log and hands them to `store.writer.LogWriter`,
which appends them and returns once this node has applied them (read-your-writes).
Nothing is planned for a request that fails validation (DESIGN invariant 6). Ids, and
the watermarks that keep them from reuse, are the store's (`store.ids`): plans ask the
writer's `SchemaIds` for them and never build log protocol records themselves.

    requests.py      what requests give: NewSchema, RegisterRequest, ConfigUpdate, ...
    state.py         what every concern shares: the cache, the writer, the defaults
    settings.py      config, mode and contexts
    parsing.py       schemas parsed, references resolved, equal schemas found
    reads.py         subjects, versions, schemas by id and guid, lookups
    registration.py  registering, checking compatibility, tags
    deletion.py      soft and hard deletes
    imports.py       bulk imports of schemas and settings

`RegistryService` is every concern at once: each is a class built on the concerns it
uses, so that a request's path runs plain method calls, never a chain of delegations.
"""
from __future__ import annotations

from registry.service.deletion import Deletion
from registry.service.imports import Imports
from registry.service.requests import (
    MAX_INT32,
    ConfigUpdate,
    NewSchema,
    RegisterRequest,
    SettingChange,
    TagRequest,
    parse_version,
)

__all__ = ["MAX_INT32", "ConfigUpdate", "NewSchema", "RegisterRequest", "RegistryService", "SettingChange",
           "TagRequest", "parse_version"]


class RegistryService(Imports, Deletion):
    """Schemas, subjects, versions, config and mode: Confluent's rules over one cache.

    Reads come from the cache. Writes plan records against a cache caught up with the
    log and hand them to the writer (`store.writer.LogWriter`), which appends them and
    returns once they are applied; the service never talks to a log itself. Raises
    `registry.errors` for what breaks a rule, and lets the writer's store exceptions
    (`NotWriter`, `StoreTimeout`, `LogUnavailable`) through.

        service = RegistryService(cache, writer, default_compatibility=CompatibilityLevel.BACKWARD)
        value = service.register("orders-value", RegisterRequest(NewSchema(text)))
        service.version("orders-value", "latest")
    """
