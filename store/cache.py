"""The lookup cache: the state the log's records describe, indexed for reads.

It is a pure function of the records applied so far (DESIGN invariant 1): `apply`
uses no clock, randomness or node-local state, so two nodes that applied the same
prefix hold the same cache. Only the reader thread calls `apply`; request threads
read. Reads take `snapshot`-style copies (`list(...)`) of the maps they iterate, which
CPython builds atomically, so a concurrent apply never breaks an iteration.

Decoded no further than replay needs. A cold start applies every record once and
reads few of them, so the maps by version and by id hold what the record decoded to
(a `PlainSchemaValue` tuple for nearly all), and a read turns an entry into the
SchemaValue or StoredSchema it stands for and puts that back in its place, so that
it is built once and the same object answers every later read. Putting back is done
under `_entries_lock`, and only if the entry is still the one read; every change the
reader makes to those two maps takes the same lock, so a read never puts back a
value the log has since replaced or deleted.
"""
from __future__ import annotations

import base64
import binascii
import logging
import threading
from collections import deque
from dataclasses import dataclass, replace
from typing import Union

from store.contracts import Metadata, RuleSet, content_md5, guid_of
from store.records import (
    DEFAULT_CONTEXT,
    AssociationKey,
    AssociationValue,
    ClearSubjectValue,
    ContextKey,
    ContextValue,
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
    PlainSchemaValue,
    SchemaValue,
    ClearSubjectKey,
    Value,
    context_of,
    logical_key,
)

log = logging.getLogger(__name__)

try:
    # The replay's common case compiled (store/replay_native, built into the wheel and by
    # `make install` by the build backend). Without it (a platform no wheel is built for,
    # an install without Rust) the Python path applies every record.
    from store._replay_native import apply_plain_run as _native_plain_run
except ImportError:
    _native_plain_run = None

# Which replay this process runs, said once, by the first cache that replays natively
# if it can: the node's start-up log names it (the image's test reads that line).
_replay_said = False


def _say_which_replay() -> None:
    global _replay_said
    if _replay_said:
        return
    _replay_said = True
    if _native_plain_run is not None:
        log.info("replay: compiled (store._replay_native)")
    else:
        log.warning("replay: Python (store._replay_native is not in this install, no wheel for this "
                    "platform or built without Rust): cold starts are slower")


@dataclass(frozen=True, slots=True)
class StoredSchema:
    """The content an id names within its context. An id names exactly one content, forever.

    `md5` is Confluent's content hash (text, references, metadata, rule set); the guid
    is that hash shown as a UUID.
    """

    id: int
    schema_type: str
    schema: str
    references: tuple[SchemaReference, ...]
    metadata: Metadata | None = None
    rule_set: RuleSet | None = None
    stored_md5: bytes = b""  # only when the record carried one (Confluent's `md5` field)
    context: str = DEFAULT_CONTEXT

    @property
    def md5(self) -> bytes:
        # Computed when asked, not when applied: replaying a topic hashes nothing.
        return self.stored_md5 or content_md5(self.schema, self.references, self.metadata, self.rule_set)

    @property
    def guid(self) -> str:
        return guid_of(self.md5)


# (context, type, text, references, metadata, rule set): what makes two registrations one schema.
ContentKey = tuple[str, str, str, tuple[SchemaReference, ...], Metadata | None, RuleSet | None]


def content_key(context: str, schema_type: str, schema: str, references: tuple[SchemaReference, ...],
                metadata: Metadata | None = None, rule_set: RuleSet | None = None) -> ContentKey:
    return (context, schema_type, schema, references, metadata, rule_set)


# What the maps by version and by id hold: see the module docstring.
_VersionEntry = Union[SchemaValue, PlainSchemaValue]
_IdEntry = Union[StoredSchema, SchemaValue, PlainSchemaValue]
_Users = Union[tuple[str, int], set[tuple[str, int]]]


def _entry_content(context: str, entry: _IdEntry) -> ContentKey:
    return (context, entry.schema_type, entry.schema, entry.references, entry.metadata, entry.rule_set)


def _stored_md5(value: SchemaValue | PlainSchemaValue) -> bytes:
    """The MD5 a record states (base64), or b"" when it states none or a malformed one."""
    if not value.md5:
        return b""
    try:
        raw = base64.b64decode(value.md5, validate=True)
    except (ValueError, binascii.Error):
        return b""
    return raw if len(raw) == 16 else b""


