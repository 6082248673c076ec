"""Confluent's `_schemas` record format: keys and values, byte for byte.

Confluent serialises keys with Jackson using `@JsonPropertyOrder` and
`@JsonInclude(NON_EMPTY)`: compact JSON, fields in a fixed order, null fields left
out. Log compaction compares exact key bytes, so we encode keys exactly that way and,
when we decode a key, keep the bytes it arrived with (`RawKey`) so that a later value
or tombstone for the same logical key can reuse them.

Decoding is lenient, as Confluent's and Karapace's readers are: fields in any order,
SCHEMA key magic 0 or 1, a global subject given as null or left out, unknown fields
ignored.

Replaying a topic decodes every record, so decoding is a hot path: orjson, checks
ordered for SCHEMA records first, and slotted dataclasses (faster to build, a third
of the memory of a dict-backed instance; the cache holds one per version).
"""
from __future__ import annotations

import enum

import orjson
from dataclasses import dataclass
from typing import Any, NamedTuple, Union

from store import compact_json
from store.contracts import Metadata, RuleSet, metadata_from_json, rule_set_from_json


class KeyType(enum.Enum):
    SCHEMA = "SCHEMA"
    CONFIG = "CONFIG"
    MODE = "MODE"
    NOOP = "NOOP"
    DELETE_SUBJECT = "DELETE_SUBJECT"
    CLEAR_SUBJECT = "CLEAR_SUBJECT"
    CONTEXT = "CONTEXT"
    ASSOC = "ASSOC"


DEFAULT_TENANT = "default"


DEFAULT_CONTEXT = "."


def context_of(subject: str) -> str:
    """The context a stored subject belongs to: `.ctx` for `:.ctx:name`, `.` for a plain name.

    Confluent stores subjects of other contexts qualified, as `:.ctx:name`; a subject
    naming only its context (`:.ctx:`) stands for the context itself.
    """
    if subject.startswith(":."):
        end = subject.find(":", 2)
        return subject[1:end] if end >= 0 else subject[1:]
    return DEFAULT_CONTEXT


class RecordFormatError(ValueError):
    """A key or value that is not a record of Confluent's `_schemas` format."""


@dataclass(frozen=True, slots=True)
class SchemaKey:
    subject: str
    version: int
    magic: int = 1


@dataclass(frozen=True, slots=True)
class ConfigKey:
    subject: str | None  # None is the global config
    magic: int = 0


@dataclass(frozen=True, slots=True)
class ModeKey:
    subject: str | None  # None is the global mode
    magic: int = 0


@dataclass(frozen=True, slots=True)
class NoopKey:
    magic: int = 0


@dataclass(frozen=True, slots=True)
class DeleteSubjectKey:
    subject: str
    magic: int = 0


@dataclass(frozen=True, slots=True)
class ClearSubjectKey:
    subject: str
    magic: int = 0


@dataclass(frozen=True, slots=True)
class ContextKey:
    """A context's existence (Confluent writes one when a qualified subject first
    registers). `context` is its name with the leading dot, as `.ctx`."""

    context: str
    tenant: str = DEFAULT_TENANT
    magic: int = 0


@dataclass(frozen=True, slots=True)
class AssociationKey:
    """Confluent 8's association of a subject with a resource (a topic, say)."""

    resource_name: str
    resource_namespace: str
    resource_type: str
    association_type: str
    subject: str
    tenant: str = DEFAULT_TENANT
    magic: int = 0


Key = Union[SchemaKey, ConfigKey, ModeKey, NoopKey, DeleteSubjectKey, ClearSubjectKey, ContextKey,
            AssociationKey]


@dataclass(frozen=True, slots=True)
class SchemaReference:
    name: str
    subject: str
    version: int


