"""JSON Schemas from dataclasses (registry.serde.dataclass_json_schema.py).

Protected: the schema is valid under its draft's meta-schema, accepts what
`json_dict_of` makes of an instance and rejects a value missing a required field or of
a wrong type; nested and recursive dataclasses go through `definitions`; a pydantic-like
model is asked for its own schema; the JSON serdes' configuration is confluent-kafka's.
"""
from __future__ import annotations

import datetime
import enum
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema
import pytest

from registry.serde import JSONDeserializer, JSONSerializer, ProtobufDeserializer, json_schema_of
from registry.serde.dataclass_json_schema import json_dict_of, json_schema_json


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Address:
    city: str
    zip: str | None = None


@dataclass
class Category:
    name: str
    children: list[Category] = field(default_factory=list)


@dataclass
class User:
    name: str
    born: datetime.date
    colour: Colour
    home: Address
    id: uuid.UUID
    size: Literal["S", "M"]
    category: Category | None = None
    email: str | None = field(default=None, metadata={"doc": "where to write"})
    tags: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    avatar: bytes = b""


def user() -> User:
    return User("Ann", datetime.date(1990, 5, 17), Colour.BLUE, Address("Oslo"),
                uuid.UUID(int=7), "M", Category("root", [Category("leaf")]), tags=["a"],
                scores={"x": 1.5}, avatar=b"\x00\x01")


def test_schema_is_valid_and_accepts_instances() -> None:
    schema = json_schema_of(User)
    jsonschema.Draft7Validator.check_schema(schema)
    value = json_dict_of(user())
    jsonschema.Draft7Validator(schema).validate(value)
    assert value["born"] == "1990-05-17" and value["colour"] == "blue" and value["avatar"] == "AAE=", \
        "dates, enums and bytes as JSON strings"
    assert schema["title"] == "User" and schema["required"] == ["name", "born", "colour", "home", "id", "size"]
    assert schema["properties"]["email"] == {"oneOf": [{"type": "null"}, {"type": "string"}],
                                             "description": "where to write"}
    assert schema["definitions"]["Category"]["properties"]["children"]["items"] == \
        {"$ref": "#/definitions/Category"}, "a recursive dataclass refers to itself"


@pytest.mark.parametrize("change", [{"name": 3}, {"colour": "green"}, {"home": {}}, {"size": "XL"},
                                    {"tags": [1]}, {"scores": {"x": "y"}}])
def test_schema_rejects_wrong_values(change: dict[str, Any]) -> None:
    value = dict(json_dict_of(user()), **change)
    assert not jsonschema.Draft7Validator(json_schema_of(User)).is_valid(value), f"{change} is refused"


def test_pydantic_models_give_their_own_schema() -> None:
    class Model:
        @classmethod
        def model_json_schema(cls) -> dict[str, Any]:
            return {"type": "object", "title": "Model"}

    assert json_schema_of(Model, title="Renamed") == {
        "type": "object", "title": "Renamed", "$schema": "https://json-schema.org/draft/2020-12/schema"}


def test_not_a_dataclass() -> None:
    with pytest.raises(TypeError):
        json_schema_of(int)


def test_configuration_as_confluent_kafka() -> None:
    schema = json_schema_json(User)
    with pytest.raises(ValueError, match="Unrecognized properties: nope"):
        JSONSerializer(schema, None, conf={"nope": 1})
    with pytest.raises(ValueError, match="validate must be a boolean"):
        JSONDeserializer(schema, conf={"validate": "yes"})
    with pytest.raises(ValueError, match="use.deprecated.format must be a boolean"):
        ProtobufDeserializer(None, {"use.deprecated.format": 1}, schema_registry_client=object())
    with pytest.raises(ValueError, match="schema_registry_client is needed"):
        ProtobufDeserializer(None)


def test_closed_by_default_open_on_request() -> None:
    closed, open_ = json_schema_of(Address), json_schema_of(Address, closed=False)
    assert closed["additionalProperties"] is False, "closed: later versions may add optional fields (BACKWARD)"
    assert "additionalProperties" not in open_
    assert not jsonschema.Draft7Validator(closed).is_valid({"city": "x", "other": 1})
    assert jsonschema.Draft7Validator(open_).is_valid({"city": "x", "other": 1})
