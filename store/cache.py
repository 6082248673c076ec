"""The lookup cache: the state the log's records describe, indexed for reads.

It is a pure function of the records applied so far (DESIGN invariant 1): `apply`
uses no clock, randomness or node-local state, so two nodes that applied the same
prefix hold the same cache. Only the reader thread calls `apply`; request threads
read. Reads take `snapshot`-style copies (`list(...)`) of the maps they iterate, which
CPython builds atomically, so a concurrent apply never breaks an iteration.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from store.records import (
    ClearSubjectValue,
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    FenceValue,
    Key,
    ModeKey,
    ModeValue,
    NoopKey,
    SchemaKey,
    SchemaReference,
    SchemaValue,
    ClearSubjectKey,
    Value,
    logical_key,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StoredSchema:
    """The content an id names. An id names exactly one content, forever."""

    id: int
    schema_type: str
    schema: str
    references: tuple[SchemaReference, ...]


ContentKey = tuple[str, str, tuple[SchemaReference, ...]]


class Cache:
    """Lookup maps over the applied log. See the module docstring for threading."""

    def __init__(self) -> None:
        self._schemas: dict[int, StoredSchema] = {}
        self._id_by_content: dict[ContentKey, int] = {}
        self._versions: dict[str, dict[int, SchemaValue]] = {}
        self._users: dict[int, set[tuple[str, int]]] = {}
        self._referenced_by: dict[tuple[str, int], set[int]] = {}
        self._configs: dict[str | None, ConfigValue] = {}
        self._modes: dict[str | None, ModeValue] = {}
        self._key_bytes: dict[tuple[object, ...], bytes | dict[bytes, None]] = {}
        self._max_id = 0
        self.conflicts = 0  # records that tried to give an existing id other content
        self._fence: FenceValue | None = None
        # The latest DELETE_SUBJECT / CLEAR_SUBJECT value per subject, to re-state them.
        self._subject_records: dict[tuple[type, str], Value] = {}

    # ---- applying records -------------------------------------------------

    def apply(self, key: Key, raw_key: bytes, value: Value | None) -> None:
        """Apply one decoded record. A None value is a tombstone for `key`."""
        # Replaying a topic applies every record once: the SCHEMA case is kept short.
        if type(key) is SchemaKey:
            self._remember_key_bytes(("SCHEMA", key.subject, key.version), raw_key, value is None)
            if value is None:
                self._drop_version(key.subject, key.version)
            elif type(value) is SchemaValue:
                self._put_version(key, value)
            return
        self._remember_key_bytes(logical_key(key), raw_key, value is None)
        if isinstance(key, NoopKey):
            if isinstance(value, FenceValue):
                self._fence = value
                self._max_id = max(self._max_id, value.max_id)
            return
        if isinstance(key, SchemaKey):
            if value is None:
                self._drop_version(key.subject, key.version)
            elif isinstance(value, SchemaValue):
                self._put_version(key, value)
        elif isinstance(key, ConfigKey):
            self._put_or_drop(self._configs, key.subject, value)
        elif isinstance(key, ModeKey):
            self._put_or_drop(self._modes, key.subject, value)
        elif isinstance(key, (DeleteSubjectKey, ClearSubjectKey)):
            self._put_or_drop(self._subject_records, (type(key), key.subject), value)
            if isinstance(key, DeleteSubjectKey) and isinstance(value, DeleteSubjectValue):
                self._soft_delete_up_to(key.subject, value.version)
            elif isinstance(key, ClearSubjectKey) and isinstance(value, ClearSubjectValue):
                for number in list(self._versions.get(key.subject, {})):
                    self._drop_version(key.subject, number)

    def _soft_delete_up_to(self, subject: str, version: int) -> None:
        versions = self._versions.get(subject, {})
        for number, existing in list(versions.items()):
            if number <= version and not existing.deleted:
                versions[number] = replace(existing, deleted=True)

    def _remember_key_bytes(self, identity: tuple[object, ...], raw_key: bytes, tombstone: bool) -> None:
        # One byte form per key is the rule, several the exception (magic 0 and 1, a
        # foreign writer's spacing): hold a bare `bytes` until a second form appears,
        # then an insertion-ordered dict of forms.
        forms = self._key_bytes.get(identity)
        if tombstone:
            if forms == raw_key:
                del self._key_bytes[identity]
            elif type(forms) is dict:
                forms.pop(raw_key, None)
                if not forms:
                    del self._key_bytes[identity]
        elif forms is None:
            self._key_bytes[identity] = raw_key
        elif type(forms) is dict:
            forms[raw_key] = None
        elif forms != raw_key:
            self._key_bytes[identity] = {forms: None, raw_key: None}

    @staticmethod
    def _put_or_drop(target: dict, subject: str | None, value: Value | None) -> None:
        if value is None:
            target.pop(subject, None)
        else:
            target[subject] = value

    def _put_version(self, key: SchemaKey, value: SchemaValue) -> None:
        content: ContentKey = (value.schema_type, value.schema, value.references)
        existing = self._schemas.get(value.id)
        if existing is not None and (existing.schema_type, existing.schema, existing.references) != content:
            # Never let an id mean two schemas: the first content applied wins everywhere.
            self.conflicts += 1
            log.error("record for %s v%d gives id %d other content; ignored",
                      key.subject, key.version, value.id)
            return
        subject, version, schema_id = key.subject, key.version, value.id
        if value.subject != subject or value.version != version:
            value = replace(value, subject=subject, version=version)  # rare: replace() is slow
        versions = self._versions.get(subject)
        if versions is None:
            versions = self._versions[subject] = {}
        else:
            previous = versions.get(version)
            if previous is not None and previous.id != schema_id:
                self._release(previous)
        if existing is None:
            self._schemas[schema_id] = StoredSchema(schema_id, *content)
        self._id_by_content.setdefault(content, schema_id)
        versions[version] = value
        users = self._users.get(schema_id)
        if users is None:
            self._users[schema_id] = {(subject, version)}
        else:
            users.add((subject, version))
        for ref in value.references:
            self._referenced_by.setdefault((ref.subject, ref.version), set()).add(schema_id)
        if schema_id > self._max_id:
            self._max_id = schema_id

    def _drop_version(self, subject: str, version: int) -> None:
        versions = self._versions.get(subject)
        previous = versions.pop(version, None) if versions is not None else None
        if versions is not None and not versions:
            del self._versions[subject]
        if previous is not None:
            self._release(previous)

    def _release(self, value: SchemaValue) -> None:
        users = self._users.get(value.id)
        if users is None:
            return
        users.discard((value.subject, value.version))
        if users:
            return
        del self._users[value.id]
        stored = self._schemas.pop(value.id, None)
        if stored is not None:
            for ref in stored.references:
                dependants = self._referenced_by.get((ref.subject, ref.version))
                if dependants is not None:
                    dependants.discard(value.id)
                    if not dependants:
                        del self._referenced_by[(ref.subject, ref.version)]

    # ---- reads -------------------------------------------------------------

    def current_value(self, key: Key) -> Value | None:
        """What the log says for `key` now, as one record would state it; None if nothing.

        Used to re-state a key whose newest record readers dropped (see
        `RegistryService.repair_misplaced`).
        """
        if isinstance(key, SchemaKey):
            return self.version(key.subject, key.version)
        if isinstance(key, ConfigKey):
            return self._configs.get(key.subject)
        if isinstance(key, ModeKey):
            return self._modes.get(key.subject)
        if isinstance(key, NoopKey):
            return self._fence
        return self._subject_records.get((type(key), key.subject))

    @property
    def fence(self) -> FenceValue | None:
        """The latest leader fence applied: its holder is the only node that may append."""
        return self._fence

    @property
    def max_id(self) -> int:
        """The largest id any applied record has used; new ids start above it."""
        return self._max_id

    def schema_by_id(self, schema_id: int) -> StoredSchema | None:
        return self._schemas.get(schema_id)

    def id_by_content(self, schema_type: str, schema: str,
                      references: tuple[SchemaReference, ...]) -> int | None:
        return self._id_by_content.get((schema_type, schema, references))

    def lowest_free_id_above(self, floor: int, ceiling: int) -> int | None:
        """The lowest id in (floor, ceiling] that no applied record uses, or None.

        Linear in the number of ids in use: only for when the ids above the highest
        one are exhausted.
        """
        candidate = floor + 1
        for used in sorted(i for i in list(self._schemas) if i > floor):
            if used > candidate:
                break
            candidate = used + 1
        return candidate if candidate <= ceiling else None

    def schema_ids(self) -> list[int]:
        return sorted(list(self._schemas))

    def subjects(self) -> list[str]:
        return list(self._versions)

    def versions(self, subject: str) -> list[SchemaValue]:
        """Every version of `subject` still in the log, soft-deleted ones included, in order."""
        return sorted(list(self._versions.get(subject, {}).values()), key=lambda v: v.version)

    def version(self, subject: str, version: int) -> SchemaValue | None:
        return self._versions.get(subject, {}).get(version)

    def users_of(self, schema_id: int) -> list[tuple[str, int]]:
        """The (subject, version) pairs, soft-deleted included, that use `schema_id`."""
        return sorted(list(self._users.get(schema_id, ())))

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of schemas whose references name (subject, version)."""
        return sorted(list(self._referenced_by.get((subject, version), ())))

    def config(self, subject: str | None) -> ConfigValue | None:
        return self._configs.get(subject)

    def mode(self, subject: str | None) -> ModeValue | None:
        return self._modes.get(subject)

    def key_bytes(self, key: Key) -> list[bytes]:
        """Every byte form under which `key`'s logical identity is live in the log.

        A tombstone must be written for each, or compaction keeps the other forms and a
        hard-deleted schema comes back on replay (Confluent issues #2961 and #4420).
        """
        forms = self._key_bytes.get(logical_key(key))
        if forms is None:
            return []
        return [forms] if type(forms) is bytes else list(forms)

    def fingerprint(self) -> tuple:
        """Everything reads can observe, for comparing two nodes' caches in tests."""
        return (
            sorted(self._schemas.items()),
            sorted((s, sorted(v.items())) for s, v in list(self._versions.items())),
            sorted(self._configs.items(), key=lambda kv: kv[0] or ""),
            sorted(self._modes.items(), key=lambda kv: kv[0] or ""),
            self._max_id,
            self._fence,
        )