@dataclass(frozen=True, slots=True)
class SchemaValue:
    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[SchemaReference, ...] = ()
    deleted: bool = False
    metadata: Metadata | None = None
    rule_set: RuleSet | None = None
    md5: str | None = None  # base64, as Confluent may store it; else derived from the content


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """A global or subject config. Fields Confluent stores that we do not act on (aliases,
    validation switches, the compatibility policy) are kept, so a config read from an
    adopted topic is written back whole."""

    compatibility_level: str | None
    subject: str | None = None
    normalize: bool | None = None
    alias: str | None = None
    alias_for_deks: str | None = None
    validate_fields: bool | None = None
    validate_new_schemas: bool | None = None
    validate_rules: bool | None = None
    compatibility_policy: str | None = None
    compatibility_group: str | None = None
    default_metadata: Metadata | None = None
    override_metadata: Metadata | None = None
    default_rule_set: RuleSet | None = None
    override_rule_set: RuleSet | None = None


@dataclass(frozen=True, slots=True)
class ModeValue:
    mode: str
    subject: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteSubjectValue:
    subject: str
    version: int


@dataclass(frozen=True, slots=True)
class ClearSubjectValue:
    subject: str


@dataclass(frozen=True, slots=True)
class ContextValue:
    context: str
    tenant: str = DEFAULT_TENANT


@dataclass(frozen=True, slots=True)
class AssociationValue:
    """One association, as Confluent's AssociationValue holds it. `create_ts` is the
    leader's clock when it was created: carried in the record, so replay agrees."""

    guid: str
    resource_name: str
    resource_namespace: str
    resource_id: str
    resource_type: str
    association_type: str
    subject: str
    lifecycle: str | None = None
    frozen: bool = False
    create_ts: int | None = None
    tenant: str = DEFAULT_TENANT


@dataclass(frozen=True)
class FenceValue:
    """Our addition: a NOOP record a newly elected leader appends before it writes.

    `token` is unique to one term of one node; a node may append only while the
    latest fence in the log is its own (DESIGN invariant 2). Confluent's and
    Karapace's readers skip NOOP records without reading their value.
    """

    token: str
    leader: str = ""
    # The highest id ever assigned when the record was written. A hard delete re-states
    # the fence with it: the newest NOOP record survives compaction, so a replay never
    # hands out an id whose records compaction removed (DESIGN invariant 3).
    max_id: int = 0
    # The same for each non-default context, whose ids are numbered apart: (context, id).
    context_max_ids: tuple[tuple[str, int], ...] = ()


Value = Union[SchemaValue, ConfigValue, ModeValue, DeleteSubjectValue, ClearSubjectValue, FenceValue,
              ContextValue, AssociationValue]


def logical_key(key: Key) -> tuple[Any, ...]:
    """The identity of a key regardless of its magic byte.

    Confluent wrote SCHEMA keys with magic 0 in old releases and 1 now; both name the
    same (subject, version), yet compaction sees two different keys.
    """
    if isinstance(key, SchemaKey):
        return ("SCHEMA", key.subject, key.version)
    if isinstance(key, NoopKey):
        return ("NOOP",)
    if isinstance(key, ContextKey):
        return ("CONTEXT", key.tenant, key.context)
    if isinstance(key, AssociationKey):
        return ("ASSOC", key.tenant, key.resource_name, key.resource_namespace, key.resource_type,
                key.association_type, key.subject)
    return (_KEY_TYPE_OF[type(key)].value, key.subject)


def _dumps(obj: dict[str, Any]) -> bytes:
    # Jackson's compact output: no spaces, non-ASCII kept as UTF-8, same escapes as json.
    # Copied to its own size: orjson hands back its whole write buffer (4 KiB however
    # short the text), and the cache keeps the bytes of every record this node writes
    # (a key's exact bytes, for its tombstone): 4 KiB a record, 4 GiB over an import
    # of a million schemas, which a restart (reading the same records back) did not hold.
    return bytes(memoryview(compact_json.dumps(obj)))


