"""Config, mode and contexts: what applies to a subject (its own, else its context's,
else the global one), and the writes that set and drop them."""
from __future__ import annotations

from dataclasses import replace

from registry import errors
from registry.compatibility import CompatibilityLevel
from registry.modes import Mode
from registry.service.requests import ConfigUpdate
from registry.service.state import ServiceState
from registry.subjects import check_subject, context_subject, normalize_context
from store.records import DEFAULT_CONTEXT, ConfigKey, ConfigValue, Key, ModeKey, ModeValue, Value, context_of


class Settings(ServiceState):
    """Compatibility levels, config records, modes and contexts. A subject's setting
    is its own, else its context's (`:.ctx:`), else the global one, else the node's
    default; a global READONLY_OVERRIDE wins over every mode. Raises `registry.errors`."""

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
            value = merged_config(self._cache.config(subject) or ConfigValue(None, subject), subject, update, level)
            return [(ConfigKey(subject), value)], value

        return self._writer.write(plan)

    def _config_target(self, subject: str | None, update: ConfigUpdate) -> str | None:
        """Check a config write's subject and level; the level's stored name (None: unchanged)."""
        if subject is not None:
            check_subject(subject, config_or_mode=True)
        return _parse_level(update.compatibility_level).value if update.compatibility_level is not None else None

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
        parsed = parse_mode(mode)
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


def merged_config(old: ConfigValue, subject: str | None, update: ConfigUpdate, level: str | None) -> ConfigValue:
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


def parse_mode(name: object) -> Mode:
    try:
        return Mode(str(name).upper())
    except ValueError:
        raise errors.InvalidMode(
            "Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE and IMPORT") from None