def qualify_reference(referrer: str, subject: str) -> str:
    """The stored subject a reference names: an unqualified reference from a subject of
    another context names a subject of that context (Confluent's qualifySubjectWithParent)."""
    if referrer[:2] != ":." or subject[:2] == ":.":
        return subject
    context = context_of(referrer)
    return f":{context}:{subject}"


class Cache:
    """Lookup maps over the applied log. See the module docstring for threading."""

    def __init__(self, native: bool = True) -> None:
        # `apply_plain_run`, or None where the compiled module is missing or `native` is
        # False (tests replay both ways): the reader then applies every record itself.
        self.plain_run = self.apply_plain_run if native and _native_plain_run is not None else None
        if native:
            _say_which_replay()
        # Ids are numbered per context (Confluent's contexts): context -> id -> content.
        self._ids: dict[str, dict[int, _IdEntry]] = {DEFAULT_CONTEXT: {}}
        self._schemas = self._ids[DEFAULT_CONTEXT]  # the default context, the hot path
        self._id_by_content: dict[ContentKey, int] = {}
        # Like the guid index, the content index is caught up when asked (`id_by_content`)
        # with the versions applied since, in order (the first id applied for a content
        # wins): replay hashes no schema text. The default context's entries bare (no
        # tuple to build), the others' with their context.
        self._content_pending: deque[_VersionEntry] = deque()
        self._content_pending_contexts: deque[tuple[str, _VersionEntry]] = deque()
        self._content_lock = threading.Lock()
        # The guid index is built when a guid is first asked for and caught up with the
        # ids applied since on each later ask (`_md5_pending`), so that replaying a topic
        # computes no hash. Appending to a list is atomic, so `apply` needs no lock.
        self._id_by_md5: dict[tuple[str, bytes], int] = {}
        # Ids of the default context (ints: no garbage-collector cost) and (context, id)
        # pairs of the others. Appending and popleft are atomic.
        self._md5_pending: deque[int] = deque()
        self._md5_pending_contexts: deque[tuple[str, int]] = deque()
        self._md5_lock = threading.Lock()
        self._versions: dict[str, dict[int, _VersionEntry]] = {}
        self._entries_lock = threading.Lock()  # see the module docstring
        # context -> id -> the (subject, version) pairs using it; the default context's
        # map is also `_users`, so the common case builds no key tuple. One pair is the
        # rule (an id used by one version) and is held bare, several in a set: a set per
        # id cost 200 bytes and a fifth of a microsecond each at replay.
        self._users_by_context: dict[str, dict[int, _Users]] = {DEFAULT_CONTEXT: {}}
        self._users = self._users_by_context[DEFAULT_CONTEXT]
        # (qualified subject, version) -> (context, id) of the schemas referring to it
        self._referenced_by: dict[tuple[str, int], set[tuple[str, int]]] = {}
        self._contexts: dict[tuple[str, str], ContextValue] = {}
        self._associations: dict[tuple[object, ...], AssociationValue] = {}
        self._context_max_ids: dict[str, int] = {}
        self._configs: dict[str | None, ConfigValue] = {}
        self._modes: dict[str | None, ModeValue] = {}
        self._key_bytes: dict[tuple[object, ...], bytes | dict[bytes, None]] = {}
        self._max_id = 0
        self.conflicts = 0  # records that tried to give an existing id other content
        # Ids whose entry went (the last version using one hard-deleted or given another
        # id), counted after the entry is gone: an id's content never changes while it
        # is here, so an answer derived from it stays true until this moves.
        self.id_removals = 0
        self._fence: FenceValue | None = None
        # The latest DELETE_SUBJECT / CLEAR_SUBJECT value per subject, to re-state them.
        self._subject_records: dict[tuple[type, str], Value] = {}

    # ---- applying records -------------------------------------------------

    def apply(self, key: Key, raw_key: bytes, value: Value | None) -> None:
        """Apply one decoded record. A None value is a tombstone for `key`."""
        if type(key) is SchemaKey:
            self.apply_schema(key.subject, key.version, raw_key, value)
            return
        self._remember_key_bytes(logical_key(key), raw_key, value is None)
        if isinstance(key, NoopKey):
            if isinstance(value, FenceValue):
                self._fence = value
                self._max_id = max(self._max_id, value.max_id)
                for context, top in value.context_max_ids:
                    if top > self._context_max_ids.get(context, 0):
                        self._context_max_ids[context] = top
            return
        if isinstance(key, ContextKey):
            self._put_or_drop(self._contexts, (key.tenant, key.context), value)
            return
        if isinstance(key, AssociationKey):
            self._put_or_drop(self._associations, logical_key(key), value)
            return
        if isinstance(key, SchemaKey):
            self.apply_schema(key.subject, key.version, raw_key, value)
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

    def apply_schema(self, subject: str, version: int, raw_key: bytes,
                     value: Value | PlainSchemaValue | None) -> None:
        """Apply one SCHEMA record, as `apply` does for a SchemaKey, its value as
        `decode_schema_record` gives it (None: a tombstone). A value of another type
        counts only as the key's bytes."""
        # Replaying a topic runs this once per record: kept short.
        self._remember_key_bytes(("SCHEMA", subject, version), raw_key, value is None)
        if value is None:
            self._drop_version(subject, version)
        elif type(value) is PlainSchemaValue or type(value) is SchemaValue:
            self._put_version(subject, version, value)

    def apply_plain_run(self, records: list, position: int, start: int) -> tuple[int, int]:
        """Apply `records[position:]` (LogRecords) while each is a SCHEMA record that only
        adds a version with a new id in the default context, exactly as `apply_schema`
        would; skip those below offset `start`. Returns (the position of the first record
        not taken, how many were applied). Compiled: see store/replay_native."""
        # The lock for the whole run, as `_put_version` takes it per record: the native
        # code holds the GIL throughout, so readers see the run whole or not at all.
        with self._entries_lock:
            end, applied, top, new_ids, entries = _native_plain_run(
                records, position, start, self._key_bytes, self._schemas, self._versions, self._users,
                PlainSchemaValue, "SCHEMA", "AVRO")
        if applied:
            self._md5_pending.extend(new_ids)
            self._content_pending.extend(entries)
            if top > self._max_id:
                self._max_id = top
        return end, applied

    def _soft_delete_up_to(self, subject: str, version: int) -> None:
        versions = self._versions.get(subject, {})
        for number, existing in list(versions.items()):
            if number <= version and not existing.deleted:
                deleted = (existing._replace(deleted=True) if type(existing) is PlainSchemaValue
                           else replace(existing, deleted=True))
                with self._entries_lock:
                    versions[number] = deleted

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

    def _put_version(self, subject: str, version: int, value: SchemaValue | PlainSchemaValue) -> None:
        context = DEFAULT_CONTEXT if subject[:2] != ":." else context_of(subject)
        schema_id = value.id
        ids = self._ids.get(context)
        if ids is None:
            ids = self._ids[context] = {}
        existing = ids.get(schema_id)
        if existing is not None and _entry_content(context, existing) != _entry_content(context, value):
            # Never let an id mean two schemas: the first content applied wins everywhere.
            self.conflicts += 1
            log.error("record for %s v%d gives id %d other content; ignored", subject, version, schema_id)
            return
        if type(value) is SchemaValue and (value.subject != subject or value.version != version):
            value = replace(value, subject=subject, version=version)  # rare: replace() is slow
        versions = self._versions.get(subject)
        if versions is None:
            versions = self._versions[subject] = {}
        else:
            previous = versions.get(version)
            if previous is not None and previous.id != schema_id:
                self._release(subject, version, previous.id)
        # acquire/release, not `with`: half the cost, once per record replayed.
        self._entries_lock.acquire()
        try:
            if existing is None:
                ids[schema_id] = value  # a StoredSchema once read (`_stored_schema`)
            versions[version] = value
        finally:
            self._entries_lock.release()
        if existing is None:
            if context == DEFAULT_CONTEXT:
                self._md5_pending.append(schema_id)
            else:
                self._md5_pending_contexts.append((context, schema_id))
        if context == DEFAULT_CONTEXT:
            self._content_pending.append(value)
        else:
            self._content_pending_contexts.append((context, value))
        users_here = self._users if context == DEFAULT_CONTEXT else self._users_by_context.setdefault(context, {})
        users = users_here.get(schema_id)
        if users is None:
            users_here[schema_id] = (subject, version)
        elif type(users) is set:
            users.add((subject, version))
        elif users != (subject, version):
            users_here[schema_id] = {users, (subject, version)}
        for ref in value.references:
            target = (qualify_reference(subject, ref.subject), ref.version)
            self._referenced_by.setdefault(target, set()).add((context, schema_id))
        if context == DEFAULT_CONTEXT:
            if schema_id > self._max_id:
                self._max_id = schema_id
        elif schema_id > self._context_max_ids.get(context, 0):
            self._context_max_ids[context] = schema_id

    def _drop_version(self, subject: str, version: int) -> None:
        versions = self._versions.get(subject)
        if versions is None:
            return
        with self._entries_lock:
            previous = versions.pop(version, None)
        if not versions:
            del self._versions[subject]
        if previous is not None:
            self._release(subject, version, previous.id)

    def _release(self, subject: str, version: int, schema_id: int) -> None:
        context = context_of(subject)
        users_here = self._users_by_context.get(context, {})
        users = users_here.get(schema_id)
        if users is None:
            return
        if type(users) is set:
            users.discard((subject, version))
            if users:
                return
        elif users != (subject, version):
            return
        del users_here[schema_id]
        ids = self._ids.get(context)
        with self._entries_lock:
            stored = ids.pop(schema_id, None) if ids is not None else None
        if stored is not None:
            self.id_removals += 1
            # `_id_by_content` and `_id_by_md5` keep the id: the same content registered
            # again gets it back (an id names one content forever).
            for ref in stored.references:
                target = (qualify_reference(subject, ref.subject), ref.version)
                dependants = self._referenced_by.get(target)
                if dependants is not None:
                    dependants.discard((context, schema_id))
                    if not dependants:
                        del self._referenced_by[target]

    # ---- entries to values (see the module docstring) -----------------------------

    def _stored_schema(self, ids: dict[int, _IdEntry], schema_id: int, context: str) -> StoredSchema | None:
        """The StoredSchema for `ids`' entry of `schema_id`, put in its place; None if none."""
        entry = ids.get(schema_id)
        if entry is None or type(entry) is StoredSchema:
            return entry
        stored = StoredSchema(schema_id, entry.schema_type, entry.schema, entry.references, entry.metadata,
                              entry.rule_set, _stored_md5(entry) if entry.md5 else b"", context)
        with self._entries_lock:
            if ids.get(schema_id) is entry:
                ids[schema_id] = stored
        return stored

    def _schema_value(self, subject: str, versions: dict[int, _VersionEntry], number: int,
                      entry: _VersionEntry) -> SchemaValue:
        """The SchemaValue `entry` (read from `versions` at `number`) stands for, put in its place."""
        if type(entry) is SchemaValue:
            return entry
        value = entry.value(subject, number)
        with self._entries_lock:
            if versions.get(number) is entry:
                versions[number] = value
        return value

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
        if isinstance(key, ContextKey):
            return self._contexts.get((key.tenant, key.context))
        if isinstance(key, AssociationKey):
            return self._associations.get(logical_key(key))
        return self._subject_records.get((type(key), key.subject))

    @property
    def fence(self) -> FenceValue | None:
        """The latest leader fence applied: its holder is the only node that may append."""
        return self._fence

    @property
    def max_id(self) -> int:
        """The largest id any applied record has used in the default context; new ids start above it."""
        return self._max_id

    def context_max_id(self, context: str) -> int:
        """The largest id used in `context` (records and fences alike); new ids start above it."""
        if context == DEFAULT_CONTEXT:
            return self._max_id
        return self._context_max_ids.get(context, 0)

    def context_max_ids(self) -> tuple[tuple[str, int], ...]:
        """(context, largest id) for every non-default context that used an id, sorted."""
        return tuple(sorted(list(self._context_max_ids.items())))

    def schema_by_id(self, schema_id: int, context: str = DEFAULT_CONTEXT) -> StoredSchema | None:
        if context == DEFAULT_CONTEXT:
            entry = self._schemas.get(schema_id)
            if entry is None or type(entry) is StoredSchema:  # the hot path: an id read before
                return entry
            return self._stored_schema(self._schemas, schema_id, context)
        ids = self._ids.get(context)
        return None if ids is None else self._stored_schema(ids, schema_id, context)

    def id_by_content(self, content: ContentKey) -> int | None:
        """The first id applied for `content` (it may be gone since)."""
        with self._content_lock:
            self._index_contents_locked()
            return self._id_by_content.get(content)

    def index_contents(self) -> None:
        """Bring the content index up to the versions applied so far. The reader calls it
        when idle, so that what waits for the index stays small (and holds no value a
        later record replaced); `id_by_content` does it when asked."""
        with self._content_lock:
            self._index_contents_locked()

    def _index_contents_locked(self) -> None:
        index, pending, pending_contexts = self._id_by_content, self._content_pending, self._content_pending_contexts
        while pending:
            entry = pending.popleft()
            index.setdefault(_entry_content(DEFAULT_CONTEXT, entry), entry.id)
        while pending_contexts:
            context, entry = pending_contexts.popleft()
            index.setdefault(_entry_content(context, entry), entry.id)

    def id_by_md5(self, context: str, md5: bytes) -> int | None:
        """The first id applied for this content hash in `context` (it may be gone since)."""
        with self._md5_lock:
            while self._md5_pending:
                self._index_md5(DEFAULT_CONTEXT, self._md5_pending.popleft())
            while self._md5_pending_contexts:
                self._index_md5(*self._md5_pending_contexts.popleft())
            return self._id_by_md5.get((context, md5))

    def _index_md5(self, context: str, schema_id: int) -> None:
        ids = self._ids.get(context)
        stored = None if ids is None else self._stored_schema(ids, schema_id, context)
        if stored is not None:
            self._id_by_md5.setdefault((context, stored.md5), schema_id)

    def lowest_free_id_above(self, floor: int, ceiling: int, context: str = DEFAULT_CONTEXT) -> int | None:
        """The lowest id in (floor, ceiling] that no applied record of `context` uses, or None.

        Linear in the number of ids in use: only for when the ids above the highest
        one are exhausted.
        """
        candidate = floor + 1
        for used in sorted(i for i in list(self._ids.get(context, {})) if i > floor):
            if used > candidate:
                break
            candidate = used + 1
        return candidate if candidate <= ceiling else None

    def schema_ids(self, context: str = DEFAULT_CONTEXT) -> list[int]:
        return sorted(list(self._ids.get(context, {})))

    def contexts(self) -> list[str]:
        """Every context a CONTEXT record or a stored subject names, the default one included."""
        found = {DEFAULT_CONTEXT} | {context for _, context in list(self._contexts)}
        found.update(context for context, ids in list(self._ids.items()) if ids)
        return sorted(found)

    def context_records(self) -> list[ContextKey]:
        return [ContextKey(context, tenant) for tenant, context in list(self._contexts)]

    def associations(self) -> list[AssociationValue]:
        """Every association, in a stable order (subject, resource)."""
        return sorted(list(self._associations.values()),
                      key=lambda a: (a.subject, a.resource_namespace, a.resource_name, a.association_type))

    def subjects(self) -> list[str]:
        return list(self._versions)

    def versions(self, subject: str) -> list[SchemaValue]:
        """Every version of `subject` still in the log, soft-deleted ones included, in order."""
        versions = self._versions.get(subject)
        if not versions:
            return []
        return sorted((self._schema_value(subject, versions, number, entry)
                       for number, entry in list(versions.items())), key=lambda v: v.version)

    def version(self, subject: str, version: int) -> SchemaValue | None:
        versions = self._versions.get(subject)
        entry = versions.get(version) if versions is not None else None
        if entry is None or type(entry) is SchemaValue:
            return entry
        return self._schema_value(subject, versions, version, entry)

    def users_of(self, schema_id: int, context: str = DEFAULT_CONTEXT) -> list[tuple[str, int]]:
        """The (subject, version) pairs, soft-deleted included, that use `schema_id` in `context`."""
        users = self._users_by_context.get(context, {}).get(schema_id)
        if users is None:
            return []
        return [users] if type(users) is tuple else sorted(list(users))

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of schemas whose references name (subject, version)."""
        return sorted({schema_id for _, schema_id in list(self._referenced_by.get((subject, version), ()))})

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
            sorted((c, sorted((i, self._stored_schema(ids, i, c)) for i in list(ids)))
                   for c, ids in list(self._ids.items())),
            sorted(self._context_max_ids.items()),
            sorted(self._contexts),
            sorted(self._associations.items()),
            sorted((s, sorted((n, self._schema_value(s, v, n, e)) for n, e in list(v.items())))
                   for s, v in list(self._versions.items())),
            sorted(self._configs.items(), key=lambda kv: kv[0] or ""),
            sorted(self._modes.items(), key=lambda kv: kv[0] or ""),
            self._max_id,
            self._fence,
        )
