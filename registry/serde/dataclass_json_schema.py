"""JSON Schemas from Python classes, as Pulsar's `JSONSchema.of(User.class)`::

    @dataclass
    class User:
        name: str
        born: date
        email: str | None = None
        tags: list[str] = field(default_factory=list)

    serializer = JSONSerializer(json_schema_json(User), client, to_dict=json_dict_of)

A pydantic (v2) model is handed to its own `model_json_schema()`; pydantic is not a
dependency, a model is recognized by that method.

Dataclass type mapping (a field's type hint -> JSON Schema, draft 7):

| Python                         | JSON Schema                                           |
|--------------------------------|-------------------------------------------------------|
| `bool`, `int`, `float`, `str`  | boolean, integer, number, string                      |
| `bytes`                        | string (base64, `contentEncoding`)                    |
| `datetime`, `date`, `time`     | string, `format` date-time / date / time              |
| `uuid.UUID`, `Decimal`         | string `format: uuid`; number                         |
| `Optional[X]`, `X \\| None`    | `oneOf: [{"type": "null"}, X]`, as Confluent's generator writes it |
| `Union[A, B]`                  | `oneOf: [A, B]`                                       |
| `list[X]`, `tuple[X, ...]`, `set[X]` | array of X                                      |
| `dict[str, X]`                 | object with `additionalProperties: X`                 |
| `Literal[...]`, an `Enum`      | `enum` of the values                                  |
| a dataclass                    | object, defined once under `definitions` and `$ref`'d |

A field without a default is `required`. Objects are closed
(`additionalProperties: false`) unless `closed=False`: under Confluent's JSON Schema
rules a later version may then add optional fields and stay BACKWARD compatible,
whereas adding a property to an open content model is incompatible. Type hints are resolved with
`typing.get_type_hints`; a recursive dataclass refers to itself through `$ref`.
"""
from __future__ import annotations

import base64
import collections.abc as abc
import dataclasses
import datetime
import decimal
import enum
import types
import typing
import uuid
from typing import Any, Union

import orjson

__all__ = ["json_dict_of", "json_schema_json", "json_schema_of"]

_DRAFT_7 = "http://json-schema.org/draft-07/schema#"
_SIMPLE: dict[Any, dict[str, Any]] = {
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    str: {"type": "string"},
    bytes: {"type": "string", "contentEncoding": "base64"},
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.date: {"type": "string", "format": "date"},
    datetime.time: {"type": "string", "format": "time"},
    uuid.UUID: {"type": "string", "format": "uuid"},
    decimal.Decimal: {"type": "number"},
    Any: {},
}
_SEQUENCES = frozenset({list, set, frozenset, tuple, abc.Sequence, abc.MutableSequence, abc.Set,
                        abc.MutableSet, abc.Iterable, abc.Collection})
_MAPPINGS = frozenset({dict, abc.Mapping, abc.MutableMapping})


class _Builder:
    def __init__(self, closed: bool) -> None:
        self.definitions: dict[str, dict[str, Any]] = {}
        self.closed = closed

    def of(self, hint: Any) -> dict[str, Any]:
        if hint in _SIMPLE:
            return dict(_SIMPLE[hint])
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if origin is typing.Annotated:
            return self.of(args[0])
        if origin is Union or origin is types.UnionType:
            members = [self.of(a) for a in args if a is not type(None)]
            if type(None) in args:
                members.insert(0, {"type": "null"})
            return members[0] if len(members) == 1 else {"oneOf": members}
        if origin is typing.Literal:
            return {"enum": list(args)}
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return {"type": "array", "items": [self.of(a) for a in args]}
        if origin in _SEQUENCES:
            return {"type": "array", "items": self.of(args[0] if args else Any)}
        if origin in _MAPPINGS:
            value = args[1] if len(args) == 2 else Any
            return {"type": "object", "additionalProperties": self.of(value)}
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return {"enum": [member.value for member in hint]}
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            name = hint.__name__
            if name not in self.definitions:
                self.definitions[name] = {}  # placed first: a recursive field finds it
                self.definitions[name] = self.object(hint)
            return {"$ref": f"#/definitions/{name}"}
        raise TypeError(f"no JSON Schema type for {hint!r}")

    def object(self, cls: type) -> dict[str, Any]:
        hints = typing.get_type_hints(cls, include_extras=True)
        properties: dict[str, Any] = {}
        required = []
        for f in dataclasses.fields(cls):
            schema = self.of(hints[f.name])
            doc = f.metadata.get("doc") if f.metadata else None
            if doc:
                schema["description"] = doc
            properties[f.name] = schema
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                required.append(f.name)
        out: dict[str, Any] = {"type": "object", "title": cls.__name__, "properties": properties}
        if required:
            out["required"] = required
        if self.closed:
            out["additionalProperties"] = False
        return out


def json_schema_of(cls: type, title: str | None = None, *, closed: bool = True) -> dict[str, Any]:
    """The JSON Schema (draft 7) of dataclass `cls`, or a pydantic model's own schema;
    titled `title` or the class name (the record name of RecordNameStrategy); objects
    closed unless `closed` is False. Raises TypeError for a field type with no JSON
    Schema counterpart."""
    model_schema = getattr(cls, "model_json_schema", None)
    if callable(model_schema):  # pydantic v2
        schema = dict(model_schema())
        schema.setdefault("$schema", "https://json-schema.org/draft/2020-12/schema")
    elif dataclasses.is_dataclass(cls):
        builder = _Builder(closed)
        schema = {"$schema": _DRAFT_7, **builder.object(cls)}
        if builder.definitions:  # nested dataclasses, and `cls` itself if it recurses
            schema["definitions"] = builder.definitions
    else:
        raise TypeError(f"{cls!r} is neither a dataclass nor a pydantic model")
    if title is not None:
        schema["title"] = title
    return schema


def json_schema_json(cls: type, title: str | None = None, *, closed: bool = True) -> str:
    """`json_schema_of(cls, title, closed=closed)` as compact JSON text, for `JSONSerializer`."""
    return orjson.dumps(json_schema_of(cls, title, closed=closed)).decode()


def json_dict_of(obj: Any, ctx: Any = None) -> Any:
    """A `to_dict` for `JSONSerializer`: `obj` (a dataclass, a pydantic model, or anything
    orjson serializes) as the JSON value it is written as, dates and UUIDs as strings."""
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return orjson.loads(orjson.dumps(obj, default=_json_default))


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (set, frozenset)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
