"""Kafka serializers and deserializers that speak Confluent's wire format.

    from registry.serde import AvroSerializer, AvroDeserializer

Drop-ins for confluent-kafka's Avro serdes, with the registry asked once per
(subject, schema) and nothing but fastavro per message. The JSON Schema and Protobuf
serdes (`JSONSerializer`, `JSONDeserializer`, `ProtobufSerializer`,
`ProtobufDeserializer`) and `AnyFormatDeserializer` (any of the three, told by the
registry) need the `schema-types` extra (jsonschema, protobuf, protoc); they are
imported on first use, so that an Avro-only producer installs without them.
"""
import importlib
from typing import Any

from registry.serde.avro import AvroDeserializer, AvroSerializer
from registry.serde.dataclass_schema import (
    TIME_MICROS,
    TIME_MILLIS,
    TIMESTAMP_MICROS,
    TIMESTAMP_MILLIS,
    AvroDecimal,
    AvroType,
    Float32,
    Int32,
    Logical,
    avro_schema_json,
    avro_schema_of,
    dataclass_from_dict,
    dataclass_to_dict,
)
from registry.serde.naming import (
    RecordNameStrategy,
    TopicNameStrategy,
    TopicRecordNameStrategy,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
    topic_subject_name_strategy,
)
from registry.serde.wire import TruncatedPayload, UnknownMagicByte, UnknownSchemaId

_LAZY = {
    "JSONSerializer": "registry.serde.json_schema",
    "JSONDeserializer": "registry.serde.json_schema",
    "ProtobufSerializer": "registry.serde.protobuf",
    "ProtobufDeserializer": "registry.serde.protobuf",
    "register_message_type": "registry.serde.protobuf",
    "AnyFormatDeserializer": "registry.serde.any_format",
    "json_schema_of": "registry.serde.dataclass_json_schema",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    return getattr(importlib.import_module(module), name)


__all__ = [
    "AnyFormatDeserializer",
    "JSONDeserializer",
    "JSONSerializer",
    "ProtobufDeserializer",
    "ProtobufSerializer",
    "json_schema_of",
    "register_message_type",
    "AvroDecimal",
    "AvroDeserializer",
    "AvroSerializer",
    "AvroType",
    "Float32",
    "Int32",
    "Logical",
    "RecordNameStrategy",
    "TIMESTAMP_MICROS",
    "TIMESTAMP_MILLIS",
    "TIME_MICROS",
    "TIME_MILLIS",
    "TopicNameStrategy",
    "TopicRecordNameStrategy",
    "TruncatedPayload",
    "UnknownMagicByte",
    "UnknownSchemaId",
    "avro_schema_json",
    "avro_schema_of",
    "dataclass_from_dict",
    "dataclass_to_dict",
    "record_subject_name_strategy",
    "topic_record_subject_name_strategy",
    "topic_subject_name_strategy",
]
