"""What requests give the service: new schemas, registrations, tag and config changes,
and the version numbers a path names. Frozen values, checked by the service."""
from __future__ import annotations

from dataclasses import dataclass

from registry import errors
from store.contracts import Metadata, RuleSet
from store.records import SchemaReference

MAX_INT32 = 2**31 - 1


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