def encode_key(key: Key) -> bytes:
    """Encode `key` exactly as Confluent Schema Registry writes it."""
    if isinstance(key, SchemaKey):
        return _dumps({"keytype": "SCHEMA", "subject": key.subject, "version": key.version,
                       "magic": key.magic})
    if isinstance(key, NoopKey):
        return _dumps({"keytype": "NOOP", "magic": key.magic})
    if isinstance(key, ContextKey):
        # @JsonPropertyOrder({"keytype", "tenant", "context"}); magic, unlisted, follows.
        return _dumps({"keytype": "CONTEXT", "tenant": key.tenant, "context": key.context,
                       "magic": key.magic})
    if isinstance(key, AssociationKey):
        return _dumps({"keytype": "ASSOC", "tenant": key.tenant, "resourceName": key.resource_name,
                       "resourceNamespace": key.resource_namespace, "resourceType": key.resource_type,
                       "associationType": key.association_type, "subject": key.subject,
                       "magic": key.magic})
    body: dict[str, Any] = {"keytype": _KEY_TYPE_OF[type(key)].value}
    if key.subject:  # NON_EMPTY: the global config and mode keys carry no subject
        body["subject"] = key.subject
    body["magic"] = key.magic
    return _dumps(body)


def encode_value(value: Value | None) -> bytes | None:
    """Encode a value as Confluent writes it; None is a tombstone and stays None."""
    if value is None:
        return None
    if isinstance(value, SchemaValue):
        # SchemaValue's @JsonCreator order: subject, version, id, md5, schemaType,
        # references, metadata, ruleSet, schema, deleted.
        body: dict[str, Any] = {"subject": value.subject, "version": value.version, "id": value.id}
        if value.md5:
            body["md5"] = value.md5
        if value.schema_type != "AVRO":
            body["schemaType"] = value.schema_type
        if value.references:
            body["references"] = [{"name": r.name, "subject": r.subject, "version": r.version}
                                  for r in value.references]
        if value.metadata is not None:
            body["metadata"] = value.metadata.to_json()
        if value.rule_set is not None:
            body["ruleSet"] = value.rule_set.to_json()
        body["schema"] = value.schema
        body["deleted"] = value.deleted
        return _dumps(body)
    if isinstance(value, ConfigValue):
        return _dumps(_config_body(value))
    if isinstance(value, ModeValue):
        body = {}
        if value.subject:
            body["subject"] = value.subject
        body["mode"] = value.mode
        return _dumps(body)
    if isinstance(value, DeleteSubjectValue):
        return _dumps({"subject": value.subject, "version": value.version})
    if isinstance(value, ClearSubjectValue):
        return _dumps({"subject": value.subject})
    if isinstance(value, FenceValue):
        body = {"fence": value.token, "leader": value.leader}
        if value.max_id:
            body["maxId"] = value.max_id
        if value.context_max_ids:
            body["contextMaxIds"] = dict(value.context_max_ids)
        return _dumps(body)
    if isinstance(value, ContextValue):
        return _dumps({"tenant": value.tenant, "context": value.context})
    if isinstance(value, AssociationValue):
        body = {"guid": value.guid, "tenant": value.tenant, "resourceName": value.resource_name,
                "resourceNamespace": value.resource_namespace, "resourceId": value.resource_id,
                "resourceType": value.resource_type, "associationType": value.association_type,
                "subject": value.subject}
        if value.lifecycle:
            body["lifecycle"] = value.lifecycle
        body["frozen"] = value.frozen
        if value.create_ts is not None:
            body["createTs"] = value.create_ts
        return _dumps(body)
    raise TypeError(f"not a record value: {value!r}")


def _config_body(value: ConfigValue) -> dict[str, Any]:
    """ConfigValue's @JsonCreator order, NON_EMPTY (a false Boolean object is kept)."""
    body: dict[str, Any] = {}
    for name, item in (
            ("subject", value.subject), ("alias", value.alias), ("aliasForDeks", value.alias_for_deks),
            ("normalize", value.normalize), ("validateFields", value.validate_fields),
            ("validateNewSchemas", value.validate_new_schemas), ("validateRules", value.validate_rules),
            ("compatibilityLevel", value.compatibility_level),
            ("compatibilityPolicy", value.compatibility_policy),
            ("compatibilityGroup", value.compatibility_group)):
        if item is not None and item != "":
            body[name] = item
    for name, contract in (("defaultMetadata", value.default_metadata),
                           ("overrideMetadata", value.override_metadata),
                           ("defaultRuleSet", value.default_rule_set),
                           ("overrideRuleSet", value.override_rule_set)):
        if contract is not None:
            body[name] = contract.to_json()
    return body


