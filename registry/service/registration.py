"""Registration: a schema checked against the subject's versions, then planned as a
new version (or found as one it has), with its id, its metadata and its rules."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from registry import errors
from registry.compatibility import CompatibilityLevel, incompatibilities
from registry.modes import Mode
from registry.schema_types import CheckTooCostly, ParsedSchema
from registry.schema_types.avro_tags import TagPathError, with_tags
from registry.service.parsing import storable_text
from registry.service.reads import Reads
from registry.service.requests import MAX_INT32, NewSchema, RegisterRequest, TagRequest, parse_version
from registry.service.settings import Settings
from registry.subjects import check_subject, qualified_context
from store.cache import content_key
from store.contracts import CONFLUENT_VERSION, Metadata, RuleSet, merge_metadata, merge_rule_sets
from store.ids import IdsExhausted
from store.plans import PendingWrites, PlanAlone
from store.records import (
    DEFAULT_CONTEXT,
    ContextKey,
    ContextValue,
    Key,
    SchemaKey,
    SchemaValue,
    Value,
    context_of,
)

_REPLANS = 20

_Basis = tuple[CompatibilityLevel, tuple[SchemaValue, ...]]


class _Replan(Exception):
    """Raised in a plan whose compatibility check no longer matches the subject."""


class Registration(Reads, Settings):
    """Registering a schema under a subject, checking one against it, and new versions
    with embedded tags changed.

    Parsing and the compatibility check run before the write lock is taken; the plan
    that runs under it (`_plan_registration`) is cheap: it checks that the versions
    and the level are still those checked against (else `_Replan`, and the check runs
    again outside the lock), finds a version holding the schema already, or plans a
    new one with an id from the writer's `store.ids.SchemaIds`. Raises `registry.errors`
    and the writer's store exceptions."""

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
        # The thread that prepares the plan also queues it (`write_prepared_async`): the
        # loop is woken once, when the write settles.
        prepared: list[Any] = []

        def first() -> Callable[[PendingWrites], tuple[list[tuple[Key, Value | None]], SchemaValue]]:
            taken, parsed, text, plan = self._prepared_plan(subject, request)
            prepared[:] = [taken, parsed, text]
            return plan

        def again() -> Callable[[PendingWrites], tuple[list[tuple[Key, Value | None]], SchemaValue]]:
            return self._checked_registration(subject, *prepared)

        prepare = first
        for _ in range(_REPLANS):
            try:
                return await self._writer.write_prepared_async(prepare)
            except _Replan:
                prepare = again
        raise errors.StoreTimeout("Gave up registering: the subject kept changing under the check")

    def _prepared_plan(self, subject: str, request: RegisterRequest) -> tuple[
            RegisterRequest, ParsedSchema, str,
            Callable[[PendingWrites], tuple[list[tuple[Key, Value | None]], SchemaValue]]]:
        """`_prepare_registration` and `_checked_registration` in one call (one thread hand-off)."""
        request, parsed, text = self._prepare_registration(subject, request)
        return request, parsed, text, self._checked_registration(subject, request, parsed, text)

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
        return request, parsed, storable_text(parsed, request.normalize)

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


def _checked(check: Callable[[], list[str]]) -> list[str]:
    """A compatibility check's reasons; a check past its work budget is refused (422)."""
    try:
        return check()
    except CheckTooCostly as exc:
        raise errors.InvalidSchema(f"Invalid schema: {exc}; nothing was written") from None


def _without_version(metadata: Metadata | None) -> Metadata | None:
    """`metadata` less `confluent:version`, which follows the version it is stored with."""
    if metadata is None or metadata.property(CONFLUENT_VERSION) is None:
        return metadata
    props = tuple((k, v) for k, v in metadata.properties if k != CONFLUENT_VERSION)
    return Metadata(metadata.tags, props, metadata.sensitive)
