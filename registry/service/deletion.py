"""Deletion: soft and hard deletes of versions and subjects. A hard delete frees ids,
so it raises the id watermarks with it (`store.ids`)."""
from __future__ import annotations

from dataclasses import replace

from registry import errors
from registry.modes import Mode
from registry.service.reads import Reads
from registry.service.requests import parse_version
from registry.service.settings import Settings
from store.records import ConfigKey, DeleteSubjectKey, DeleteSubjectValue, Key, ModeKey, SchemaKey, Value


class Deletion(Reads, Settings):
    """Soft and hard deletes of versions and subjects, as Confluent's rules allow them:
    nothing referenced, a hard delete only after a soft one. A hard delete appends the
    id watermark record with it (`SchemaIds.release`), so that compaction never frees
    an id for reuse. Raises `registry.errors` and the writer's store exceptions."""

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

    def _require_writable(self, subject: str) -> None:
        if self.mode_for(subject) in (Mode.READONLY, Mode.READONLY_OVERRIDE):
            raise errors.OperationNotPermitted(f"Subject {subject} is in read-only mode")


def _references_exist(subject: str, version: int) -> str:
    """Confluent's 42206 message, its schema key written as Java's SchemaKey.toString
    writes it: clients match on this text."""
    return f"One or more references exist to the schema {{magic=1,keytype=SCHEMA,subject={subject},version={version}}}."
