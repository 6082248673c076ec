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
import json

import orjson
from dataclasses import dataclass, field
from typing import Any, Union


class KeyType(enum.Enum):
    SCHEMA = "SCHEMA"
    CONFIG = "CONFIG"
    MODE = "MODE"
    NOOP = "NOOP"
    DELETE_SUBJECT = "DELETE_SUBJECT"
    CLEAR_SUBJECT = "CLEAR_SUBJECT"


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


Key = Union[SchemaKey, ConfigKey, ModeKey, NoopKey, DeleteSubjectKey, ClearSubjectKey]


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


@dataclass(frozen=True, slots=True)
class ConfigValue:
    compatibility_level: str | None
    subject: str | None = None
    normalize: bool | None = None


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


Value = Union[SchemaValue, ConfigValue, ModeValue, DeleteSubjectValue, ClearSubjectValue, FenceValue]


def logical_key(key: Key) -> tuple[Any, ...]:
    """The identity of a key regardless of its magic byte.

    Confluent wrote SCHEMA keys with magic 0 in old releases and 1 now; both name the
    same (subject, version), yet compaction sees two different keys.
    """
    if isinstance(key, SchemaKey):
        return ("SCHEMA", key.subject, key.version)
    if isinstance(key, NoopKey):
        return ("NOOP",)
    return (_KEY_TYPE_OF[type(key)].value, key.subject)


def _dumps(obj: dict[str, Any]) -> bytes:
    # Jackson's compact output: no spaces, non-ASCII kept as UTF-8, same escapes as json.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def encode_key(key: Key) -> bytes:
    """Encode `key` exactly as Confluent Schema Registry writes it."""
    if isinstance(key, SchemaKey):
        return _dumps({"keytype": "SCHEMA", "subject": key.subject, "version": key.version,
                       "magic": key.magic})
    if isinstance(key, NoopKey):
        return _dumps({"keytype": "NOOP", "magic": key.magic})
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
        body: dict[str, Any] = {"subject": value.subject, "version": value.version, "id": value.id}
        if value.schema_type != "AVRO":
            body["schemaType"] = value.schema_type
        if value.references:
            body["references"] = [{"name": r.name, "subject": r.subject, "version": r.version}
                                  for r in value.references]
        body["schema"] = value.schema
        body["deleted"] = value.deleted
        return _dumps(body)
    if isinstance(value, ConfigValue):
        body = {}
        if value.subject:
            body["subject"] = value.subject
        if value.compatibility_level is not None:
            body["compatibilityLevel"] = value.compatibility_level
        if value.normalize is not None:
            body["normalize"] = value.normalize
        return _dumps(body)
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
        return _dumps(body)
    raise TypeError(f"not a record value: {value!r}")


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
    raise RecordFormatError(f"unknown keytype {key_type!r}")


def _decode_fence(raw: bytes) -> FenceValue | None:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(obj) is dict and isinstance(obj.get("fence"), str):
        leader, max_id = obj.get("leader"), obj.get("maxId")
        return FenceValue(obj["fence"], leader if isinstance(leader, str) else "",
                          max_id if type(max_id) is int and max_id > 0 else 0)
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
        level = obj.get("compatibilityLevel", obj.get("compatibility"))
        normalize = obj.get("normalize")
        return ConfigValue(level if isinstance(level, str) else None, key.subject,
                           normalize if isinstance(normalize, bool) else None)
    if isinstance(key, ModeKey):
        return ModeValue(_str(obj, "mode", "MODE value"), key.subject)
    if isinstance(key, DeleteSubjectKey):
        return DeleteSubjectValue(key.subject, _int(obj, "version", "DELETE_SUBJECT value"))
    return ClearSubjectValue(key.subject)


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
    return SchemaValue(
        subject if type(subject) is str else key.subject,
        version if type(version) is int else key.version,
        schema_id, schema, schema_type, references, obj.get("deleted") is True)


_KEY_TYPE_OF: dict[type, KeyType] = {
    SchemaKey: KeyType.SCHEMA,
    ConfigKey: KeyType.CONFIG,
    ModeKey: KeyType.MODE,
    NoopKey: KeyType.NOOP,
    DeleteSubjectKey: KeyType.DELETE_SUBJECT,
    ClearSubjectKey: KeyType.CLEAR_SUBJECT,
}


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One record as the log holds it: raw bytes at an offset.

    `expected_offset` is the offset the writer expected the record to land at, where
    the log cannot refuse a misplaced write itself (Kafka: a record header). A record
    with one that differs from `offset` was appended after someone else's and must be
    ignored; None means no expectation (foreign writers, logs that refuse instead).
    """

    offset: int
    key: bytes
    value: bytes | None = field(default=None)
    expected_offset: int | None = None

    @property
    def misplaced(self) -> bool:
        """True if the writer expected this record at another offset: readers drop it."""
        return self.expected_offset is not None and self.expected_offset != self.offset
