"""Imports: schemas with their ids and versions, and settings, appended in bulk for
`schema-registry import`, each entry succeeding or failing alone."""
from __future__ import annotations

from registry import errors
from registry.compatibility import CompatibilityLevel
from registry.modes import Mode
from registry.service.parsing import storable_text
from registry.service.registration import Registration
from registry.service.requests import ConfigUpdate, RegisterRequest, SettingChange
from registry.service.settings import merged_config, parse_mode
from registry.subjects import check_subject, qualified_context
from store.plans import PendingWrites
from store.records import ConfigKey, ConfigValue, Key, ModeKey, ModeValue, SchemaValue, Value


class Imports(Registration):
    """Bulk appends for `schema-registry import`: registrations with their ids and
    versions, and config and mode settings, each batch in one plan and one append,
    where a request each would take a round of the write protocol each."""

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
                prepared.append((subject, request, storable_text(parsed, request.normalize)))
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
                    prepared.append((entry, parse_mode(entry.change).value))
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
                    value = configs[subject] = merged_config(old, subject, entry.change, name)
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
