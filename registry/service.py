"""The registry's domain rules: the only place they live.

Reads come from the cache. A write validates the request, then plans its records
against a cache caught up with the log and hands them to `store.writer.LogWriter`,
which appends them and returns once this node has applied them (read-your-writes).
Nothing is planned for a request that fails validation (DESIGN invariant 6).
"""
from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from registry import errors
from registry.compatibility import CompatibilityLevel, PreviousVersion, incompatibilities
from registry.modes import Mode
from registry.parse_memo import ParseMemo
from registry.schema_types import SCHEMA_TYPES, CheckTooCostly, InvalidSchema, ParsedSchema, SchemaType
from registry.schema_types.avro_tags import TagPathError, with_tags
from store.cache import Cache, StoredSchema, content_key, qualify_reference
from store.contracts import (
    CONFLUENT_VERSION,
    Metadata,
    RuleSet,
    md5_of_guid,
    merge_metadata,
    merge_rule_sets,
)
from store.records import (
    DEFAULT_CONTEXT,
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    Key,
    ModeKey,
    ModeValue,
    ContextKey,
    ContextValue,
    SchemaKey,
    SchemaReference,
    SchemaValue,
    Value,
    context_of,
)
from registry.subjects import (
    check_subject,
    context_subject,
    normalize_context,
    normalize_subject,
    qualified_context,
    subject_name,
)
from store.ids import IdsExhausted
from store.writer import LogWriter, PendingWrites, PlanAlone

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
    schema: NewSchema | None  # None: the text, type and references of the latest version
    normalize: bool = False
    schema_id: int | None = None  # IMPORT mode only
    version: int | None = None  # IMPORT mode only
    metadata: Metadata | None = None
    rule_set: RuleSet | None = None


@dataclass(frozen=True)
class TagRequest:
    """Confluent's TagSchemaRequest: tags per (path, entity type) to add and to remove."""

    tags_to_add: dict[tuple[str, str], list[str]]
    tags_to_remove: dict[tuple[str, str], list[str]]
    new_version: int | None = None
    metadata: Metadata | None = None
    rule_set: RuleSet | None = None
    rules_to_merge: RuleSet | None = None
    rules_to_remove: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConfigUpdate:
    """What a `PUT /config` body sets; None leaves a field as it is (Confluent's
    ConfigValue.update). `clear` names the contract fields the body set to null."""

    compatibility_level: str | None = None
    normalize: bool | None = None
    compatibility_group: str | None = None
    default_metadata: Metadata | None = None
    override_metadata: Metadata | None = None
    default_rule_set: RuleSet | None = None
    override_rule_set: RuleSet | None = None
    clear: frozenset[str] = frozenset()


