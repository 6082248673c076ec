"""What every concern of the service shares: the cache it reads, the writer it hands
its plans to, the ids those plans allocate, the defaults and the schema types.

Each concern of `registry.service` is a class over this state (`Settings`, `Parsing`,
`Reads`, `Registration`, `Deletion`, `Imports`), built on the concerns it uses, and
`RegistryService` is all of them: a call from one concern into another is a plain
method call, with no delegation in between on a request's path."""
from __future__ import annotations

import threading
from collections import OrderedDict

from registry.compatibility import CompatibilityLevel
from registry.modes import Mode
from registry.parse_memo import ParseMemo
from registry.schema_types import SCHEMA_TYPES, ParsedSchema, SchemaType
from store.cache import Cache
from store.records import Key, SchemaValue, Value
from store.writer import LogWriter


class ServiceState:
    """The service's state: one cache, one writer, the defaults for what no record sets.

    Reads come from the cache. Writes plan records against a cache caught up with the
    log and hand them to the writer (`store.writer.LogWriter`), which appends them and
    returns once they are applied; ids come from the writer's `store.ids.SchemaIds`.
    Nothing here talks to a log.
    """

    def __init__(self, cache: Cache, writer: LogWriter, *,
                 default_compatibility: CompatibilityLevel = CompatibilityLevel.BACKWARD,
                 default_mode: Mode = Mode.READWRITE,
                 schema_types: dict[str, SchemaType] | None = None, group_commit: bool = False) -> None:
        self._cache = cache
        self._group_commit = group_commit
        self._writer = writer
        self._ids = writer.ids
        self._default_compatibility = default_compatibility
        self._default_mode = default_mode
        self._types = schema_types if schema_types is not None else SCHEMA_TYPES
        self._parsed: OrderedDict[tuple[str, int], ParsedSchema] = OrderedDict()
        self._parsed_lock = threading.Lock()
        # Serializers submit the same texts again and again (lookups, re-registration on
        # start-up): their parsed forms are remembered, bounded.
        self._parse_memo = ParseMemo()

    def schema_types(self) -> list[str]:
        return sorted(self._types)

    @property
    def group_commit(self) -> bool:
        """Whether registrations share appends (`group.commit.enable`)."""
        return self._group_commit

    def _visible_versions(self, subject: str, deleted: bool) -> list[SchemaValue]:
        """The subject's versions, oldest first; soft-deleted ones only with `deleted`."""
        return [v for v in self._cache.versions(subject) if deleted or not v.deleted]

    def _write_records(self, records: list[tuple[Key, Value | None]]) -> None:
        """Append `records` as they are (a setting or its removal: nothing to plan)."""
        self._writer.write(lambda: (records, None))
