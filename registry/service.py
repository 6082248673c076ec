"""The registry's domain rules: the only place they live.

Reads come from the cache. Writes take the write lock, make sure the cache has
caught up with the log, validate everything, append one or more records, and return
only after this node's reader has applied them (read-your-writes). Nothing is
appended for a request that fails validation (DESIGN invariant 6).
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TypeVar

from registry import errors
from registry.compatibility import CompatibilityLevel, PreviousVersion, incompatibilities
from registry.modes import Mode
from registry.schema_types import SCHEMA_TYPES, InvalidSchema, ParsedSchema, SchemaType
from store.cache import Cache, StoredSchema
from store.log import Log, LogConflict, LogFenced, LogUnavailable
from store.reader import LogReader
from store.records import (
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
    Value,
    RecordFormatError,
    decode_key,
    encode_key,
    encode_value,
)

log = logging.getLogger(__name__)

MAX_INT32 = 2**31 - 1


@dataclass(frozen=True)
class NewSchema:
    """A schema as a request gives it, before validation."""

    schema: str
    schema_type: str = "AVRO"
    references: tuple[SchemaReference, ...] = ()


@dataclass(frozen=True)
class RegisterRequest:
    schema: NewSchema
    normalize: bool = False
    schema_id: int | None = None  # IMPORT mode only
    version: int | None = None  # IMPORT mode only


class RegistryService:
    """Schemas, subjects, versions, config and mode over one log.

    `timeout` bounds every wait on the log (catching up, applying our own write).
    """

    def __init__(self, log: Log, cache: Cache, reader: LogReader, *,
                 default_compatibility: CompatibilityLevel = CompatibilityLevel.BACKWARD,
                 default_mode: Mode = Mode.READWRITE,
                 schema_types: dict[str, SchemaType] | None = None,
                 timeout: float = 10.0,
                 may_write: Callable[[], None] | None = None) -> None:
        self._log = log
        self._cache = cache
        self._reader = reader
        self._default_compatibility = default_compatibility
        self._default_mode = default_mode
        self._types = schema_types if schema_types is not None else SCHEMA_TYPES
        self._timeout = timeout
        self._may_write = may_write or (lambda: None)
        self._write_lock = threading.Lock()
        self._parsed: OrderedDict[int, ParsedSchema] = OrderedDict()
        self._parsed_lock = threading.Lock()
        self._ready = False
        self._ready_target: int | None = None
        self._known_end: int | None = None
        self.accepted_appends = 0  # records this node appended that the log took in place
        self._repairing = False

    # ---- readiness -------------------------------------------------------------

    def is_ready(self) -> bool:
        """True once this node has applied the log up to its end as seen at start-up.

        Never blocks and never touches the log (it is called on the serving event
        loop); `wait_ready` learns the end offset to reach.
        """
        if not self._ready and self._ready_target is not None:
            self._ready = self._reader.next_offset >= self._ready_target
        return self._ready

    def wait_ready(self, timeout: float) -> bool:
        """Block until `is_ready()` or `timeout` seconds pass; asks the log for its end."""
        deadline = time.monotonic() + timeout
        while not self.is_ready():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if self._ready_target is None:
                try:
                    self._ready_target = self._log.end_offset()
                except LogUnavailable:
                    time.sleep(min(remaining, 0.5))
                continue
            self._reader.wait_until(self._ready_target, min(remaining, 1.0))
        return True

    def set_may_write(self, check: Callable[[], None]) -> None:
        """Install the check run under the write lock before every append (the leader gate)."""
        self._may_write = check

    def schema_types(self) -> list[str]:
        return sorted(self._types)

    # ---- config and mode -------------------------------------------------------

    def global_compatibility(self) -> CompatibilityLevel:
        value = self._cache.config(None)
        if value is not None and value.compatibility_level:
            return _level(value.compatibility_level)
        return self._default_compatibility

    def subject_compatibility(self, subject: str) -> CompatibilityLevel | None:
        value = self._cache.config(subject)
        if value is not None and value.compatibility_level:
            return _level(value.compatibility_level)
        return None

    def compatibility_for(self, subject: str) -> CompatibilityLevel:
        return self.subject_compatibility(subject) or self.global_compatibility()

    def set_compatibility(self, subject: str | None, level: str) -> CompatibilityLevel:
        parsed = _parse_level(level)
        self._write_records([(ConfigKey(subject), ConfigValue(parsed.value, subject))])
        return parsed

    def delete_compatibility(self, subject: str | None) -> CompatibilityLevel:
        """Drop a subject's (or the global) setting and return the one it had."""
        if subject is None:
            previous = self.global_compatibility()
            if self._cache.config(None) is not None:
                self._write_records([(ConfigKey(None), None)])
            return previous
        previous_level = self.subject_compatibility(subject)
        if previous_level is None:
            raise errors.SubjectConfigNotFound(
                f"Subject '{subject}' does not have subject-level compatibility configured")
        self._write_records([(ConfigKey(subject), None)])
        return previous_level

    def global_mode(self) -> Mode:
        value = self._cache.mode(None)
        return Mode(value.mode) if value is not None else self._default_mode

    def subject_mode(self, subject: str) -> Mode | None:
        value = self._cache.mode(subject)
        return Mode(value.mode) if value is not None else None

    def mode_for(self, subject: str) -> Mode:
        glob = self.global_mode()
        if glob is Mode.READONLY_OVERRIDE:
            return glob
        return self.subject_mode(subject) or glob

    def set_mode(self, subject: str | None, mode: str, force: bool = False) -> Mode:
        parsed = _parse_mode(mode)
        if parsed is Mode.IMPORT and not force:
            has_schemas = (bool(self._visible_versions(subject, deleted=True)) if subject is not None
                           else bool(self._cache.subjects()))
            if has_schemas:
                where = f"subject '{subject}'" if subject is not None else "the registry"
                raise errors.OperationNotPermitted(
                    f"Cannot import since found existing subjects in {where}; "
                    "use force=true to switch to IMPORT anyway")
        self._write_records([(ModeKey(subject), ModeValue(parsed.value, subject))])
        return parsed

    def delete_mode(self, subject: str | None) -> Mode:
        if subject is None:
            previous = self.global_mode()
            if self._cache.mode(None) is not None:
                self._write_records([(ModeKey(None), None)])
            return previous
        previous_mode = self.subject_mode(subject)
        if previous_mode is None:
            raise errors.SubjectModeNotFound(f"Subject '{subject}' does not have subject-level mode configured")
        self._write_records([(ModeKey(subject), None)])
        return previous_mode

    # ---- reads -------------------------------------------------------------------

    def subjects(self, prefix: str = "", deleted: bool = False, deleted_only: bool = False) -> list[str]:
        found = []
        for subject in self._cache.subjects():
            if not subject.startswith(prefix):
                continue
            versions = self._cache.versions(subject)
            live = any(not v.deleted for v in versions)
            soft = any(v.deleted for v in versions)
            if deleted_only and soft and not live:
                found.append(subject)
            elif not deleted_only and (live or (deleted and soft)):
                found.append(subject)
        return sorted(found)

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        versions = self._visible_versions(subject, deleted)
        if not versions:
            raise errors.SubjectNotFound(f"Subject '{subject}' not found.")
        return [v.version for v in versions]

    def version(self, subject: str, version: str, deleted: bool = False) -> SchemaValue:
        """Resolve `version` ("latest", "-1" or a number) within `subject`."""
        number = parse_version(version)
        versions = self._visible_versions(subject, deleted=True)
        if not any(deleted or not v.deleted for v in versions):
            # As Confluent: a subject whose versions are all soft-deleted is not found
            # unless `deleted` asks for them.
            raise errors.SubjectNotFound(f"Subject '{subject}' not found.")
        if number == -1:
            visible = [v for v in versions if deleted or not v.deleted]
            if not visible:
                raise errors.VersionNotFound(f"Version latest not found for subject '{subject}'.")
            return visible[-1]
        found = self._cache.version(subject, number)
        if found is None or (found.deleted and not deleted):
            raise errors.VersionNotFound(f"Version {number} not found.")
        return found

    def referenced_by(self, subject: str, version: str) -> list[int]:
        found = self.version(subject, version, deleted=True)
        return self._cache.referenced_by(subject, found.version)

    def schema_by_id(self, schema_id: int, subject: str | None = None) -> StoredSchema:
        stored = self._cache.schema_by_id(schema_id)
        if stored is None or (subject and not any(s == subject for s, _ in self._cache.users_of(schema_id))):
            raise errors.SchemaNotFound("Schema not found")
        return stored

    def cached_schema(self, schema_id: int) -> StoredSchema | None:
        """The content `schema_id` names now, or None; never raises (the fast read path)."""
        return self._cache.schema_by_id(schema_id)

    def max_id(self) -> int:
        return self._cache.max_id

    def subjects_of_id(self, schema_id: int, deleted: bool = False) -> list[str]:
        return sorted({subject for subject, _ in self._id_versions(schema_id, deleted)})

    def versions_of_id(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        return self._id_versions(schema_id, deleted)

    def _id_versions(self, schema_id: int, deleted: bool) -> list[tuple[str, int]]:
        if self._cache.schema_by_id(schema_id) is None:
            raise errors.SchemaNotFound("Schema not found")
        found = []
        for subject, number in self._cache.users_of(schema_id):
            value = self._cache.version(subject, number)
            if value is not None and (deleted or not value.deleted):
                found.append((subject, number))
        return found

    def schemas(self, prefix: str = "", deleted: bool = False, latest_only: bool = False,
                offset: int = 0, limit: int = -1) -> list[SchemaValue]:
        found: list[SchemaValue] = []
        for subject in sorted(self._cache.subjects()):
            if not subject.startswith(prefix):
                continue
            versions = self._visible_versions(subject, deleted)
            found += versions[-1:] if latest_only else versions
        # Confluent's normalizeLimit: a limit of 0 or below means no limit.
        end = None if limit is None or limit <= 0 else offset + limit
        return found[offset:end]

    def lookup(self, subject: str, new: NewSchema, normalize: bool = False,
               deleted: bool = False) -> SchemaValue:
        """The version of `subject` whose schema equals `new`, after canonicalising it."""
        versions = self._visible_versions(subject, deleted=True)
        if not any(deleted or not v.deleted for v in versions):
            raise errors.SubjectNotFound(f"Subject '{subject}' not found.")
        parsed = self._parse(new)
        wanted = {_text(parsed, normalize), parsed.canonical()}
        for value in reversed(versions):
            if (value.deleted and not deleted) or value.schema_type != new.schema_type:
                continue
            if value.schema in wanted and value.references == new.references:
                return value
        raise errors.SchemaNotFound("Schema not found")

    # ---- compatibility -----------------------------------------------------------

    def check_compatibility(self, subject: str, version: str | None, new: NewSchema,
                            normalize: bool = False) -> list[str]:
        """Reasons `new` is incompatible with `version` (None: every version the level needs)."""
        parsed = self._parse(new)
        level = self.compatibility_for(subject)
        live = self._visible_versions(subject, deleted=False)
        if version is None:
            return incompatibilities(level, parsed, [self._previous(v) for v in live])
        if parse_version(version) == -1 and not live:
            return []
        target = self.version(subject, version)
        return incompatibilities(level, parsed, [self._previous(target)], all_versions=True)

    # ---- writes ------------------------------------------------------------------

    def register(self, subject: str, request: RegisterRequest) -> SchemaValue:
        """Register `request.schema` under `subject`; returns the (possibly existing) version."""
        mode = self.mode_for(subject)
        parsed = self._parse(request.schema)
        text = _text(parsed, request.normalize)
        if request.schema_id is not None and mode is not Mode.IMPORT:
            # Outside IMPORT an id may only name the content it already has.
            existing = self._cache.schema_by_id(request.schema_id)
            new = request.schema
            if existing is None or (existing.schema_type, existing.schema, existing.references) != (
                    new.schema_type, text, new.references):
                raise errors.OperationNotPermitted(
                    f"Subject {subject} is not in import mode; an id can only be given in IMPORT mode")
        def plan() -> tuple[list[tuple[Key, Value | None]], SchemaValue]:
            versions = self._visible_versions(subject, deleted=True)
            for value in reversed(versions):
                if (not value.deleted and value.schema_type == request.schema.schema_type
                        and value.schema == text and value.references == request.schema.references
                        and request.schema_id in (None, value.id)):
                    # Confluent looks the schema up before any mode check, so clients
                    # that re-register on start-up work against a read-only registry.
                    return [], value
            if mode in (Mode.READONLY, Mode.READONLY_OVERRIDE):
                raise errors.OperationNotPermitted(f"Subject {subject} is in read-only mode")
            if mode is Mode.IMPORT and request.schema_id is None:
                # As Confluent: IMPORT takes schemas with their ids; fresh ids need READWRITE.
                raise errors.OperationNotPermitted(f"Subject {subject} is not in read-write mode")
            if mode is Mode.IMPORT:
                value = self._import_value(subject, request, text, versions)
            else:
                value = self._new_value(subject, request, parsed, text, versions)
            return [(SchemaKey(subject, value.version), value)], value

        return self._write(plan)

    def _new_value(self, subject: str, request: RegisterRequest, parsed: ParsedSchema, text: str,
                   versions: list[SchemaValue]) -> SchemaValue:
        live = [v for v in versions if not v.deleted]
        problems = incompatibilities(self.compatibility_for(subject), parsed,
                                     [self._previous(v) for v in live])
        if problems:
            raise errors.IncompatibleSchema(
                "Schema being registered is incompatible with an earlier schema for subject "
                f"\"{subject}\", details: [{', '.join(problems)}]")
        new = request.schema
        schema_id = request.schema_id or self._id_for(new.schema_type, text, new.references)
        next_version = (versions[-1].version + 1) if versions else 1
        return SchemaValue(subject, next_version, schema_id, text, new.schema_type, new.references)

    def _import_value(self, subject: str, request: RegisterRequest, text: str,
                      versions: list[SchemaValue]) -> SchemaValue:
        new = request.schema
        if request.schema_id is None:
            schema_id = self._id_for(new.schema_type, text, new.references)
        else:
            schema_id = request.schema_id
            existing = self._cache.schema_by_id(schema_id)
            if existing is not None and (existing.schema_type, existing.schema, existing.references) != (
                    new.schema_type, text, new.references):
                raise errors.OperationNotPermitted(
                    f"Overwrite new schema with id {schema_id} is not permitted.")
        version = request.version if request.version is not None else (
            (versions[-1].version + 1) if versions else 1)
        taken = self._cache.version(subject, version)
        if taken is not None and not taken.deleted:
            raise errors.OperationNotPermitted(
                f"Version {version} of subject {subject} already exists with schema id {taken.id}")
        return SchemaValue(subject, version, schema_id, text, new.schema_type, new.references)

    def _id_for(self, schema_type: str, text: str, references: tuple[SchemaReference, ...]) -> int:
        """The id this content already has, or a fresh one above every id in the log."""
        existing = self._cache.id_by_content(schema_type, text, references)
        if existing is not None:
            return existing
        if self._cache.max_id >= MAX_INT32:
            raise errors.StoreError("No schema ids left")
        return self._cache.max_id + 1

    def delete_version(self, subject: str, version: str, permanent: bool = False) -> int:
        number = parse_version(version)
        self._require_writable(subject)

        def plan() -> tuple[list[tuple[Key, Value | None]], int]:
            target = self.version(subject, version, deleted=True) if number != -1 else self._latest_any(subject)
            dependants = self._cache.referenced_by(subject, target.version)
            if dependants:
                raise errors.ReferenceExists(
                    f"One or more references exist to the schema {{subject={subject}, version={target.version}}}")
            key = SchemaKey(subject, target.version)
            if permanent:
                if not target.deleted:
                    raise errors.VersionNotSoftDeleted(
                        f"Subject '{subject}' Version {target.version} was not deleted first before "
                        "being permanently deleted")
                return [(key, None), self._id_watermark()], target.version
            if target.deleted:
                raise errors.VersionSoftDeleted(
                    f"Subject '{subject}' Version {target.version} was soft deleted. "
                    "Set permanent=true to delete permanently")
            return [(key, replace(target, deleted=True))], target.version

        return self._write(plan)

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        self._require_writable(subject)

        def plan() -> tuple[list[tuple[Key, Value | None]], list[int]]:
            versions = self._visible_versions(subject, deleted=True)
            if not versions:
                raise errors.SubjectNotFound(f"Subject '{subject}' not found.")
            for value in versions:
                if self._cache.referenced_by(subject, value.version):
                    raise errors.ReferenceExists(
                        f"One or more references exist to the schema "
                        f"{{subject={subject}, version={value.version}}}")
            live = [v for v in versions if not v.deleted]
            if permanent:
                if live:
                    raise errors.SubjectNotSoftDeleted(
                        f"Subject '{subject}' was not deleted first before being permanently deleted")
                records: list[tuple[Key, Value | None]] = [
                    (SchemaKey(subject, v.version), None) for v in versions]
                if self._cache.config(subject) is not None:
                    records.append((ConfigKey(subject), None))
                if self._cache.mode(subject) is not None:
                    records.append((ModeKey(subject), None))
                records.append(self._id_watermark())
                return records, [v.version for v in versions]
            if not live:
                raise errors.SubjectSoftDeleted(
                    f"Subject '{subject}' was soft deleted. Set permanent=true to delete permanently")
            return ([(DeleteSubjectKey(subject), DeleteSubjectValue(subject, live[-1].version))],
                    [v.version for v in live])

        return self._write(plan)

    # ---- internals ---------------------------------------------------------------

    def _visible_versions(self, subject: str, deleted: bool) -> list[SchemaValue]:
        return [v for v in self._cache.versions(subject) if deleted or not v.deleted]

    def _latest_any(self, subject: str) -> SchemaValue:
        versions = self._visible_versions(subject, deleted=False)
        if not versions:
            if self._visible_versions(subject, deleted=True):
                raise errors.VersionNotFound(f"Version latest not found for subject '{subject}'.")
            raise errors.SubjectNotFound(f"Subject '{subject}' not found.")
        return versions[-1]

    def _require_writable(self, subject: str) -> None:
        if self.mode_for(subject) in (Mode.READONLY, Mode.READONLY_OVERRIDE):
            raise errors.OperationNotPermitted(f"Subject {subject} is in read-only mode")

    def _parse(self, new: NewSchema) -> ParsedSchema:
        schema_type = self._types.get(new.schema_type)
        if schema_type is None:
            raise errors.InvalidSchema(f"Invalid schema type {new.schema_type}")
        try:
            return schema_type.parse(new.schema, self._resolve_references(new.references))
        except InvalidSchema as exc:
            raise errors.InvalidSchema(f"Invalid schema: {exc}") from None

    def _resolve_references(self, references: Iterable[SchemaReference]) -> dict[str, str]:
        """Reference name -> schema text, dependencies first, following references of references."""
        resolved: dict[str, str] = {}

        def visit(ref: SchemaReference, depth: int) -> None:
            if depth > 32:
                raise errors.InvalidSchema("Invalid schema: references nest too deeply or form a cycle")
            target = self._cache.version(ref.subject, ref.version)
            if target is None:
                raise errors.InvalidSchema(
                    f"Invalid schema: reference {ref.name} names subject '{ref.subject}' "
                    f"version {ref.version}, which does not exist")
            for inner in target.references:
                visit(inner, depth + 1)
            resolved.setdefault(ref.name, target.schema)

        for ref in references:
            visit(ref, 0)
        return resolved

    def _previous(self, value: SchemaValue) -> PreviousVersion:
        with self._parsed_lock:
            parsed = self._parsed.get(value.id)
            if parsed is not None:
                self._parsed.move_to_end(value.id)
        if parsed is None:
            parsed = self._parse(NewSchema(value.schema, value.schema_type, value.references))
            with self._parsed_lock:
                self._parsed[value.id] = parsed
                if len(self._parsed) > 10_000:
                    self._parsed.popitem(last=False)
        return PreviousVersion(value.version, parsed)

    def _write_records(self, records: list[tuple[Key, Value | None]]) -> None:
        self._write(lambda: (records, None))

    def append_fence(self, fence: FenceValue) -> None:
        """Append a leader fence at the log's end, as a newly elected leader's first act.

        Validated against the caught-up log like any write (retried if someone else
        appends first), but not subject to `may_write`: it is what grants permission.
        Blocks until applied. Raises StoreError or StoreTimeout.
        """
        self._known_end = None  # a new term: ask the log where it ends
        self._write(lambda: ([(NoopKey(), fence)], None), check_writer=False)

    def latest_fence(self) -> FenceValue | None:
        return self._cache.fence

    def _id_watermark(self) -> tuple[Key, Value]:
        """The latest fence again, now carrying the highest id ever assigned.

        Appended with every hard delete: once Kafka compacts the deleted schema's
        records away, this is what keeps its id from being handed out again.
        """
        fence = self._cache.fence or FenceValue("")
        return NoopKey(), FenceValue(fence.token, fence.leader, max(fence.max_id, self._cache.max_id))

    def repair_misplaced(self) -> int:
        """Re-state every key whose newest record in the log is one readers dropped.

        A record that landed out of place (a deposed leader's late append) has no effect,
        but it is its key's newest record: once Kafka compacts the topic it would be the
        only one left, and the valid value before it would be lost on replay. Appending
        the current value again under the same key bytes makes the valid record newest.
        Leader only: on a follower this does nothing. Returns how many keys it re-stated.
        """
        def plan() -> tuple[list[Restated], int]:
            restated = []
            for raw_key in list(self._reader.misplaced_latest):
                try:
                    key = decode_key(raw_key)
                except RecordFormatError:
                    continue
                restated.append(Restated(raw_key, self._cache.current_value(key)))
            return restated, len(restated)

        if not self._reader.misplaced_latest or self._repairing:
            return 0
        self._repairing = True
        try:
            repaired = self._write(plan)
        except errors.NotLeader:
            return 0
        finally:
            self._repairing = False
        if repaired:
            log.info("re-stated %d keys whose newest record had been dropped", repaired)
        return repaired

    def _write(self, plan: Callable[[], tuple[list[tuple[Key, Value | None]], T]],
               check_writer: bool = True) -> T:
        """Run `plan` against a cache caught up with the log, append what it returns, and
        return its result once this node has applied the records.

        The append is conditional on the log's end not having moved since we caught up;
        if another writer got in first (LogConflict), we catch up and plan again, so
        every write is validated against the state it is appended to.
        """
        for _ in range(_WRITE_ATTEMPTS):
            with self._write_lock:
                end = self._catch_up()
                records, result = plan()
                if not records:
                    return result
                if check_writer:
                    self._may_write()  # raises NotLeader on a follower: forward instead
                self._known_end = None  # unknown until the append says where it landed
                try:
                    last = self._append(records, end)
                except LogConflict:
                    continue
                self._known_end = last + 1
                self.accepted_appends += len(records)
            if not self._reader.wait_until(last + 1, self._timeout):
                raise errors.StoreTimeout("Timed out waiting for the write to be applied")
            if self._reader.misplaced_latest:
                self.repair_misplaced()
            return result
        raise errors.StoreTimeout("Gave up writing: other writers kept appending first")

    def _catch_up(self) -> int:
        """Apply the log up to its end; return that end offset.

        Right after our own append we know where the log ends without asking it (a
        broker round trip with Kafka). Should someone else have appended since, the
        next conditional append fails with LogConflict and we ask again.
        """
        try:
            end = self._known_end if self._known_end is not None else self._log.end_offset()
            caught_up = self._reader.wait_until(end, self._timeout)
        except LogUnavailable as exc:
            raise errors.StoreError(f"The schema log is unavailable: {exc}") from None
        if not caught_up:
            raise errors.StoreTimeout("Timed out reading the schema log to its end")
        return end

    def _append(self, records: list[tuple[Key, Value | None] | Restated], expected: int) -> int:
        """Append `records` at offsets `expected`, `expected + 1`, ...; return the last offset."""
        offset = expected - 1
        try:
            for item in records:
                if isinstance(item, Restated):
                    raw_value, forms = encode_value(item.value), [item.raw_key]
                else:
                    key, value = item
                    raw_value = encode_value(value)
                    # Reuse every byte form the log holds for this key, so compaction
                    # replaces (or a tombstone removes) exactly what is there.
                    forms = self._cache.key_bytes(key) or [encode_key(key)]
                    if raw_value is not None:
                        forms = forms[-1:]
                for raw_key in forms:
                    offset = self._log.append(raw_key, raw_value, expected_offset=offset + 1)
        except LogFenced as exc:
            raise errors.UnknownLeader(f"This node is no longer the leader: {exc}") from None
        except LogUnavailable as exc:
            raise errors.StoreError(f"The schema log did not accept the write: {exc}") from None
        return offset


@dataclass(frozen=True)
class Restated:
    """A record re-stating `key`'s current value under exactly the bytes `raw_key`."""

    raw_key: bytes
    value: Value | None


_WRITE_ATTEMPTS = 20
T = TypeVar("T")


def parse_version(version: str) -> int:
    """A path version: a number in 1..2^31-1, or "latest"/"-1" (returned as -1)."""
    if version == "latest":
        return -1
    try:
        number = int(version)
    except (TypeError, ValueError):
        number = 0
    if number == -1 or 1 <= number <= MAX_INT32:
        return number
    raise errors.InvalidVersion(
        f"The specified version '{version}' is not a valid version id. Allowed values are between "
        "[1, 2^31-1] and the string \"latest\"")


def _text(parsed: ParsedSchema, normalize: bool) -> str:
    return parsed.normalized() if normalize else parsed.canonical()


def _level(name: str) -> CompatibilityLevel:
    try:
        return CompatibilityLevel(name.upper())
    except ValueError:
        return CompatibilityLevel.BACKWARD  # an unknown level in a foreign log; Confluent's default


def _parse_level(name: object) -> CompatibilityLevel:
    try:
        return CompatibilityLevel(str(name).upper())
    except ValueError:
        raise errors.InvalidCompatibilityLevel(
            f"Invalid compatibility level. Valid values are none, backward, forward, full, "
            "backward_transitive, forward_transitive, and full_transitive") from None


def _parse_mode(name: object) -> Mode:
    try:
        return Mode(str(name).upper())
    except ValueError:
        raise errors.InvalidMode(
            "Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE and IMPORT") from None