@dataclass(frozen=True)
class SettingChange:
    """One entry of `import_settings`: a config update or a mode name for a subject
    (None: the global one)."""

    subject: str | None
    change: ConfigUpdate | str


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
        """The subject's level, else its context's, else the global one."""
        level = self.subject_compatibility(subject)
        if level is None and subject[:2] == ":.":
            level = self.subject_compatibility(context_subject(subject))
        return level or self.global_compatibility()

    def config(self, subject: str | None) -> ConfigValue | None:
        """The config record stored for `subject` (None: the global one), as it is."""
        return self._cache.config(subject)

    def config_in_scope(self, subject: str | None) -> ConfigValue:
        """The config that applies to `subject`: its own, else its context's, else the
        global one, with the compatibility level resolved the same way."""
        level = self.compatibility_for(subject) if subject is not None else self.global_compatibility()
        return replace(self._config_record(subject), compatibility_level=level.value, subject=subject)

    def _config_record(self, subject: str | None) -> ConfigValue:
        """The config record that applies to `subject` as stored (its own, else its
        context's, else the global one; an empty one if none): what a registration reads
        its contracts and compatibility group from, without `config_in_scope`'s resolved
        copy (a dataclass replace, four per registration)."""
        found = self._cache.config(subject) if subject is not None else None
        if found is None and subject is not None and subject[:2] == ":.":
            found = self._cache.config(context_subject(subject))
        if found is None:
            found = self._cache.config(None)
        return found or _NO_CONFIG

    def set_compatibility(self, subject: str | None, level: str) -> CompatibilityLevel:
        value = self.set_config(subject, ConfigUpdate(compatibility_level=level))
        return _level(value.compatibility_level or "")

    def set_config(self, subject: str | None, update: ConfigUpdate) -> ConfigValue:
        """Merge `update` into the stored config, as Confluent's ConfigValue.update does."""
        level = self._config_target(subject, update)

        def plan() -> tuple[list[tuple[Key, Value | None]], ConfigValue]:
            value = _merged_config(self._cache.config(subject) or ConfigValue(None, subject), subject, update, level)
            return [(ConfigKey(subject), value)], value

        return self._writer.write(plan)

    def _config_target(self, subject: str | None, update: ConfigUpdate) -> str | None:
        """Check a config write's subject and level; the level's stored name (None: unchanged)."""
        if subject is not None:
            check_subject(subject, config_or_mode=True)
        return _parse_level(update.compatibility_level).value if update.compatibility_level is not None else None

    def import_settings(self, entries: list[SettingChange | errors.RegistryError]
                        ) -> list[ConfigValue | Mode | errors.RegistryError]:
        """Config and mode writes appended together (one SQLite transaction, one produce),
        for `schema-registry import`, where one `PUT` each would take a round of the
        write protocol each. Each entry is taken as `set_config` or `set_mode` (without
        force) takes it and succeeds or fails alone; they apply in order, a config
        merging into the one an earlier entry set. The result list holds, in the
        entries' order, the config or mode set or the error refusing it. Raises only the
        writer's errors, and then nothing of the batch was written."""
        prepared: list[tuple[SettingChange, str | None] | errors.RegistryError] = []
        for entry in entries:
            try:
                if isinstance(entry, errors.RegistryError):
                    raise entry
                if isinstance(entry.change, ConfigUpdate):
                    prepared.append((entry, self._config_target(entry.subject, entry.change)))
                else:
                    if entry.subject is not None:
                        check_subject(entry.subject)
                    prepared.append((entry, _parse_mode(entry.change).value))
            except errors.RegistryError as exc:
                prepared.append(exc)

        def plan() -> tuple[list[tuple[Key, Value | None]], list[ConfigValue | Mode | errors.RegistryError]]:
            records: list[tuple[Key, Value | None]] = []
            results: list[ConfigValue | Mode | errors.RegistryError] = []
            configs: dict[str | None, ConfigValue] = {}  # set by earlier entries
            for item in prepared:
                if isinstance(item, errors.RegistryError):
                    results.append(item)
                    continue
                entry, name = item
                subject = entry.subject
                if isinstance(entry.change, ConfigUpdate):
                    old = configs.get(subject) or self._cache.config(subject) or ConfigValue(None, subject)
                    value = configs[subject] = _merged_config(old, subject, entry.change, name)
                    records.append((ConfigKey(subject), value))
                    results.append(value)
                    continue
                mode = Mode(name)
                try:
                    self._check_import_mode_allowed(subject, mode, force=False)
                except errors.RegistryError as exc:
                    results.append(exc)
                    continue
                records.append((ModeKey(subject), ModeValue(mode.value, subject)))
                results.append(mode)
            return records, results

        return self._writer.write(plan)

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
        """The subject's mode, else its context's, else the global one (READONLY_OVERRIDE
        globally wins over all)."""
        glob = self.global_mode()
        if glob is Mode.READONLY_OVERRIDE:
            return glob
        mode = self.subject_mode(subject)
        if mode is None and subject[:2] == ":.":
            mode = self.subject_mode(context_subject(subject))
        return mode or glob

    def set_mode(self, subject: str | None, mode: str, force: bool = False) -> Mode:
        if subject is not None:
            check_subject(subject)
        parsed = _parse_mode(mode)
        self._check_import_mode_allowed(subject, parsed, force)
        self._write_records([(ModeKey(subject), ModeValue(parsed.value, subject))])
        return parsed

    def _check_import_mode_allowed(self, subject: str | None, mode: Mode, force: bool) -> None:
        """Raise OperationNotPermitted for IMPORT, unforced, where schemas exist already."""
        if mode is Mode.IMPORT and not force:
            has_schemas = (bool(self._visible_versions(subject, deleted=True)) if subject is not None
                           else bool(self._cache.subjects()))
            if has_schemas:
                where = f"subject '{subject}'" if subject is not None else "the registry"
                raise errors.OperationNotPermitted(
                    f"Cannot import since found existing subjects in {where}; "
                    "use force=true to switch to IMPORT anyway")

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
        """Subjects starting with `prefix`; `:*:name` matches `name` in every context."""
        found = []
        any_context = prefix.startswith(":*:")
        if any_context:
            prefix = prefix[3:]
        for subject in self._cache.subjects():
            if not (subject_name(subject) if any_context else subject).startswith(prefix):
                continue
            versions = self._cache.versions(subject)
            live = any(not v.deleted for v in versions)
            soft = any(v.deleted for v in versions)
            if deleted_only and soft and not live:
                found.append(subject)
            elif not deleted_only and (live or (deleted and soft)):
                found.append(subject)
        return sorted(found)

    def versions(self, subject: str, deleted: bool = False, deleted_only: bool = False) -> list[int]:
        """The subject's version numbers: live ones, with soft-deleted ones (`deleted`), or
        only soft-deleted ones (`deleted_only`, which wins, as in Confluent)."""
        versions = self._visible_versions(subject, deleted or deleted_only)
        if not versions:
            raise errors.SubjectNotFound(f"Subject '{subject}' not found.")
        return [v.version for v in versions if v.deleted or not deleted_only]

    def latest_with_metadata(self, subject: str, wanted: dict[str, str], deleted: bool = False) -> SchemaValue:
        """The newest version whose metadata properties include every pair of `wanted`
        (Confluent's getLatestWithMetadata). Raises SubjectNotFound or SchemaNotFound."""
        versions = self._visible_versions(subject, deleted)
        if not versions:
            raise errors.SubjectNotFound(f"Subject '{subject}' not found.")
        for value in reversed(versions):
            if value.metadata is not None and value.metadata.properties:
                props = dict(value.metadata.properties)
                if all(props.get(k) == v for k, v in wanted.items()):
                    return value
        raise errors.SchemaNotFound("Schema not found")

    # ---- embedded tags ------------------------------------------------------------

    def modify_tags(self, subject: str, version: str, request: TagRequest) -> SchemaValue:
        """A new version of `subject`: `version`'s schema with tags added and removed
        (`confluent:tags` in the text), its metadata (or the request's) and a rule set
        (the request's, or the previous version's with rules merged and removed), as
        Confluent's modifySchemaTags. Avro only. Raises SubjectNotFound, VersionNotFound,
        InvalidSchema (a path that names nothing), OperationNotPermitted (not Avro), and
        what registering raises."""
        base = self.version(subject, version)
        if base.schema_type != "AVRO":
            raise errors.OperationNotPermitted(
                f"Embedded tags are only supported for AVRO schemas here, not {base.schema_type}")
        try:
            text = with_tags(base.schema, request.tags_to_add, request.tags_to_remove)
        except TagPathError as exc:
            raise errors.InvalidSchema(str(exc)) from None
        rule_set = request.rule_set
        if request.rules_to_merge is not None or request.rules_to_remove:
            previous = (self._cache.version(subject, request.new_version - 1)
                        if request.new_version is not None else self._visible_versions(subject, False)[-1])
            rule_set = previous.rule_set if previous is not None else None
            if request.rules_to_merge is not None:
                rule_set = merge_rule_sets(rule_set, request.rules_to_merge)
            if rule_set is not None and request.rules_to_remove:
                gone = set(request.rules_to_remove)
                rule_set = RuleSet(*(tuple(r for r in rules if r.name not in gone) for rules in (
                    rule_set.migration_rules, rule_set.domain_rules, rule_set.encoding_rules)),
                    rule_set.enable_at)
        metadata = request.metadata if request.metadata is not None else base.metadata
        metadata = (metadata or Metadata()).with_property(CONFLUENT_VERSION, str(request.new_version or 0))
        return self.register(subject, RegisterRequest(
            NewSchema(text, base.schema_type, base.references), version=request.new_version,
            metadata=metadata, rule_set=rule_set))

    # ---- contexts ----------------------------------------------------------------

    def contexts(self, prefix: str = "") -> list[str]:
        """The contexts, the default one (".") first, as Confluent lists them."""
        return [c for c in self._cache.contexts() if c.startswith(prefix)]

    def delete_context(self, context_name: str) -> None:
        """Forget an empty context. Raises ContextNotEmpty while any subject, soft-deleted
        ones included, lives in it; an unknown context is deleted without complaint."""
        context = context_of(normalize_context(context_name))
        if context == DEFAULT_CONTEXT:
            raise errors.OperationNotPermitted("The default context cannot be deleted")

        def plan() -> tuple[list[tuple[Key, Value | None]], None]:
            if any(context_of(s) == context for s in self._cache.subjects()):
                raise errors.ContextNotEmpty(f"The specified context ':{context}:' is not empty.")
            keys = [k for k in self._cache.context_records() if k.context == context]
            return [(k, None) for k in keys], None

        self._writer.write(plan)

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

    def schema_by_id(self, schema_id: int, subject: str | None = None) -> tuple[StoredSchema, SchemaValue | None]:
        """The content `schema_id` names, and the version holding it that answers for it.

        As Confluent's `getSchemaKeyUsingContexts`: `subject` selects the context. A
        plain subject that does not hold the id falls through to a subject of the same
        name in another context, then to any holder of the id in the default context;
        a qualified one (`:.ctx:name`) must hold it. Raises SchemaNotFound
        ("Schema <id> not found").
        """
        found = self._version_holding(schema_id, normalize_subject(subject) if subject else None)
        if found is None:
            raise errors.SchemaNotFound(f"Schema {schema_id} not found")
        return found

    def _version_holding(self, schema_id: int, subject: str | None) -> tuple[StoredSchema, SchemaValue | None] | None:
        if subject is None:
            stored = self._cache.schema_by_id(schema_id)
            return (stored, None) if stored is not None else None
        context = context_of(subject)
        name = subject_name(subject)
        stored = self._cache.schema_by_id(schema_id, context)
        if stored is not None and name:
            for holder, version in self._cache.users_of(schema_id, context):
                if holder == subject:
                    return stored, self._cache.version(holder, version)
        if context != DEFAULT_CONTEXT or not name:
            if stored is None or name:
                return None
            return stored, None
        for other in self._cache.contexts():
            if other == DEFAULT_CONTEXT:
                continue
            qualified = f":{other}:{name}"
            in_context = self._cache.schema_by_id(schema_id, other)
            if in_context is None:
                continue
            for holder, version in self._cache.users_of(schema_id, other):
                if holder == qualified:
                    return in_context, self._cache.version(holder, version)
        if stored is None:
            return None
        # Any version holding the id answers for it (Confluent takes the first it finds).
        holders = self._cache.users_of(schema_id)
        return stored, self._cache.version(*holders[0]) if holders else None

    def schema_by_guid(self, guid: str) -> StoredSchema:
        """The content a guid names: the default context first, then the others in order."""
        md5 = md5_of_guid(guid)
        if md5 is not None:
            for context in self._cache.contexts():
                schema_id = self._cache.id_by_md5(context, md5)
                if schema_id is not None:
                    stored = self._cache.schema_by_id(schema_id, context)
                    if stored is not None:
                        return stored
        raise errors.SchemaNotFound(f"Schema {guid} not found")

    def ids_of_guid(self, guid: str) -> list[tuple[str, int]]:
        """(context, id) of every context's schema with the content `guid` names."""
        md5 = md5_of_guid(guid)
        found = []
        if md5 is not None:
            for context in self._cache.contexts():
                schema_id = self._cache.id_by_md5(context, md5)
                if schema_id is not None and self._cache.schema_by_id(schema_id, context) is not None:
                    found.append((context, schema_id))
        if not found:
            raise errors.SchemaNotFound(f"Schema {guid} not found")
        return found

    def subjects_answering(self, schema_id: int, subject: str | None = None) -> list[str]:
        """The subjects holding `schema_id` in the context a read of it with `?subject=`
        answers from (`schema_by_id`'s resolution), deleted versions included: what a
        read of the id is authorized on. Empty when no such read finds the id. Never raises."""
        try:
            found = self._version_holding(schema_id, normalize_subject(subject) if subject else None)
        except errors.RegistryError:
            return []
        if found is None:
            return []
        return [s for s, _ in self._cache.users_of(schema_id, found[0].context)]

    def cached_schema_in(self, value: SchemaValue) -> StoredSchema | None:
        """The content a version's id names in the version's context, or None."""
        return self._cache.schema_by_id(value.id, context_of(value.subject))

    def cached_schema(self, schema_id: int) -> StoredSchema | None:
        """The content `schema_id` names now, or None; never raises (the fast read path)."""
        return self._cache.schema_by_id(schema_id)

    def max_id(self, context: str = DEFAULT_CONTEXT) -> int:
        return self._cache.context_max_id(context)

    def subjects_of_id(self, schema_id: int, deleted: bool = False, subject: str | None = None) -> list[str]:
        return sorted({s for s, _ in self._id_versions(schema_id, deleted, subject)})

    def versions_of_id(self, schema_id: int, deleted: bool = False,
                       subject: str | None = None) -> list[tuple[str, int]]:
        return self._id_versions(schema_id, deleted, subject)

    def _id_versions(self, schema_id: int, deleted: bool, subject: str | None = None) -> list[tuple[str, int]]:
        context = context_of(normalize_subject(subject)) if subject else DEFAULT_CONTEXT
        if self._cache.schema_by_id(schema_id, context) is None:
            raise errors.SchemaNotFound(f"Schema {schema_id} not found")
        found = []
        for subject, number in self._cache.users_of(schema_id, context):
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
        parsed = self._parse(new, subject)
        candidates = [v for v in versions if deleted or not v.deleted]
        equivalent = self._equivalent_texts(new, parsed, normalize, candidates)
        for value in reversed(candidates):
            if value.schema in equivalent and value.schema_type == new.schema_type \
                    and value.references == new.references:
                return value
        raise errors.SchemaNotFound("Schema not found")

    def _equivalent_texts(self, new: NewSchema, parsed: ParsedSchema, normalize: bool,
                          versions: Iterable[SchemaValue]) -> frozenset[str]:
        """The texts among `versions` (of `new`'s type and references) that are `parsed`
        written another way: its canonical (or, asked to `normalize`, normalized) form,
        or any stored text that parses to the same one. A log written by another
        registry (Confluent, Karapace, a client's own JSON) holds texts as they were
        sent, so equal texts are not the only equal schemas, as Confluent compares
        parsed schemas. Parses stored versions (memoised, `_previous`) only when no
        text matches as it is: call it off the event loop and outside the write lock."""
        wanted = {parsed.canonical(), _text(parsed, normalize)}
        same_kind = [v for v in versions if v.schema_type == new.schema_type and v.references == new.references]
        exact = frozenset(v.schema for v in same_kind if v.schema in wanted)
        if exact:
            return exact | wanted
        found = set(wanted)
        for value in same_kind:
            try:
                stored = self._previous(value).schema
            except errors.RegistryError:
                continue  # a stored text this registry cannot parse equals nothing
            if stored.canonical() in wanted or (normalize and stored.normalized() in wanted):
                found.add(value.schema)
        return frozenset(found)

    def with_resolved_references(self, new: NewSchema) -> NewSchema:
        """`new` with every reference to version -1 ("latest") resolved to the version it
        names now, as it is stored. Raises SubjectNotFound/VersionNotFound."""
        if not new.references or not any(r.version == -1 for r in new.references):
            return new
        refs = tuple(SchemaReference(r.name, r.subject, self.version(r.subject, "latest").version)
                     if r.version == -1 else r for r in new.references)
        return NewSchema(new.schema, new.schema_type, refs)

    # ---- compatibility -----------------------------------------------------------

    def check_compatibility(self, subject: str, version: str | None, new: NewSchema,
                            normalize: bool = False) -> list[str]:
        """Reasons `new` is incompatible with `version` (None: every version the level needs).

        As Confluent's CompatibilityResource: a version that is not there (whether or
        not the subject is) is VersionNotFound; "latest" of nothing is compatible."""
        parsed = self._parse(new, subject)
        level = self.compatibility_for(subject)
        live = self._visible_versions(subject, deleted=False)
        if version is None:
            return self._problems(parsed, self._compatibility_basis(subject))
        number = parse_version(version)
        if number == -1 and not live:
            return []
        target = self._cache.version(subject, number) if number != -1 else live[-1]
        if target is None or target.deleted:
            raise errors.VersionNotFound(f"Version {number} not found.")
        return _checked(lambda: incompatibilities(level, parsed, [self._previous(target)], all_versions=True))

    # ---- writes ------------------------------------------------------------------

    def register(self, subject: str, request: RegisterRequest) -> SchemaValue:
        """Register `request.schema` under `subject`; returns the (possibly existing) version.

        Parsing and the compatibility check run before the write lock is taken, against
        the subject's versions as they are then; under the lock the plan only checks that
        those are still the versions (and the level) it was checked against, and if not,
        the check runs again outside the lock. The stored metadata and rule set are the
        request's (else the latest version's) merged between the config's defaults and
        overrides, as Confluent merges them. Raises registry errors, and the writer's.
        """
        request, parsed, text = self._prepare_registration(subject, request)
        for _ in range(_REPLANS):
            plan = self._checked_registration(subject, request, parsed, text)
            try:
                if self._group_commit:
                    return self._writer.write_grouped(plan)
                # One write at a time with `group.commit.enable=false`.
                return self._writer.write(lambda: plan(PendingWrites()))
            except _Replan:
                continue
        raise errors.StoreTimeout("Gave up registering: the subject kept changing under the check")

    async def register_async(self, subject: str, request: RegisterRequest) -> SchemaValue:
        """`register` for a caller on an event loop, which it never blocks: the parsing
        and the check run on a thread, the write in the writer's group commit
        (`LogWriter.write_grouped_async`), with no thread of the caller's waiting on it.
        Only with group commit on (`group.commit.enable`): otherwise the caller runs
        `register` on a thread of its own."""
        # Parsing and checking cost what the schema's shape costs, not what its text
        # weighs (a 1 KiB Protobuf schema can nest 12 fields 7 deep), and parsing may wait
        # for a free Protobuf compiler: never on the loop, whatever the size. One hand-off
        # to a thread for both; the loop only waits for the batch's append.
        loop = asyncio.get_running_loop()
        request, parsed, text, plan = await loop.run_in_executor(None, self._prepared_plan, subject, request)
        for _ in range(_REPLANS):
            try:
                return await self._writer.write_grouped_async(plan)
            except _Replan:
                plan = await loop.run_in_executor(None, self._checked_registration, subject, request, parsed,
                                                  text)
        raise errors.StoreTimeout("Gave up registering: the subject kept changing under the check")

    def _prepared_plan(self, subject: str, request: RegisterRequest) -> tuple[
            RegisterRequest, ParsedSchema, str,
            Callable[[PendingWrites], tuple[list[tuple[Key, Value | None]], SchemaValue]]]:
        """`_prepare_registration` and `_checked_registration` in one call (one thread hand-off)."""
        request, parsed, text = self._prepare_registration(subject, request)
        return request, parsed, text, self._checked_registration(subject, request, parsed, text)

    @property
    def group_commit(self) -> bool:
        """Whether registrations share appends (`group.commit.enable`)."""
        return self._group_commit

    def _prepare_registration(self, subject: str, request: RegisterRequest
                              ) -> tuple[RegisterRequest, ParsedSchema, str]:
        """The request (its schema taken from the latest version when it names none),
        its parsed schema and the text to store. Raises registry errors."""
        check_subject(subject)
        if request.schema is None:
            # Confluent: a registration without a schema (metadata or rules only) takes
            # the text, type and references of the latest version.
            latest = self._visible_versions(subject, deleted=False)
            if not latest:
                raise errors.InvalidSchema("Empty schema")
            request = replace(request, schema=NewSchema(latest[-1].schema, latest[-1].schema_type,
                                                        latest[-1].references))
            parsed = self._parse_stored(request.schema, subject)
        else:
            # A schema given with its id (IMPORT) is one that was stored elsewhere.
            parsed = self._parse(request.schema, subject, lenient=request.schema_id is not None)
        return request, parsed, _storable(_text(parsed, request.normalize))

    def _checked_registration(self, subject: str, request: RegisterRequest, parsed: ParsedSchema,
                              text: str) -> Callable[[PendingWrites], tuple[list[tuple[Key, Value | None]],
                                                                            SchemaValue]]:
        """The compatibility check against the subject's versions now, and the plan that
        writes the registration if they are still those under the write lock (else it
        raises `_Replan`, to check again). Raises registry errors."""
        mode, checked = self._registration_basis(subject, request, text)
        return self._checked_plan(subject, request, parsed, text, mode, checked)

    def _registration_basis(self, subject: str, request: RegisterRequest, text: str) -> tuple[Mode, _Basis]:
        """The subject's mode and what the registration's compatibility check compares
        with (cheap: no parsing). Raises registry errors."""
        assert request.schema is not None
        mode = self.mode_for(subject)
        if request.schema_id is not None and mode is not Mode.IMPORT:
            # Outside IMPORT an id may only name the content it already has.
            existing = self._cache.schema_by_id(request.schema_id, context_of(subject))
            if existing is None or (existing.schema_type, existing.schema, existing.references) != (
                    request.schema.schema_type, text, request.schema.references):
                raise errors.OperationNotPermitted(
                    f"Subject {subject} in context {qualified_context(subject)} is not in import mode")
        live = self._visible_versions(subject, deleted=False)
        versions_now = self._visible_versions(subject, deleted=True)
        metadata, _ = self._contracts(subject, request, live[-1] if live else None,
                                      (versions_now[-1].version + 1) if versions_now else 1)
        return mode, self._compatibility_basis(subject, metadata)

    def _checked_plan(self, subject: str, request: RegisterRequest, parsed: ParsedSchema, text: str, mode: Mode,
                      checked: _Basis) -> Callable[[PendingWrites], tuple[list[tuple[Key, Value | None]],
                                                                          SchemaValue]]:
        """`_checked_registration` once its basis is known: the check, and the plan."""
        problems = [] if mode is Mode.IMPORT else self._problems(parsed, checked)
        assert request.schema is not None
        equivalent = self._equivalent_texts(request.schema, parsed, request.normalize,
                                            self._visible_versions(subject, deleted=False))
        return lambda pending: self._plan_registration(subject, request, text, checked, problems, pending,
                                                       equivalent)

    def import_many(self, entries: list[tuple[str, RegisterRequest] | errors.RegistryError]
                    ) -> list[SchemaValue | errors.RegistryError]:
        """IMPORT registrations appended together: one plan and one append (one SQLite
        transaction, one produce) for all of them, where one `register` each would take
        a round of the write protocol each. Every entry names its subject, id and version
        and is taken as `register` takes it in IMPORT mode (its subject must be in IMPORT
        mode); entries are planned in order, each beside those before it (an id is never
        given to two contents). Each succeeds or fails alone: the result list holds, in
        the entries' order, the version registered or the error refusing it (an entry
        that already is an error stays one). Parsing runs before the write lock is taken.
        Raises only the writer's errors, and then nothing of the batch was written."""
        prepared: list[tuple[str, RegisterRequest, str] | errors.RegistryError] = []
        for entry in entries:
            if isinstance(entry, errors.RegistryError):
                prepared.append(entry)
                continue
            subject, request = entry
            try:
                check_subject(subject)
                if request.schema is None or request.schema_id is None or request.version is None:
                    raise errors.UnprocessableEntity("An imported schema needs its schema, id and version")
                parsed = self._parse(request.schema, subject, lenient=True)
                prepared.append((subject, request, _storable(_text(parsed, request.normalize))))
            except errors.RegistryError as exc:
                prepared.append(exc)

        def plan() -> tuple[list[tuple[Key, Value | None]], list[SchemaValue | errors.RegistryError]]:
            pending = PendingWrites()
            results: list[SchemaValue | errors.RegistryError] = []
            for item in prepared:
                if isinstance(item, errors.RegistryError):
                    results.append(item)
                    continue
                subject, request, text = item
                try:
                    if self.mode_for(subject) is not Mode.IMPORT:
                        raise errors.OperationNotPermitted(
                            f"Subject {subject} in context {qualified_context(subject)} is not in import mode")
                    planned, value = self._plan_registration(subject, request, text, (CompatibilityLevel.NONE, ()),
                                                             [], pending)
                except errors.RegistryError as exc:
                    results.append(exc)
                    continue
                pending.add(planned)
                results.append(value)
            return list(pending.records), results

        return self._writer.write(plan)

    def _contracts(self, subject: str, request: RegisterRequest, previous: SchemaValue | None,
                   new_version: int) -> tuple[Metadata | None, RuleSet | None]:
        """Confluent's maybeSetMetadataRuleSet: the request's metadata and rules (else the
        previous version's) between the config's defaults and overrides; `confluent:version`
        follows the version when the request names one or the metadata carries it."""
        config = self._config_record(subject)
        specific_md = request.metadata if request.metadata is not None else (
            previous.metadata if previous is not None else None)
        specific_rs = request.rule_set if request.rule_set is not None else (
            previous.rule_set if previous is not None else None)
        metadata = merge_metadata(merge_metadata(config.default_metadata, specific_md), config.override_metadata)
        rule_set = merge_rule_sets(merge_rule_sets(config.default_rule_set, specific_rs), config.override_rule_set)
        if request.version is not None or (metadata is not None and metadata.property(CONFLUENT_VERSION) is not None):
            metadata = (metadata or Metadata()).with_property(CONFLUENT_VERSION, str(new_version))
        return metadata, rule_set

    def _plan_registration(self, subject: str, request: RegisterRequest, text: str,
                           checked: _Basis, problems: list[str], pending: PendingWrites,
                           equivalent: frozenset[str] = frozenset()) -> tuple[list[tuple[Key, Value | None]],
                                                                               SchemaValue]:
        """Under the write lock: the records registering `text`, given that `problems`
        were found against `checked`, where a live version holding `text` or one of the
        `equivalent` texts (the same schema written another way) is the one registered
        already. Cheap: no parsing, no compatibility check.

        `pending` holds the registrations of other subjects planned before this one in
        the same append (group commit): they count for ids; one of this subject, or of
        a new context's first subject, collides on its key and is never pending here."""
        new = request.schema
        assert new is not None
        context = context_of(subject)
        versions = self._visible_versions(subject, deleted=True)
        live = [v for v in versions if not v.deleted]
        mode = self.mode_for(subject)
        next_version = (versions[-1].version + 1) if versions else 1
        if mode is Mode.IMPORT:
            metadata, rule_set = request.metadata, request.rule_set
        else:
            metadata, rule_set = self._contracts(subject, request, live[-1] if live else None, next_version)
        wanted_md = _without_version(metadata)
        for value in reversed(live):
            if (value.schema_type == new.schema_type and (value.schema == text or value.schema in equivalent)
                    and value.references == new.references and request.schema_id in (None, value.id)
                    and _without_version(value.metadata) == wanted_md and value.rule_set == rule_set
                    and request.version in (None, value.version)):
                # Confluent looks the schema up before any mode check, so clients
                # that re-register on start-up work against a read-only registry.
                return [], value
        if mode in (Mode.READONLY, Mode.READONLY_OVERRIDE):
            raise errors.OperationNotPermitted(
                f"Subject {subject} in context {qualified_context(subject)} is in read-only mode")
        records: list[tuple[Key, Value | None]] = []
        if context != DEFAULT_CONTEXT and not any(k.context == context for k in self._cache.context_records()):
            # As Confluent: the first subject of a context records the context.
            records.append((ContextKey(context), ContextValue(context)))
        if mode is Mode.IMPORT:
            if request.schema_id is None:
                # As Confluent: IMPORT takes schemas with their ids; fresh ids need READWRITE.
                raise errors.OperationNotPermitted(
                    f"Subject {subject} in context {qualified_context(subject)} is not in read-write mode")
            value = self._import_value(subject, request, text, versions, metadata, rule_set, pending)
            return records + [(SchemaKey(subject, value.version), value)], value
        if self._compatibility_basis(subject, metadata) != checked:
            raise _Replan()  # a version or the level changed since the check: check again
        if problems:
            raise errors.IncompatibleSchema(
                "Schema being registered is incompatible with an earlier schema for subject "
                f"\"{subject}\", details: [{', '.join(problems)}]")
        if request.version is not None and request.version != next_version:
            raise errors.InvalidSchema("Version is not one more than previous version")
        try:
            schema_id = request.schema_id or self._ids.id_for(
                content_key(context, new.schema_type, text, new.references, metadata, rule_set), pending)
        except IdsExhausted as exc:
            raise errors.OperationNotPermitted(str(exc)) from None
        if next_version > MAX_INT32:
            raise errors.OperationNotPermitted(
                f"Subject {subject} has no versions left: version {versions[-1].version} is the highest "
                "a subject can have")
        value = SchemaValue(subject, next_version, schema_id, text, new.schema_type, new.references,
                            metadata=metadata, rule_set=rule_set)
        return records + [(SchemaKey(subject, value.version), value)], value

    def _compatibility_basis(self, subject: str, metadata: Metadata | None = None) -> _Basis:
        """What a compatibility check of `subject` depends on: its level and the versions
        the level compares with. With a `compatibilityGroup` in the config, only versions
        whose metadata gives that property the same value as `metadata` (the new
        schema's) count, as Confluent's isCompatibleWithPrevious filters them. Cheap: no
        parsing."""
        level = self.compatibility_for(subject)
        live = self._visible_versions(subject, deleted=False)
        group = self._config_record(subject).compatibility_group
        if group:
            wanted = metadata.property(group) if metadata is not None else None
            live = [v for v in live if (v.metadata.property(group) if v.metadata is not None else None) == wanted]
        if level is CompatibilityLevel.NONE:
            return level, ()
        against = live if level.transitive else live[-1:]
        return level, tuple(against)

    def _problems(self, parsed: ParsedSchema, basis: _Basis) -> list[str]:
        level, against = basis
        return _checked(lambda: incompatibilities(level, parsed, [self._previous(v) for v in against]))

    def _import_value(self, subject: str, request: RegisterRequest, text: str, versions: list[SchemaValue],
                      metadata: Metadata | None, rule_set: RuleSet | None,
                      pending: PendingWrites | None = None) -> SchemaValue:
        """An IMPORT: the given id (its content must match what it names in the context,
        in the cache or among the `pending` registrations of the same append) at the
        given version, or the next one. A version that exists is overwritten, as
        Confluent's IMPORT overwrites it."""
        new = request.schema
        assert new is not None and request.schema_id is not None
        context = context_of(subject)
        schema_id = request.schema_id
        content = (new.schema_type, text, new.references, metadata, rule_set)
        named = [self._cache.schema_by_id(schema_id, context)]
        if pending:
            named.append(pending.schema_with_id(context, schema_id))
            if request.version is None and pending.has_subject(subject):
                # Its next version depends on that pending one: plan it after.
                raise PlanAlone("an IMPORT without a version after another of its subject")
        if any(existing is not None and (existing.schema_type, existing.schema, existing.references,
                                         existing.metadata, existing.rule_set) != content
               for existing in named):
            raise errors.OperationNotPermitted(
                f"Overwrite new schema with id {schema_id} in context {qualified_context(subject)} "
                "is not permitted.")
        version = request.version if request.version is not None else (
            (versions[-1].version + 1) if versions else 1)
        return SchemaValue(subject, version, schema_id, text, new.schema_type, new.references,
                           metadata=metadata, rule_set=rule_set)

    def delete_version(self, subject: str, version: str, permanent: bool = False) -> int:
        number = parse_version(version)
        self._require_writable(subject)

        def plan() -> tuple[list[tuple[Key, Value | None]], int]:
            target = self.version(subject, version, deleted=True) if number != -1 else self._latest_any(subject)
            dependants = self._cache.referenced_by(subject, target.version)
            if dependants:
                raise errors.ReferenceExists(_references_exist(subject, target.version))
            key = SchemaKey(subject, target.version)
            if permanent:
                if not target.deleted:
                    raise errors.VersionNotSoftDeleted(
                        f"Subject '{subject}' Version {target.version} was not deleted first before "
                        "being permanently deleted")
                return [(key, None), self._ids.release([target])], target.version
            if target.deleted:
                raise errors.VersionSoftDeleted(
                    f"Subject '{subject}' Version {target.version} was soft deleted."
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
                    raise errors.ReferenceExists(_references_exist(subject, value.version))
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
                records.append(self._ids.release(versions))
                return records, [v.version for v in versions]
            if not live:
                raise errors.SubjectSoftDeleted(
                    f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")
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

    def _parse(self, new: NewSchema, subject: str = "", *, lenient: bool = False) -> ParsedSchema:
        """Parse a schema a request gives. One that fails the checks for new schemas is
        still taken when the same text is stored already (under `subject`, or as an id
        of its context), or when the subject's latest version fails them too: what a
        registry once accepted stays usable, and its next versions must keep its names
        (a renamed record is another type). Confluent validates new schemas only."""
        schema_type = self._types.get(new.schema_type)
        if schema_type is None:
            raise errors.InvalidSchema(f"Invalid schema type {new.schema_type}")
        references = self._resolve_references(new.references, subject)
        memo = self._parse_memo
        try:
            return memo.parse(new.schema_type, new.schema, references, lenient,
                              lambda: schema_type.parse(new.schema, references, lenient=lenient))
        except InvalidSchema as exc:
            if lenient:
                raise errors.InvalidSchema(f"Invalid schema: {exc}") from None
            # Its text, not the exception: the exception's traceback holds this frame,
            # a cycle left for the garbage collector on every refused schema.
            error = str(exc)
        try:
            parsed = memo.parse(new.schema_type, new.schema, references, True,
                                lambda: schema_type.parse(new.schema, references, lenient=True))
        except InvalidSchema:
            raise errors.InvalidSchema(f"Invalid schema: {error}") from None
        if self._is_stored(subject, new, parsed) or self._latest_is_grandfathered(subject, new.schema_type):
            return parsed
        raise errors.InvalidSchema(f"Invalid schema: {error}") from None

    def _latest_is_grandfathered(self, subject: str, schema_type: str) -> bool:
        """True if the subject's latest live version is one the checks for new schemas
        refuse (stored by a registry that accepted it). Only asked on the error path."""
        live = self._visible_versions(subject, deleted=False) if subject else []
        if not live or live[-1].schema_type != schema_type:
            return False
        latest = live[-1]
        try:
            self._types[schema_type].parse(latest.schema, self._resolve_references(latest.references, subject))
        except InvalidSchema:
            return True
        return False

    def formatted(self, schema_type: str, text: str, references: tuple[SchemaReference, ...], subject: str,
                  fmt: str | None) -> str:
        """A stored schema's text in the format a read asks for (`?format=`), as
        Confluent's `formattedString`: for Protobuf `serialized` is the base64
        FileDescriptorProto, for Avro `resolved` the schema with every type its
        references define written inline. Any other format, or none, is the text as stored
        (Confluent too answers unknown formats with the default, for forward
        compatibility). Raises InvalidSchema only if the stored text no longer parses."""
        if (schema_type, fmt) == ("PROTOBUF", "serialized"):
            parsed = self._parse_stored(NewSchema(text, schema_type, references), subject)
            return parsed.serialized()  # type: ignore[attr-defined]
        if (schema_type, fmt) == ("AVRO", "resolved"):
            parsed = self._parse_stored(NewSchema(text, schema_type, references), subject)
            return parsed.resolved()  # type: ignore[attr-defined]
        return text

    def _parse_stored(self, new: NewSchema, subject: str = "") -> ParsedSchema:
        """Parse a schema from the log, as Confluent's parser reads what it stored."""
        return self._parse(new, subject, lenient=True)

    def _is_stored(self, subject: str, new: NewSchema, parsed: ParsedSchema) -> bool:
        texts = {new.schema, parsed.canonical()}
        if any(v.schema in texts and v.schema_type == new.schema_type and v.references == new.references
               for v in self._cache.versions(subject)):
            return True
        context = context_of(subject) if subject else DEFAULT_CONTEXT
        return any(self._cache.id_by_content(content_key(context, new.schema_type, text, new.references))
                   is not None for text in texts)

    def _resolve_references(self, references: Iterable[SchemaReference], referrer: str = "") -> dict[str, str]:
        """Reference name -> schema text, dependencies first, following references of references.

        Each (subject, version) is visited once, however many schemas reach it: a fan-out
        of references costs what the distinct referenced versions and their edges cost,
        never the number of paths through them. A reference from a subject of another
        context names a subject of that context unless it is qualified itself.
        """
        resolved: dict[str, str] = {}
        visited: set[tuple[str, int]] = set()
        for ref in references:
            self._visit_reference(ref, referrer, 0, resolved, visited)
        return resolved

    def _visit_reference(self, ref: SchemaReference, parent: str, depth: int, resolved: dict[str, str],
                         visited: set[tuple[str, int]]) -> None:
        """`_resolve_references`' walk. A method, not a closure: a recursive closure holds
        itself through its cell, a cycle left for the garbage collector on every call
        (every registration: 7 objects each)."""
        if depth > _MAX_REFERENCE_DEPTH:
            raise errors.InvalidSchema("Invalid schema: references nest too deeply or form a cycle")
        subject = qualify_reference(parent, ref.subject)
        target = self._cache.version(subject, ref.version)
        if target is None:
            raise errors.InvalidSchema(
                f"Invalid schema: reference {ref.name} names subject '{ref.subject}' "
                f"version {ref.version}, which does not exist")
        key = (subject, ref.version)
        if key not in visited:
            visited.add(key)
            for inner in target.references:
                self._visit_reference(inner, subject, depth + 1, resolved, visited)
        resolved.setdefault(ref.name, target.schema)

    def _previous(self, value: SchemaValue) -> PreviousVersion:
        key = (context_of(value.subject), value.id)
        with self._parsed_lock:
            parsed = self._parsed.get(key)
            if parsed is not None:
                self._parsed.move_to_end(key)
        if parsed is None:
            parsed = self._parse_stored(NewSchema(value.schema, value.schema_type, value.references),
                                        value.subject)
            with self._parsed_lock:
                self._parsed[key] = parsed
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


def _merged_config(old: ConfigValue, subject: str | None, update: ConfigUpdate, level: str | None) -> ConfigValue:
    """`old` with `update` merged in, as Confluent's ConfigValue.update does: absent
    fields keep their value, cleared ones become None."""

    def pick(name: str, new: object, current: object) -> object:
        if name in update.clear:
            return None
        return new if new is not None else current

    return replace(
        old, subject=subject,
        compatibility_level=level if level is not None else old.compatibility_level,
        normalize=pick("normalize", update.normalize, old.normalize),
        compatibility_group=pick("compatibilityGroup", update.compatibility_group, old.compatibility_group),
        default_metadata=pick("defaultMetadata", update.default_metadata, old.default_metadata),
        override_metadata=pick("overrideMetadata", update.override_metadata, old.override_metadata),
        default_rule_set=pick("defaultRuleSet", update.default_rule_set, old.default_rule_set),
        override_rule_set=pick("overrideRuleSet", update.override_rule_set, old.override_rule_set))


def _checked(check: Callable[[], list[str]]) -> list[str]:
    """A compatibility check's reasons; a check past its work budget is refused (422)."""
    try:
        return check()
    except CheckTooCostly as exc:
        raise errors.InvalidSchema(f"Invalid schema: {exc}; nothing was written") from None


def _references_exist(subject: str, version: int) -> str:
    """Confluent's 42206 message, its schema key written as Java's SchemaKey.toString
    writes it: clients match on this text."""
    return f"One or more references exist to the schema {{magic=1,keytype=SCHEMA,subject={subject},version={version}}}."


def _text(parsed: ParsedSchema, normalize: bool) -> str:
    return parsed.normalized() if normalize else parsed.canonical()


_NO_CONFIG = ConfigValue(None)  # frozen: shared by every subject without a config record


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
            "Invalid compatibility level. Valid values are none, backward, forward, full, "
            "backward_transitive, forward_transitive, and full_transitive") from None


def _parse_mode(name: object) -> Mode:
    try:
        return Mode(str(name).upper())
    except ValueError:
        raise errors.InvalidMode(
            "Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE and IMPORT") from None


def _without_version(metadata: Metadata | None) -> Metadata | None:
    """`metadata` less `confluent:version`, which follows the version it is stored with."""
    if metadata is None or metadata.property(CONFLUENT_VERSION) is None:
        return metadata
    props = tuple((k, v) for k, v in metadata.properties if k != CONFLUENT_VERSION)
    return Metadata(metadata.tags, props, metadata.sensitive)


def _storable(text: str) -> str:
    """`text`, if it can be stored as UTF-8 (no lone surrogates); else InvalidSchema."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise errors.InvalidSchema("Invalid schema: it holds a lone surrogate, which is not text") from None
    return text
