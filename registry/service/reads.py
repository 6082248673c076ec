"""Reads: subjects, versions, schemas by id and by guid, and lookups, all from the
cache, as Confluent answers them."""
from __future__ import annotations

from registry import errors
from registry.service.parsing import Parsing
from registry.service.requests import NewSchema, parse_version
from registry.subjects import normalize_subject, subject_name
from store.cache import StoredSchema
from store.contracts import md5_of_guid
from store.records import DEFAULT_CONTEXT, SchemaReference, SchemaValue, context_of


class Reads(Parsing):
    """What the cache answers: subjects, versions, schemas by id (per context, as
    Confluent resolves `?subject=`) and by guid, and lookups of a schema among a
    subject's versions. Never writes. Raises `registry.errors` for what is not found."""

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

    def _latest_any(self, subject: str) -> SchemaValue:
        versions = self._visible_versions(subject, deleted=False)
        if not versions:
            if self._visible_versions(subject, deleted=True):
                raise errors.VersionNotFound(f"Version latest not found for subject '{subject}'.")
            raise errors.SubjectNotFound(f"Subject '{subject}' not found.")
        return versions[-1]

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

    def with_resolved_references(self, new: NewSchema) -> NewSchema:
        """`new` with every reference to version -1 ("latest") resolved to the version it
        names now, as it is stored. Raises SubjectNotFound/VersionNotFound."""
        if not new.references or not any(r.version == -1 for r in new.references):
            return new
        refs = tuple(SchemaReference(r.name, r.subject, self.version(r.subject, "latest").version)
                     if r.version == -1 else r for r in new.references)
        return NewSchema(new.schema, new.schema_type, refs)
