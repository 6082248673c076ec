"""Avro schemas from Python dataclasses, and the hooks that carry instances through the serdes.

As Pulsar's `Schema.AVRO(User.class)` does for Java classes::

    @dataclass
    class User:
        name: str
        born: date
        balance: Annotated[Decimal, AvroDecimal(precision=12, scale=2)]
        email: Optional[str] = None
        tags: list[str] = field(default_factory=list)

    serializer = AvroSerializer(client, avro_schema_json(User), to_dict=dataclass_to_dict)
    deserializer = AvroDeserializer(client, avro_schema_json(User), from_dict=dataclass_from_dict(User))

Type mapping (a field's type hint -> Avro):

| Python                          | Avro                                                    |
|---------------------------------|---------------------------------------------------------|
| `bool`, `int`, `float`          | `boolean`, `long`, `double` (`Int32`, `Float32`: `int`, `float`) |
| `str`, `bytes`                  | `string`, `bytes`                                       |
| `datetime.datetime`             | `long` / `timestamp-millis` (`TIMESTAMP_MICROS` keeps micros) |
| `datetime.date`                 | `int` / `date`                                          |
| `datetime.time`                 | `int` / `time-millis` (or `TIME_MICROS`)                |
| `uuid.UUID`                     | `string` / `uuid`                                       |
| `Annotated[Decimal, AvroDecimal(p, s)]` | `bytes` / `decimal` with precision p, scale s   |
| `Optional[X]`, `X \\| None`     | `["null", X]`, default null (`[X, "null"]`, non-null default) |
| `Union[A, B]`                   | `[A, B]`                                                |
| `list[X]`, `tuple[X, ...]`      | array of X                                              |
| `dict[str, X]`                  | map of X                                                |
| an `Enum`                       | enum of its member *names*                              |
| a dataclass                     | record (defined once, then referred to by name)         |

Field defaults (and `default_factory` results) become Avro defaults; a field's
`metadata={"doc": ...}` becomes its doc. Records and enums are named after their
class (or its `__avro_name__`), in the namespace given to `avro_schema_of`.
Timestamps are read back as UTC-aware datetimes, so give aware ones (a naive one is
taken as UTC).

Type hints are resolved with `typing.get_type_hints`, so classes must be importable
from their module (not defined inside a function) when annotations are strings.
"""
from __future__ import annotations

import collections.abc
import dataclasses
import datetime
import decimal
import enum
import json
import types
import typing
import uuid
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Union

from confluent_kafka.serialization import SerializationContext

__all__ = [
    "AvroDecimal", "AvroType", "Float32", "Int32", "Logical", "TIMESTAMP_MICROS", "TIMESTAMP_MILLIS",
    "TIME_MICROS", "TIME_MILLIS", "avro_schema_json", "avro_schema_of", "dataclass_from_dict",
    "dataclass_to_dict",
]


@dataclasses.dataclass(frozen=True)
class AvroDecimal:
    """`Annotated[Decimal, AvroDecimal(precision=12, scale=2)]`: an Avro bytes decimal."""

    precision: int
    scale: int = 0

    def __post_init__(self) -> None:
        if self.precision < 1 or not 0 <= self.scale <= self.precision:
            raise ValueError("an Avro decimal needs precision >= 1 and 0 <= scale <= precision")


@dataclasses.dataclass(frozen=True)
class Logical:
    """`Annotated[datetime, TIMESTAMP_MICROS]`: choose the logical type of a date/time field."""

    name: str


@dataclasses.dataclass(frozen=True)
class AvroType:
    """`Annotated[int, AvroType("int")]`: a narrower Avro primitive than the default."""

    name: str


TIMESTAMP_MILLIS = Logical("timestamp-millis")
TIMESTAMP_MICROS = Logical("timestamp-micros")
TIME_MILLIS = Logical("time-millis")
TIME_MICROS = Logical("time-micros")
Int32 = typing.Annotated[int, AvroType("int")]
Float32 = typing.Annotated[float, AvroType("float")]

_PRIMITIVES: dict[type, str] = {bool: "boolean", int: "long", float: "double", str: "string", bytes: "bytes"}
_LOGICAL_BASE = {"timestamp-millis": "long", "timestamp-micros": "long", "time-millis": "int",
                 "time-micros": "long", "date": "int"}