def _load_object(raw: bytes, what: str) -> dict[str, Any]:
    # orjson: replaying a topic decodes two documents per record, and the stdlib
    # parser was the largest single cost of a cold start (bench/cold_start.py).
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:  # invalid UTF-8 included
        raise RecordFormatError(f"{what} is not JSON: {exc}") from None
    if type(obj) is not dict:
        raise RecordFormatError(f"{what} is not a JSON object")
    return obj


def _str(obj: dict[str, Any], name: str, what: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str):
        raise RecordFormatError(f"{what} has no string field {name!r}")
    return value


def _int(obj: dict[str, Any], name: str, what: str) -> int:
    value = obj.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise RecordFormatError(f"{what} has no integer field {name!r}")
    return value


def decode_key(raw: bytes) -> Key:
    """Decode a key written by us, Confluent or Karapace. Raises RecordFormatError."""
    obj = _load_object(raw, "key")
    key_type = obj.get("keytype")
    magic = obj.get("magic", 0)
    if not isinstance(magic, int):
        raise RecordFormatError("key magic is not an integer")
    if key_type == "SCHEMA":  # nearly every record: test it first
        subject, version = obj.get("subject"), obj.get("version")
        if type(subject) is not str or type(version) is not int:
            raise RecordFormatError("SCHEMA key needs a string subject and an integer version")
        return SchemaKey(subject, version, magic)
    if key_type == "NOOP":
        return NoopKey(magic)
    subject = obj.get("subject")
    if key_type == "CONFIG" or key_type == "MODE":
        if subject is not None and not isinstance(subject, str):
            raise RecordFormatError(f"{key_type} key subject is not a string")
        return (ConfigKey if key_type == "CONFIG" else ModeKey)(subject or None, magic)
    if key_type == "DELETE_SUBJECT" or key_type == "CLEAR_SUBJECT":
        if not isinstance(subject, str):
            raise RecordFormatError(f"{key_type} key has no subject")
        return (DeleteSubjectKey if key_type == "DELETE_SUBJECT" else ClearSubjectKey)(subject, magic)
    if key_type == "CONTEXT":
        tenant, context = obj.get("tenant", DEFAULT_TENANT), obj.get("context")
        if type(context) is not str or type(tenant) is not str:
            raise RecordFormatError("CONTEXT key needs a string context")
        return ContextKey(context, tenant, magic)
    if key_type == "ASSOC":
        fields = [obj.get(n) for n in ("resourceName", "resourceNamespace", "resourceType",
                                       "associationType", "subject")]
        tenant = obj.get("tenant", DEFAULT_TENANT)
        if any(type(f) is not str for f in fields) or type(tenant) is not str:
            raise RecordFormatError("ASSOC key needs string resource fields and a subject")
        return AssociationKey(*fields, tenant=tenant, magic=magic)
    raise RecordFormatError(f"unknown keytype {key_type!r}")


def _decode_fence(raw: bytes) -> FenceValue | None:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(obj) is dict and isinstance(obj.get("fence"), str):
        leader, max_id, contexts = obj.get("leader"), obj.get("maxId"), obj.get("contextMaxIds")
        context_max_ids = tuple(sorted(
            (name, top) for name, top in contexts.items() if type(top) is int and top > 0
        )) if type(contexts) is dict else ()
        return FenceValue(obj["fence"], leader if isinstance(leader, str) else "",
                          max_id if type(max_id) is int and max_id > 0 else 0, context_max_ids)
    return None


