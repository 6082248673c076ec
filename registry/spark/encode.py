"""Encode a struct column into Confluent-framed Avro, on the JVM.

    encoder = AvroEncoder.for_subject(client, "orders-value")                 # the latest version
    out = orders.select(F.col("id").cast("string").alias("key"),
                        encoder.encode(F.struct("id", "amount", "currency")).alias("value"))
    out.write.format("kafka").option("topic", "orders")...

Each value is magic byte 0, the schema id (4 bytes, big-endian) and spark-avro's
`to_avro` of the struct with the registered schema, exactly what Confluent's
serializers write, so any Schema Registry deserializer reads it. Struct fields match
the schema's fields by name. A null struct encodes to a null value (a tombstone).
"""
from __future__ import annotations

from typing import Any

from confluent_kafka.schema_registry import Schema
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import to_avro

from registry.serde import wire
from registry.spark.schemas import RegisteredAvro, SchemaLookup, Version

__all__ = ["AvroEncoder"]


class AvroEncoder:
    """Writes one registered Avro schema's records in Confluent's wire format.

    Building one blocks on the registry (once) and raises what the client raises;
    `encode` does not touch it. A struct that does not fit the schema (a missing
    field, a null in a non-null field) fails the Spark job with spark-avro's error.
    """

    def __init__(self, schema: RegisteredAvro) -> None:
        """Prefer `for_subject`, `for_schema_id` and `register`."""
        self.schema = schema
        self._header = bytearray(wire.header(schema.schema_id))

    @classmethod
    def for_subject(cls, client: Any, subject: str, version: Version = "latest") -> AvroEncoder:
        """Write with `subject`'s `version` (a number or "latest", read now and kept)."""
        return cls(SchemaLookup(client).by_version(subject, version))

    @classmethod
    def for_schema_id(cls, client: Any, schema_id: int) -> AvroEncoder:
        """Write with the schema registered as `schema_id`."""
        return cls(SchemaLookup(client).by_id(schema_id))

    @classmethod
    def register(cls, client: Any, subject: str, schema_str: str, *, normalize: bool = False
                 ) -> AvroEncoder:
        """Register `schema_str` under `subject` (or find it there) and write with it.
        Raises SchemaRegistryError if the subject's compatibility level rejects it."""
        schema_id = client.register_schema(subject, Schema(schema_str, "AVRO"), normalize)
        return cls.for_schema_id(client, schema_id)

    @property
    def schema_id(self) -> int:
        return self.schema.schema_id

    def encode(self, data: Column | str) -> Column:
        """A binary column: `data` (a struct column, or its name) framed as Confluent Avro."""
        column = F.col(data) if isinstance(data, str) else data
        if self.schema.is_raw_bytes:
            # Confluent writes a top-level bytes value raw, without Avro's length prefix.
            return F.concat(F.lit(self._header), column)
        return F.concat(F.lit(self._header), to_avro(column, self.schema.json))
