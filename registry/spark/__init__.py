"""Confluent-framed Avro in PySpark, batch and Structured Streaming, decoded on the JVM.

    from registry.client import SchemaRegistryClient
    from registry.spark import AvroDecoder, AvroEncoder, DecodeMode, configure

    spark = configure(SparkSession.builder).getOrCreate()    # our jar, the Kafka and Avro connectors
    client = SchemaRegistryClient({"url": "http://localhost:8081"})
    decoder = AvroDecoder.for_subject(client, "orders-value")            # reader: latest version
    orders = decoder.decode(spark.readStream.format("kafka")...load(), "value", into="order")

`AvroDecoder` (decode.py) dispatches on each record's writer schema id to one
spark-avro `from_avro` per writer schema, resolving every writer version into the
reader schema's shape; `AvroEncoder` (encode.py) frames `to_avro` output; schemas.py
reads schemas from the registry on the driver, once per id. `JsonSchemaDecoder` and
`JsonSchemaEncoder` (json_schema.py) do the same for JSON Schema values with Spark's
`from_json`/`to_json`, the Spark type derived from the schema; `ProtobufDecoder` and
`ProtobufEncoder` (protobuf.py) for Protobuf, in a Python UDF (spark-protobuf's jar is
not on the Maven Central we fetch from). Needs the `spark` extra
(pyspark) and the connectors: `configure` (configure.py) adds them as Maven packages, or
from a local folder (`make infra-fetch`, see jars.py), with registry.spark's jar, which
the wheel ships.
"""
from __future__ import annotations

from registry.spark.configure import configure, spark_packages
from registry.spark.decode import AvroDecoder, BatchDecoding, DecodeMode
from registry.spark.encode import AvroEncoder
from registry.spark.jars import connector_jars
from registry.spark.json_schema import JsonSchemaDecoder, JsonSchemaEncoder, SchemaNotJson, spark_type_of
from registry.spark.protobuf import ProtobufDecoder, ProtobufEncoder, SchemaNotProtobuf
from registry.spark.schemas import RegisteredAvro, SchemaLookup, SchemaNotAvro

__all__ = [
    "AvroDecoder",
    "AvroEncoder",
    "BatchDecoding",
    "DecodeMode",
    "JsonSchemaDecoder",
    "JsonSchemaEncoder",
    "ProtobufDecoder",
    "ProtobufEncoder",
    "SchemaNotProtobuf",
    "SchemaNotJson",
    "RegisteredAvro",
    "SchemaLookup",
    "SchemaNotAvro",
    "configure",
    "connector_jars",
    "spark_packages",
    "spark_type_of",
]