def decode_value(key: Key, raw: bytes | None) -> Value | None:
    """Decode the value stored under `key`; None (a tombstone) stays None.

    NOOP records decode to a FenceValue when they are one of our fences, else to
    None whatever their bytes (Confluent writes them with a null value).
    Raises RecordFormatError only for non-NOOP records.
    """
    if raw is None:
        return None
    if type(key) is NoopKey:
        return _decode_fence(raw)
    if type(key) is SchemaKey:
        return _decode_schema_value(key, _load_object(raw, "SchemaKey value"))
    obj = _load_object(raw, f"{type(key).__name__} value")
    if isinstance(key, ConfigKey):
        return _decode_config_value(key, obj)
    if isinstance(key, ModeKey):
        return ModeValue(_str(obj, "mode", "MODE value"), key.subject)
    if isinstance(key, DeleteSubjectKey):
        return DeleteSubjectValue(key.subject, _int(obj, "version", "DELETE_SUBJECT value"))
    if isinstance(key, ContextKey):
        return ContextValue(key.context, key.tenant)
    if isinstance(key, AssociationKey):
        return _decode_association_value(key, obj)
    return ClearSubjectValue(key.subject)


def _opt(obj: dict[str, Any], name: str, kind: type) -> Any:
    value = obj.get(name)
    return value if type(value) is kind else None


def _decode_config_value(key: ConfigKey, obj: dict[str, Any]) -> ConfigValue:
    level = obj.get("compatibilityLevel", obj.get("compatibility"))
    return ConfigValue(
        level if isinstance(level, str) else None, key.subject, _opt(obj, "normalize", bool),
        _opt(obj, "alias", str), _opt(obj, "aliasForDeks", str), _opt(obj, "validateFields", bool),
        _opt(obj, "validateNewSchemas", bool), _opt(obj, "validateRules", bool),
        _opt(obj, "compatibilityPolicy", str), _opt(obj, "compatibilityGroup", str),
        metadata_from_json(obj.get("defaultMetadata"), strict=False),
        metadata_from_json(obj.get("overrideMetadata"), strict=False),
        rule_set_from_json(obj.get("defaultRuleSet"), strict=False),
        rule_set_from_json(obj.get("overrideRuleSet"), strict=False))


def _decode_association_value(key: AssociationKey, obj: dict[str, Any]) -> AssociationValue:
    create_ts = obj.get("createTs")
    return AssociationValue(
        _opt(obj, "guid", str) or "", key.resource_name, key.resource_namespace,
        _opt(obj, "resourceId", str) or "", key.resource_type, key.association_type, key.subject,
        _opt(obj, "lifecycle", str), obj.get("frozen") is True,
        create_ts if type(create_ts) is int else None, key.tenant)


class PlainSchemaValue(NamedTuple):
    """A SCHEMA record's value that names no references, metadata or rule set (nearly
    every one), as replaying a topic holds it until a read asks for it: its subject
    and version are its key's. A tuple, not a SchemaValue: a frozen dataclass costs
    ten times as much to build, and a cold start builds one per record.

    Its fields are SchemaValue's, so code that reads what both have takes either;
    `value(subject, version)` is the SchemaValue it stands for.
    """

    id: int
    schema: str
    schema_type: str = "AVRO"
    deleted: bool = False
    md5: str | None = None
    references: tuple[SchemaReference, ...] = ()
    metadata: Metadata | None = None
    rule_set: RuleSet | None = None

    def value(self, subject: str, version: int) -> SchemaValue:
        return SchemaValue(subject, version, self.id, self.schema, self.schema_type, (), self.deleted,
                           None, None, self.md5)


