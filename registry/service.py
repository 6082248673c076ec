"""The registry's domain rules: the only place they live.

Reads come from the cache. A write validates the request, then plans its records
against a cache caught up with the log and hands them to `store.writer.LogWriter`,
which appends them and returns once this node has applied them (read-your-writes).
Nothing is planned for a request that fails validation (DESIGN invariant 6).
"""
from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, replace

from registry import errors
from registry.compatibility import CompatibilityLevel, PreviousVersion, incompatibilities
from registry.modes import Mode
from registry.schema_types import SCHEMA_TYPES, InvalidSchema, ParsedSchema, SchemaType
from store.cache import Cache, StoredSchema
from store.records import (
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    Key,
    ModeKey,
    ModeValue,
    SchemaKey,
    SchemaReference,
    SchemaValue,
    Value,
)
from store.writer import LogWriter

log = logging.getLogger(__name__)

MAX_INT32 = 2**31 - 1
_REPLANS = 20
_MAX_REFERENCE_DEPTH = 32

_Basis = tuple[CompatibilityLevel, tuple[SchemaValue, ...]]


class _Replan(Exception):
    """Raised in a plan whose compatibility check no longer matches the subject."""


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
    """Schemas, subjects, versions, config and mode: Confluent's rules over one cache.

    Reads come from the cache. Writes plan records against a cache caught up with the
    log and hand them to the writer (`store.writer.LogWriter`), which appends them and
    returns once they are applied; the service never talks to a log itself. Raises
    `registry.errors` for what breaks a rule, and lets the writer's store exceptions
    (`NotWriter`, `StoreTimeout`, `LogUnavailable`) through.
    """

    def __init__(self, cache: Cache, writer: LogWriter, *,
                 default_compatibility: CompatibilityLevel = CompatibilityLevel.BACKWARD,
                 default_mode: Mode = Mode.READWRITE,
                 schema_types: dict[str, SchemaType] | None = None) -> None:
        self._cache = cache
        self._writer = writer
        self._default_compatibility = default_compatibility
        self._default_mode = default_mode
        self._types = schema_types if schema_types is not None else SCHEMA_TYPES
        self._parsed: OrderedDict[int, ParsedSchema] = OrderedDict()
        self._parsed_lock = threading.Lock()

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
        if subject is not None:
            check_subject(subject)
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
        if subject is not None:
            check_subject(subject)
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

    def with_resolved_references(self, new: NewSchema) -> NewSchema:
        """`new` with every reference to version -1 ("latest") resolved to the version it
        names now, as it is stored. Raises SubjectNotFound/VersionNotFound."""
        if not any(r.version == -1 for r in new.references):
            return new
        refs = tuple(SchemaReference(r.name, r.subject, self.version(r.subject, "latest").version)
                     if r.version == -1 else r for r in new.references)
        return NewSchema(new.schema, new.schema_type, refs)

    # ---- compatibility -----------------------------------------------------------

    def check_compatibility(self, subject: str, version: str | None, new: NewSchema,
                            normalize: bool = False) -> list[str]:
        """Reasons `new` is incompatible with `version` (None: every version the level needs)."""
        parsed = self._parse(new)
        level = self.compatibility_for(subject)
        live = self._visible_versions(subject, deleted=False)
        if version is None:
            return self._problems(parsed, self._compatibility_basis(subject))
        if parse_version(version) == -1 and not live:
            return []
        target = self.version(subject, version)
        return incompatibilities(level, parsed, [self._previous(target)], all_versions=True)

    # ---- writes ------------------------------------------------------------------

    def register(self, subject: str, request: RegisterRequest) -> SchemaValue:
        """Register `request.schema` under `subject`; returns the (possibly existing) version.

        Parsing and the compatibility check run before the write lock is taken, against
        the subject's versions as they are then; under the lock the plan only checks that
        those are still the versions (and the level) it was checked against, and if not,
        the check runs again outside the lock. Raises registry errors, and the writer's.
        """
        check_subject(subject)
        parsed = self._parse(request.schema)
        text = _storable(_text(parsed, request.normalize))
        new = request.schema
        for _ in range(_REPLANS):
            mode = self.mode_for(subject)
            if request.schema_id is not None and mode is not Mode.IMPORT:
                # Outside IMPORT an id may only name the content it already has.
                existing = self._cache.schema_by_id(request.schema_id)
                if existing is None or (existing.schema_type, existing.schema, existing.references) != (
                        new.schema_type, text, new.references):
                    raise errors.OperationNotPermitted(
                        f"Subject {subject} is not in import mode; an id can only be given in IMPORT mode")
            checked = self._compatibility_basis(subject)
            problems = [] if mode is Mode.IMPORT else self._problems(parsed, checked)
            try:
                return self._writer.write(lambda: self._plan_registration(
                    subject, request, text, checked, problems))
            except _Replan:
                continue
        raise errors.StoreTimeout("Gave up registering: the subject kept changing under the check")

    def _plan_registration(self, subject: str, request: RegisterRequest, text: str,
                           checked: _Basis, problems: list[str]
                           ) -> tuple[list[tuple[Key, Value | None]], SchemaValue]:
        """Under the write lock: the records registering `text`, given that `problems`
        were found against `checked`. Cheap: no parsing, no compatibility check."""
        new = request.schema
        versions = self._visible_versions(subject, deleted=True)
        for value in reversed(versions):
            if (not value.deleted and value.schema_type == new.schema_type
                    and value.schema == text and value.references == new.references
                    and request.schema_id in (None, value.id)):
                # Confluent looks the schema up before any mode check, so clients
                # that re-register on start-up work against a read-only registry.
                return [], value
        mode = self.mode_for(subject)
        if mode in (Mode.READONLY, Mode.READONLY_OVERRIDE):
            raise errors.OperationNotPermitted(f"Subject {subject} is in read-only mode")
        if mode is Mode.IMPORT:
            if request.schema_id is None:
                # As Confluent: IMPORT takes schemas with their ids; fresh ids need READWRITE.
                raise errors.OperationNotPermitted(f"Subject {subject} is not in read-write mode")
            value = self._import_value(subject, request, text, versions)
            return [(SchemaKey(subject, value.version), value)], value
        if self._compatibility_basis(subject) != checked:
            raise _Replan()  # a version or the level changed since the check: check again
        if problems:
            raise errors.IncompatibleSchema(
                "Schema being registered is incompatible with an earlier schema for subject "
                f"\"{subject}\", details: [{', '.join(problems)}]")
        schema_id = request.schema_id or self._id_for(new.schema_type, text, new.references)
        next_version = (versions[-1].version + 1) if versions else 1
        if next_version > MAX_INT32:
            raise errors.OperationNotPermitted(
                f"Subject {subject} has no versions left: version {versions[-1].version} is the highest "
                "a subject can have")
        value = SchemaValue(subject, next_version, schema_id, text, new.schema_type, new.references)
        return [(SchemaKey(subject, value.version), value)], value

    def _compatibility_basis(self, subject: str) -> _Basis:
        """What a compatibility check of `subject` depends on: its level and the versions
        the level compares with. Cheap: no parsing."""
        level = self.compatibility_for(subject)
        live = self._visible_versions(subject, deleted=False)
        if level is CompatibilityLevel.NONE:
            return level, ()
        against = live if level.transitive else live[-1:]
        return level, tuple(against)

    def _problems(self, parsed: ParsedSchema, basis: _Basis) -> list[str]:
        level, against = basis
        return incompatibilities(level, parsed, [self._previous(v) for v in against])

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
        if self._cache.max_id < MAX_INT32:
            return self._cache.max_id + 1
        # The top id is taken (an IMPORT of id 2^31-1, say). Ids above the watermark that
        # the log does not hold were never used: take the lowest of them.
        free = self._cache.lowest_free_id_above(self._writer.watermark(), MAX_INT32)
        if free is None:
            raise errors.OperationNotPermitted(
                f"No schema ids left: every id up to {MAX_INT32} is in use or was used before")
        return free

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
                return [(key, None), self._writer.id_watermark([target.id])], target.version
            if target.deleted:
                raise errors.VersionSoftDeleted(
                    f"Subject '{subject}' Version {target.version} was soft deleted. "
                    "Set permanent=true to delete permanently")
            return [(key, replace(target, deleted=True))], target.version

        return self._writer.write(plan)

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
                records.append(self._writer.id_watermark(v.id for v in versions))
                return records, [v.version for v in versions]
            if not live:
                raise errors.SubjectSoftDeleted(
                    f"Subject '{subject}' was soft deleted. Set permanent=true to delete permanently")
            return ([(DeleteSubjectKey(subject), DeleteSubjectValue(subject, live[-1].version))],
                    [v.version for v in live])

        return self._writer.write(plan)

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
        """Reference name -> schema text, dependencies first, following references of references.

        Each (subject, version) is visited once, however many schemas reach it: a fan-out
        of references costs what the distinct referenced versions and their edges cost,
        never the number of paths through them.
        """
        resolved: dict[str, str] = {}
        visited: set[tuple[str, int]] = set()

        def visit(ref: SchemaReference, depth: int) -> None:
            if depth > _MAX_REFERENCE_DEPTH:
                raise errors.InvalidSchema("Invalid schema: references nest too deeply or form a cycle")
            target = self._cache.version(ref.subject, ref.version)
            if target is None:
                raise errors.InvalidSchema(
                    f"Invalid schema: reference {ref.name} names subject '{ref.subject}' "
                    f"version {ref.version}, which does not exist")
            key = (ref.subject, ref.version)
            if key not in visited:
                visited.add(key)
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
        self._writer.write(lambda: (records, None))


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


# Reserved by Confluent: the global and the empty subject in its own records.
_RESERVED_SUBJECTS = frozenset({"__GLOBAL", "__EMPTY"})


def check_subject(subject: str) -> None:
    """Refuse a subject Confluent refuses (42208): one holding a control character
    (U+0000-U+001F, U+007F-U+009F, as Java's `isISOControl`) or a reserved name."""
    if subject in _RESERVED_SUBJECTS or _ISO_CONTROL.search(subject) is not None:
        raise errors.InvalidSubject(f"The specified subject '{subject}' is not a valid.")


_ISO_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _storable(text: str) -> str:
    """`text`, if it can be stored as UTF-8 (no lone surrogates); else InvalidSchema."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise errors.InvalidSchema("Invalid schema: it holds a lone surrogate, which is not text") from None
    return text
