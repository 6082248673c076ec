"""Kafka serializers and deserializers that speak Confluent's wire format.

    from registry.serde import AvroSerializer, AvroDeserializer

Drop-ins for confluent-kafka's Avro serdes, with the registry asked once per
(subject, schema) and nothing but fastavro per message. JSON Schema and Protobuf
follow when the registry supports those schema types.
"""
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

__all__ = [
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
