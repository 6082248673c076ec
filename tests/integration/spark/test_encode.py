"""AvroEncoder: Spark structs framed as Confluent Avro, read back by our Python deserializer."""
from __future__ import annotations

import pytest
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from registry.client import SchemaRegistryClient
from registry.serde import AvroDeserializer
from registry.spark import AvroDecoder, AvroEncoder
from tests.integration.spark.conftest import PAYMENT_V2, PaymentTopic

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("avro_decoding")]


def test_decode_then_encode_round_trips(spark: SparkSession, kafka_bootstrap: str,
                                        client: SchemaRegistryClient, payment_topic: PaymentTopic) -> None:
    batch = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka_bootstrap)
             .option("subscribe", payment_topic.topic).load())
    decoded = AvroDecoder.for_subject(client, payment_topic.subject).decode(batch, into="payment")
    encoder = AvroEncoder.for_subject(client, payment_topic.subject)
    assert encoder.schema_id == payment_topic.v2_id
    rows = decoded.orderBy("offset").select(encoder.encode("payment").alias("framed")).collect()
    framed = [bytes(r.framed) for r in rows]
    assert {f[:5] for f in framed} == {b"\x00" + payment_topic.v2_id.to_bytes(4, "big")}, \
        "every value carries the magic byte and the v2 id"
    deserialize = AvroDeserializer(client, PAYMENT_V2)
    ctx = SerializationContext(payment_topic.topic, MessageField.VALUE)
    assert [deserialize(f, ctx) for f in framed] == payment_topic.expected, \
        "a Schema Registry deserializer reads Spark's output as the records that went in (v1 ones upgraded)"


def test_register_and_encode_a_new_schema(spark: SparkSession, client: SchemaRegistryClient) -> None:
    schema = '{"type":"record","name":"Point","fields":[{"name":"x","type":"int"},{"name":"y","type":"int"}]}'
    encoder = AvroEncoder.register(client, "spark-points-value", schema)
    df = spark.range(3).select("id", F.struct(F.col("id").cast("int").alias("x"), F.lit(5).alias("y")).alias("p"))
    out = [bytes(r.v) for r in df.orderBy("id").select(encoder.encode(F.col("p")).alias("v")).collect()]
    deserialize = AvroDeserializer(client)
    assert [deserialize(v, None) for v in out] == [{"x": i, "y": 5} for i in range(3)]
    null = spark.range(1).select(encoder.encode(F.lit(None).cast("struct<x:int,y:int>")).alias("v")).first()
    assert null is not None and null.v is None, "a null struct encodes to a null value (a tombstone)"