_DEFAULT_LOGICAL = {datetime.datetime: "timestamp-millis", datetime.time: "time-millis"}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_SEQUENCES = (list, tuple, set, frozenset, collections.abc.Sequence, collections.abc.MutableSequence)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


def _split_annotated(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    if typing.get_origin(hint) is typing.Annotated:
        args = typing.get_args(hint)
        return args[0], tuple(args[1:])
    return hint, ()


def _is_union(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    return origin is Union or origin is types.UnionType


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


class _SchemaBuilder:
    """Builds one schema; named types (records, enums) are defined once, then referenced."""

    def __init__(self, namespace: str | None, names: dict[type, str] | None = None) -> None:
        self.namespace = namespace
        self.names = names or {}
        self.defined: set[type] = set()

    def name(self, cls: type) -> str:
        return self.names.get(cls) or cls.__dict__.get("__avro_name__") or cls.__name__

    def full_name(self, cls: type) -> str:
        return f"{self.namespace}.{self.name(cls)}" if self.namespace else self.name(cls)

    def record(self, cls: type) -> Any:
        if cls in self.defined:
            return self.full_name(cls)
        self.defined.add(cls)
        hints = _hints(cls)
        fields = []
        for f in dataclasses.fields(cls):
            if not f.init:
                continue  # not a constructor argument: from_dict could not set it
            default = _field_default(f)
            avro = self.of(hints[f.name], default, where=f"{cls.__name__}.{f.name}")
            entry: dict[str, Any] = {"name": f.name, "type": avro}
            if "doc" in f.metadata:
                entry["doc"] = str(f.metadata["doc"])
            if default is not dataclasses.MISSING:
                entry["default"] = _json_default(default, hints[f.name])
            elif _is_optional(hints[f.name]):
                entry["default"] = None
            fields.append(entry)
        schema: dict[str, Any] = {"type": "record", "name": self.name(cls)}
        if self.namespace:
            schema["namespace"] = self.namespace
        if cls.__doc__ and not cls.__doc__.startswith(f"{cls.__name__}("):
            schema["doc"] = cls.__doc__.strip()
        schema["fields"] = fields
        return schema

    def enum(self, cls: type[enum.Enum]) -> Any:
        if cls in self.defined:
            return self.full_name(cls)
        self.defined.add(cls)
        schema: dict[str, Any] = {"type": "enum", "name": self.name(cls)}
        if self.namespace:
            schema["namespace"] = self.namespace
        schema["symbols"] = [m.name for m in cls]
        return schema

    def of(self, hint: Any, default: Any = dataclasses.MISSING, where: str = "") -> Any:
        hint, extras = _split_annotated(hint)
        if _is_union(hint):
            members = [m for m in typing.get_args(hint) if m is not type(None)]
            branches = [self.of(m, where=where) for m in members]
            if len(members) < len(typing.get_args(hint)):  # Optional
                non_null_default = default is not dataclasses.MISSING and default is not None
                return branches + ["null"] if non_null_default else ["null"] + branches
            return branches
        for extra in extras:
            if isinstance(extra, AvroType):
                return extra.name
        if hint in _PRIMITIVES:
            return _PRIMITIVES[hint]
        if hint is decimal.Decimal:
            spec = next((e for e in extras if isinstance(e, AvroDecimal)), None)
            if spec is None:
                raise TypeError(f"{where}: a Decimal needs its precision: "
                                "Annotated[Decimal, AvroDecimal(precision=..., scale=...)]")
            return {"type": "bytes", "logicalType": "decimal", "precision": spec.precision, "scale": spec.scale}
        if hint in (datetime.datetime, datetime.time):
            logical = next((e.name for e in extras if isinstance(e, Logical)), _DEFAULT_LOGICAL[hint])
            return {"type": _LOGICAL_BASE[logical], "logicalType": logical}
        if hint is datetime.date:
            return {"type": "int", "logicalType": "date"}
        if hint is uuid.UUID:
            return {"type": "string", "logicalType": "uuid"}
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return self.enum(hint)
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            return self.record(hint)
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin in _SEQUENCES:
            if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
                raise TypeError(f"{where}: only tuple[X, ...] maps to Avro (an array)")
            if not args:
                raise TypeError(f"{where}: say the item type, as in list[str]")
            return {"type": "array", "items": self.of(args[0], where=where)}
        if origin in _MAPPINGS:
            if not args or args[0] is not str:
                raise TypeError(f"{where}: Avro maps have string keys: use dict[str, X]")
            return {"type": "map", "values": self.of(args[1], where=where)}
        raise TypeError(f"{where}: no Avro type for {hint!r}")


def _is_optional(hint: Any) -> bool:
    hint, _ = _split_annotated(hint)
    return _is_union(hint) and type(None) in typing.get_args(hint)


def _field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _decimal_bytes(value: decimal.Decimal, scale: int) -> bytes:
    unscaled = int(value.scaleb(scale).to_integral_value())
    size = max(1, (unscaled.bit_length() + 8) // 8)
    return unscaled.to_bytes(size, "big", signed=True)


def _json_default(value: Any, hint: Any) -> Any:
    """`value` as an Avro default in JSON: for a union, in the first branch's terms."""
    hint, extras = _split_annotated(hint)
    if _is_union(hint):
        if value is None:
            return None
        branch = next((m for m in typing.get_args(hint) if m is not type(None)), None)
        return _json_default(value, branch)
    if value is None:
        return None
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, decimal.Decimal):
        spec = next((e for e in extras if isinstance(e, AvroDecimal)), AvroDecimal(38, 0))
        return _decimal_bytes(value, spec.scale).decode("latin-1")
    if isinstance(value, datetime.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=datetime.timezone.utc)
        micros = (aware - _EPOCH) // datetime.timedelta(microseconds=1)
        logical = next((e.name for e in extras if isinstance(e, Logical)), "timestamp-millis")
        return micros if logical == "timestamp-micros" else micros // 1000
    if isinstance(value, datetime.date):
        return (value - datetime.date(1970, 1, 1)).days
    if isinstance(value, datetime.time):
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
        logical = next((e.name for e in extras if isinstance(e, Logical)), "time-millis")
        return micros if logical == "time-micros" else micros // 1000
    if isinstance(value, uuid.UUID):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        hints = _hints(type(value))
        return {f.name: _json_default(getattr(value, f.name), hints[f.name]) for f in dataclasses.fields(value)}
    args = typing.get_args(hint)
    if isinstance(value, dict):
        return {k: _json_default(v, args[1] if len(args) == 2 else Any) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_json_default(v, args[0] if args else Any) for v in value]
    raise TypeError(f"default {value!r} has no Avro JSON form")


def avro_schema_of(cls: type, namespace: str | None = None, name: str | None = None) -> dict[str, Any]:
    """The Avro record schema (a JSON-ready dict) for dataclass `cls`.

    The record is named `name`, else the class's `__avro_name__`, else the class
    name. Two versions of a record must share a name to resolve against each other,
    so `ReadingV2` can say `name="Reading"`.

    Raises TypeError for a field type with no Avro counterpart (say, a bare Decimal).
    """
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"{cls!r} is not a dataclass")
    return _SchemaBuilder(namespace, {cls: name} if name else None).record(cls)


def avro_schema_json(cls: type, namespace: str | None = None, name: str | None = None) -> str:
    """`avro_schema_of(cls, namespace, name)` as the JSON text serdes and the registry take."""
    return json.dumps(avro_schema_of(cls, namespace, name), separators=(",", ":"))


# ---- instances to dicts and back ---------------------------------------------------------

Convert = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


def _to_avro(hint: Any) -> Convert | None:
    """A converter from a Python value of type `hint` to what fastavro writes; None when
    fastavro takes the value as it is (the common case, kept free of per-value calls)."""
    hint, _ = _split_annotated(hint)
    if _is_union(hint):
        # Convert by the value's own type; fastavro then picks the branch that fits it.
        converters = []
        for member in typing.get_args(hint):
            convert = _to_avro(member)
            if convert is not None:
                base = _split_annotated(member)[0]
                converters.append((typing.get_origin(base) or base, convert))
        if not converters:
            return None

        def union(value: Any) -> Any:
            for kind, convert in converters:
                if isinstance(value, kind):
                    return convert(value)
            return value
        return union
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_name
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _lazy(_record_to_dict, hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is not None and args:
        if origin in _MAPPINGS:
            inner = _to_avro(args[1])
            return None if inner is None else (lambda d: {k: inner(v) for k, v in d.items()})
        inner = _to_avro(args[0])
        if inner is None:
            return None if origin is list else list
        return lambda items: [inner(v) for v in items]
    return None


def _lazy(make: Callable[[type], Convert], cls: type) -> Convert:
    """`make(cls)`, built on first use: a class may contain itself (a tree of nodes)."""
    built: list[Convert] = []

    def convert(value: Any) -> Any:
        if not built:
            built.append(make(cls))
        return built[0](value)
    return convert


def _enum_name(value: Any) -> Any:
    return value.name if isinstance(value, enum.Enum) else value


@lru_cache(maxsize=None)
def _record_to_dict(cls: type) -> Convert:
    hints = _hints(cls)
    plan = [(f.name, _to_avro(hints[f.name])) for f in dataclasses.fields(cls) if f.init]
    plain = [name for name, convert in plan if convert is None]
    converted = [(name, convert) for name, convert in plan if convert is not None]

    def to_dict(obj: Any) -> dict[str, Any]:
        out = {name: getattr(obj, name) for name in plain}
        for name, convert in converted:
            value = getattr(obj, name)
            out[name] = None if value is None else convert(value)
        return out

    return to_dict


def _from_avro(hint: Any) -> Convert | None:
    hint, _ = _split_annotated(hint)
    if _is_union(hint):
        members = [m for m in typing.get_args(hint) if m is not type(None)]
        records = [m for m in members if isinstance(m, type) and dataclasses.is_dataclass(m)]
        enums = [m for m in members if isinstance(m, type) and issubclass(m, enum.Enum)]
        if not records and not enums and not any(_from_avro(m) for m in members):
            return None
        by_fields = {frozenset(f.name for f in dataclasses.fields(r)): r for r in records}

        def union(value: Any) -> Any:
            if value is None:
                return None
            if isinstance(value, tuple) and len(value) == 2:  # return_record_name
                name, value = value
                for r in records:
                    if r.__name__ == name or name.endswith("." + r.__name__):
                        return _record_from_dict(r)(value)
            if isinstance(value, dict) and records:
                cls = by_fields.get(frozenset(value)) or records[0]
                return _record_from_dict(cls)(value)
            if isinstance(value, str) and enums:
                for e in enums:
                    if value in e.__members__:
                        return e[value]
            for member in members:
                convert = _from_avro(member)
                if convert is not None and not (isinstance(member, type) and dataclasses.is_dataclass(member)):
                    try:
                        return convert(value)
                    except (TypeError, KeyError, ValueError):
                        continue
            return value
        return union
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint.__getitem__
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _lazy(_record_from_dict, hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is not None and args:
        if origin in _MAPPINGS:
            inner = _from_avro(args[1])
            return None if inner is None else (lambda d: {k: inner(v) for k, v in d.items()})
        inner = _from_avro(args[0])
        make = origin if origin in (tuple, set, frozenset) else list
        if inner is None:
            return None if make is list else make
        return lambda items: make(inner(v) for v in items)
    return None


@lru_cache(maxsize=None)
def _record_from_dict(cls: type) -> Convert:
    hints = _hints(cls)
    plan = [(f.name, _from_avro(hints[f.name])) for f in dataclasses.fields(cls) if f.init]

    def from_dict(data: dict[str, Any]) -> Any:
        kwargs = {}
        for name, convert in plan:
            if name in data:
                value = data[name]
                kwargs[name] = value if convert is None or value is None else convert(value)
        return cls(**kwargs)

    return from_dict


def dataclass_to_dict(obj: Any, ctx: SerializationContext | None = None) -> Any:
    """A `to_dict` hook for AvroSerializer: any dataclass instance to the dict fastavro writes.

    Shallow where it can be: fields fastavro takes as they are (numbers, strings,
    datetimes, decimals, lists of those) are not copied; enums become their names,
    nested dataclasses dicts. A non-dataclass `obj` is passed through unchanged.
    """
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _record_to_dict(type(obj))(obj)
    return obj


def dataclass_from_dict(cls: type) -> Callable[[Any, SerializationContext | None], Any]:
    """A `from_dict` hook for AvroDeserializer building `cls` (nested dataclasses and enums too)."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"{cls!r} is not a dataclass")
    build = _record_from_dict(cls)

    def from_dict(data: Any, ctx: SerializationContext | None = None) -> Any:
        return build(data) if isinstance(data, dict) else data

    return from_dict
