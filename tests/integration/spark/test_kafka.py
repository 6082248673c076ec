"""registry.spark on a real Kafka topic holding records of two schema versions.

Structured Streaming (Kafka source, availableNow trigger, memory sink), a batch read
of the same topic, and foreachBatch learning a writer id that appeared after the
decoder was built. Every row is checked against what was produced.
"""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from registry.client import SchemaRegistryClient
from registry.serde import AvroSerializer
from registry.spark import AvroDecoder, DecodeMode
from tests.integration.spark.conftest import (
    PAYMENT_V1,
    PAYMENT_V2,
    PaymentTopic,
    binary_frame,
    create_topic,
    payment_v1,
    payment_v2,
    produce,
)

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("avro_decoding")]

QUERY_TIMEOUT_S = 120


def kafka_stream(spark: SparkSession, bootstrap: str, topic: str, **options: str) -> DataFrame:
    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def plain(row: Any) -> dict[str, Any]:
    """A decoded payment row as the dict it was produced from (timestamps as epoch ms)."""
    record = row.asDict(recursive=True)
    record["at"] = round(record["at"].timestamp() * 1000)
    return record


def expected_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [dict(r, at=round(r["at"].timestamp() * 1000)) for r in records]


def test_the_struct_has_the_reader_schema_types(client: SchemaRegistryClient, payment_topic: PaymentTopic,
                                                spark: SparkSession) -> None:
    decoder = AvroDecoder.for_subject(client, payment_topic.subject)
    assert decoder.writer_ids == (payment_topic.v1_id, payment_topic.v2_id), \
        "for_subject knows every version of the subject as a writer"
    empty = binary_frame(spark, [])
    struct = decoder.decode(empty).schema["value_decoded"].dataType
    assert isinstance(struct, T.StructType)
    types = {f.name: f.dataType for f in struct.fields}
    assert types == {
        "id": T.LongType(), "amount": T.DecimalType(10, 2), "currency": T.StringType(),
        "at": T.TimestampType(), "status": T.StringType(), "memo": T.StringType(),
        "labels": T.ArrayType(T.StringType()), "attrs": T.MapType(T.StringType(), T.LongType()),
    }, "Spark types follow the v2 reader schema (logical types included), without the decoder's marker field"
    assert all(f.nullable for f in struct.fields), "every field may be null: a bad record's struct is null"


def test_streaming_query_decodes_both_versions_into_the_latest(
        spark: SparkSession, kafka_bootstrap: str, client: SchemaRegistryClient,
        payment_topic: PaymentTopic, tmp_path: Path) -> None:
    decoder = AvroDecoder.for_subject(client, payment_topic.subject)  # reader: v2, the latest
    stream = kafka_stream(spark, kafka_bootstrap, payment_topic.topic, maxOffsetsPerTrigger="10")
    decoded = decoder.decode(stream, "value", into="payment").select("offset", "payment")
    name = f"payments_{uuid.uuid4().hex[:8]}"
    query = (decoded.writeStream.format("memory").queryName(name).outputMode("append")
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), "the availableNow query ends once it read the topic"
        assert query.exception() is None
        assert len(query.recentProgress) >= 3, "maxOffsetsPerTrigger=10 split 24 records into micro-batches"
        rows = spark.table(name).orderBy("offset").collect()
    finally:
        query.stop()
    assert [row.offset for row in rows] == list(range(24)), "every record arrives once"
    assert [plain(row.payment) for row in rows] == expected_rows(payment_topic.expected), \
        "v1 records in v2's shape (defaults filled in), v2 records as written"


def test_batch_read_of_the_topic(spark: SparkSession, kafka_bootstrap: str, client: SchemaRegistryClient,
                                 payment_topic: PaymentTopic) -> None:
    decoder = AvroDecoder.for_subject(client, payment_topic.subject, version=2)
    batch = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka_bootstrap)
             .option("subscribe", payment_topic.topic)
             .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    rows = (decoder.decode(batch, "value", into="payment", mode=DecodeMode.PERMISSIVE)
            .orderBy("offset").select("key", "payment", "value_error").collect())
    assert [row.value_error for row in rows] == [None] * 24, "no record is bad"
    assert [row.key.decode() for row in rows] == [str(r["id"]) for r in payment_topic.records]
    assert [plain(row.payment) for row in rows] == expected_rows(payment_topic.expected), \
        "a batch read decodes exactly what the stream does"


def test_for_each_batch_learns_a_writer_registered_after_the_decoder(
        spark: SparkSession, kafka_bootstrap: str, client: SchemaRegistryClient, tmp_path: Path) -> None:
    topic = f"spark-midstream-{uuid.uuid4().hex[:10]}"
    create_topic(kafka_bootstrap, topic)
    produce(kafka_bootstrap, topic, AvroSerializer(client, PAYMENT_V1), [payment_v1(i) for i in range(5)])
    v1_id = client.get_version(f"{topic}-value", 1).schema_id
    # Built while only v1 exists; v1 as the reader, so v2 records are read in v1's shape.
    decoder = AvroDecoder.for_schema_id(client, v1_id)
    seen: list[dict[str, Any]] = []

    def collect(batch: DataFrame, _epoch: int) -> None:
        seen.extend(plain(row.payment) for row in batch.orderBy("offset").select("payment").collect())

    decoding = decoder.for_each_batch(collect, "value", into="payment")

    def run_until_caught_up() -> None:
        query = (kafka_stream(spark, kafka_bootstrap, topic).writeStream.foreachBatch(decoding)
                 .option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(availableNow=True).start())
        try:
            assert query.awaitTermination(QUERY_TIMEOUT_S), "the availableNow query ends"
            assert query.exception() is None
        finally:
            query.stop()

    run_until_caught_up()
    assert decoding.decoder.writer_ids == (v1_id,)
    # A new version appears mid-stream; the same foreachBatch function meets it in a later batch.
    produce(kafka_bootstrap, topic, AvroSerializer(client, PAYMENT_V2), [payment_v2(i) for i in range(5, 9)])
    v2_id = client.get_version(f"{topic}-value", 2).schema_id
    run_until_caught_up()
    assert decoding.decoder.writer_ids == (v1_id, v2_id), "the batch's new writer id was fetched and used"
    v1_fields = {"id", "amount", "currency", "at", "status"}
    expected = [{k: v for k, v in r.items() if k in v1_fields}
                for r in [payment_v1(i) for i in range(5)] + [payment_v2(i) for i in range(5, 9)]]
    assert seen == expected_rows(expected), "both versions decoded into the v1 reader's shape, once each"