def decode_schema_record(raw_key: bytes, raw_value: bytes | None
                         ) -> tuple[str, int, SchemaValue | PlainSchemaValue | None] | None:
    """A SCHEMA record as (subject, version, value), the replay's fast path; None when
    `raw_key` is a JSON object of another key type (decode it with `decode_key`, which
    raises if it is malformed).

    `value` is None for a tombstone, a PlainSchemaValue where the record names no
    references, metadata or rule set, else the SchemaValue `decode_value` gives; either
    stands for exactly what `decode_value` decodes. Raises RecordFormatError where
    `decode_key` or `decode_value` would.
    """
    obj = _load_object(raw_key, "key")
    if obj.get("keytype") != "SCHEMA":
        return None  # rare (configs, modes, fences...): decode_key parses it again
    magic = obj.get("magic", 0)
    subject, version = obj.get("subject"), obj.get("version")
    if not isinstance(magic, int):
        raise RecordFormatError("key magic is not an integer")
    if type(subject) is not str or type(version) is not int:
        raise RecordFormatError("SCHEMA key needs a string subject and an integer version")
    if raw_value is None:
        return subject, version, None
    value = _load_object(raw_value, "SchemaKey value")
    if value.get("references") or value.get("metadata") is not None or value.get("ruleSet") is not None:
        return subject, version, _decode_schema_value(SchemaKey(subject, version, magic), value)
    schema_id, schema = value.get("id"), value.get("schema")
    if type(schema_id) is not int:
        raise RecordFormatError("SCHEMA value has no integer field 'id'")
    if type(schema) is not str:
        raise RecordFormatError("SCHEMA value has no string field 'schema'")
    schema_type = value.get("schemaType") or "AVRO"
    if type(schema_type) is not str:
        raise RecordFormatError("SCHEMA value schemaType is not a string")
    md5 = value.get("md5")
    # tuple.__new__: the named tuple's own __new__ is a Python function, and twice the cost.
    return subject, version, _new_tuple(PlainSchemaValue, (
        schema_id, schema, schema_type, value.get("deleted") is True, md5 if type(md5) is str and md5 else None,
        (), None, None))


_new_tuple = tuple.__new__


def _decode_schema_value(key: SchemaKey, obj: dict[str, Any]) -> SchemaValue:
    schema_id, schema = obj.get("id"), obj.get("schema")
    if type(schema_id) is not int:
        raise RecordFormatError("SCHEMA value has no integer field 'id'")
    if type(schema) is not str:
        raise RecordFormatError("SCHEMA value has no string field 'schema'")
    refs = obj.get("references")
    references: tuple[SchemaReference, ...] = ()
    if refs:
        if not isinstance(refs, list):
            raise RecordFormatError("SCHEMA value references is not a list")
        references = tuple(SchemaReference(_str(r, "name", "reference"), _str(r, "subject", "reference"),
                                           _int(r, "version", "reference"))
                           for r in refs if isinstance(r, dict))
    schema_type = obj.get("schemaType") or "AVRO"
    if type(schema_type) is not str:
        raise RecordFormatError("SCHEMA value schemaType is not a string")
    subject, version = obj.get("subject"), obj.get("version")
    metadata = obj.get("metadata")
    rule_set = obj.get("ruleSet")
    md5 = obj.get("md5")
    return SchemaValue(
        subject if type(subject) is str else key.subject,
        version if type(version) is int else key.version,
        schema_id, schema, schema_type, references, obj.get("deleted") is True,
        None if metadata is None else metadata_from_json(metadata, strict=False),
        None if rule_set is None else rule_set_from_json(rule_set, strict=False),
        md5 if type(md5) is str and md5 else None)


_KEY_TYPE_OF: dict[type, KeyType] = {
    SchemaKey: KeyType.SCHEMA,
    ConfigKey: KeyType.CONFIG,
    ModeKey: KeyType.MODE,
    NoopKey: KeyType.NOOP,
    DeleteSubjectKey: KeyType.DELETE_SUBJECT,
    ClearSubjectKey: KeyType.CLEAR_SUBJECT,
    ContextKey: KeyType.CONTEXT,
    AssociationKey: KeyType.ASSOC,
}


class LogRecord(NamedTuple):
    """One record as the log holds it: raw bytes at an offset.

    `expected_offset` is the offset the writer expected the record to land at, where
    the log cannot refuse a misplaced write itself (Kafka: a record header). A record
    with one that differs from `offset` was appended after someone else's and must be
    ignored; None means no expectation (foreign writers, logs that refuse instead).

    A named tuple, not a dataclass: replaying a topic makes one per record, and a
    frozen dataclass costs five times as much to build.
    """

    offset: int
    key: bytes
    value: bytes | None = None
    expected_offset: int | None = None

    @property
    def misplaced(self) -> bool:
        """True if the writer expected this record at another offset: readers drop it."""
        return self.expected_offset is not None and self.expected_offset != self.offset
