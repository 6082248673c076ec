"""registry.spark with JSON Schema values: the Spark type derived from the schema, decoding
of two writer versions from a real Kafka topic (Structured Streaming and batch), bad
records in both modes, foreachBatch learning a new writer id, and encoding back to
bytes that confluent-kafka's JSON deserializer reads.
"""
from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import json_schema as their_json
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from registry.client import SchemaRegistryClient
from registry.serde import JSONSerializer
from registry.spark import DecodeMode, JsonSchemaDecoder, JsonSchemaEncoder
from tests.integration.spark.conftest import binary_frame, create_topic, produce
from tests.integration.spark.test_kafka import kafka_stream

pytestmark = pytest.mark.integration

QUERY_TIMEOUT_S = 120

READING_V1 = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Reading", "type": "object",
    "properties": {
        "id": {"type": "integer"}, "sensor": {"type": "string"},
        "value": {"type": "number"},
        "place": {"$ref": "#/definitions/Place"},
    },
    "required": ["id", "sensor"],
    # Closed: under Confluent's rules v2 may then add optional properties (BACKWARD).
    "additionalProperties": False,
    "definitions": {"Place": {"type": "object", "properties": {"lat": {"type": "number"},
                                                               "lon": {"type": "number"}}}},
}
# v2 adds optional fields: an array, a map, a nullable string (compatible: v1 is closed).
READING_V2 = {
    **READING_V1,
    "properties": {
        **READING_V1["properties"],
        "tags": {"type": "array", "items": {"type": "string"}},
        "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
        "note": {"type": ["string", "null"]},
    },
}
SPARK_V2 = T.StructType([
    T.StructField("id", T.LongType()), T.StructField("sensor", T.StringType()),
    T.StructField("value", T.DoubleType()),
    T.StructField("place", T.StructType([T.StructField("lat", T.DoubleType()), T.StructField("lon", T.DoubleType())])),
    T.StructField("tags", T.ArrayType(T.StringType())),
    T.StructField("attrs", T.MapType(T.StringType(), T.LongType())),
    T.StructField("note", T.StringType()),
])


def v1(i: int) -> dict[str, Any]:
    return {"id": i, "sensor": f"s{i}", "value": i / 4, "place": {"lat": 1.5, "lon": -i / 2}}


def v2(i: int) -> dict[str, Any]:
    return {"id": i, "sensor": f"s{i}", "value": i / 8, "tags": ["a", str(i)], "attrs": {"n": i},
            "note": None if i % 2 else f"n{i}"}


def as_v2(record: dict[str, Any]) -> dict[str, Any]:
    return {"id": None, "sensor": None, "value": None, "place": None, "tags": None, "attrs": None,
            "note": None, **record}


@pytest.fixture(scope="module")
def reading_topic(kafka_bootstrap: str, client: SchemaRegistryClient) -> tuple[str, list[dict[str, Any]]]:
    topic = f"spark-json-{uuid.uuid4().hex[:10]}"
    create_topic(kafka_bootstrap, topic)
    records = [v1(i) for i in range(10)] + [v2(i) for i in range(10, 20)]
    produce(kafka_bootstrap, topic, JSONSerializer(json.dumps(READING_V1), client), records[:10])
    produce(kafka_bootstrap, topic, JSONSerializer(json.dumps(READING_V2), client), records[10:])
    assert client.get_versions(f"{topic}-value") == [1, 2]
    return topic, records


def test_spark_type_follows_the_reader_schema(client: SchemaRegistryClient, reading_topic: Any) -> None:
    topic, _ = reading_topic
    decoder = JsonSchemaDecoder.for_subject(client, f"{topic}-value")
    assert decoder.spark_type == SPARK_V2, "v2's properties, $ref resolved, nullable unions unwrapped"
    assert len(decoder.writer_ids) == 2, "every version of the subject is a known writer"


def test_streaming_query_decodes_both_versions(spark: SparkSession, kafka_bootstrap: str,
                                               client: SchemaRegistryClient, reading_topic: Any,
                                               tmp_path: Path) -> None:
    topic, records = reading_topic
    decoder = JsonSchemaDecoder.for_subject(client, f"{topic}-value")
    stream = kafka_stream(spark, kafka_bootstrap, topic, maxOffsetsPerTrigger="7")
    decoded = decoder.decode(stream, "value", into="reading").select("offset", "reading")
    name = f"readings_{uuid.uuid4().hex[:8]}"
    query = (decoded.writeStream.format("memory").queryName(name).outputMode("append")
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), "the availableNow query ends once it read the topic"
        assert query.exception() is None
        assert len(query.recentProgress) >= 3, "maxOffsetsPerTrigger=7 split 20 records into micro-batches"
        rows = spark.table(name).orderBy("offset").collect()
    finally:
        query.stop()
    assert [row.offset for row in rows] == list(range(20)), "every record arrives once"
    assert [row.reading.asDict(recursive=True) for row in rows] == [as_v2(r) for r in records], \
        "v1 records in v2's shape (new fields null), v2 records as written"


def test_batch_read_with_bad_records(spark: SparkSession, kafka_bootstrap: str, client: SchemaRegistryClient,
                                     reading_topic: Any) -> None:
    topic, records = reading_topic
    decoder = JsonSchemaDecoder.for_subject(client, f"{topic}-value", version=1)
    batch = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka_bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("endingOffsets", "latest").load())
    rows = decoder.decode(batch, "value", into="r", mode=DecodeMode.PERMISSIVE).orderBy("offset").collect()
    assert [row.value_error for row in rows] == [None] * 20, "no record of the topic is bad"
    assert [row.r.id for row in rows] == [r["id"] for r in records], "v2 records read with the v1 reader too"
    assert "tags" not in rows[0].r.asDict(), "in v1's shape"

    header = rows[0].value[:5]
    unknown = b"\x00\x7f\xff\xff\xff" + b'{"id": 1}'
    frame = binary_frame(spark, [bytes(header) + b'{"id": 5, "sensor": "x"}', None, b"\x00\x00",
                                 b"\x01" + bytes(header[1:]) + b"{}", unknown, bytes(header) + b"not json",
                                 bytes(header) + b'{"id": "five"}', bytes(header) + b"[1]", bytes(header)])
    out = decoder.decode(frame, mode="PERMISSIVE").orderBy("n").collect()
    assert out[0].value_decoded.id == 5 and out[0].value_error is None
    assert out[1].value_decoded is None and out[1].value_error is None, "a tombstone stays null, not bad"
    reasons = [row.value_error for row in out[2:]]
    assert [r.split(":")[0] for r in reasons] == [
        "truncated", "unknown magic byte 0x01 (expected 0x00)", "unknown schema id 2147483647",
        "malformed payload", "malformed payload", "malformed payload", "malformed payload"], reasons
    assert all(row.value_decoded is None for row in out[2:]), "a bad record's struct is null"
    with pytest.raises(Exception, match="registry.spark: cannot decode column 'value': unknown schema id"):
        decoder.decode(binary_frame(spark, [unknown])).collect()


def test_for_each_batch_learns_a_new_writer(spark: SparkSession, kafka_bootstrap: str,
                                            client: SchemaRegistryClient, tmp_path: Path) -> None:
    topic = f"spark-json-mid-{uuid.uuid4().hex[:10]}"
    create_topic(kafka_bootstrap, topic)
    produce(kafka_bootstrap, topic, JSONSerializer(json.dumps(READING_V1), client), [v1(i) for i in range(3)])
    decoder = JsonSchemaDecoder.for_subject(client, f"{topic}-value")
    seen: list[int] = []

    def collect(batch: DataFrame, _epoch: int) -> None:
        seen.extend(row.r.id for row in batch.orderBy("offset").select("r").collect())

    decoding = decoder.for_each_batch(collect, "value", into="r")

    def run() -> None:
        query = (kafka_stream(spark, kafka_bootstrap, topic).writeStream.foreachBatch(decoding)
                 .option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(availableNow=True).start())
        try:
            assert query.awaitTermination(QUERY_TIMEOUT_S)
            assert query.exception() is None
        finally:
            query.stop()

    run()
    produce(kafka_bootstrap, topic, JSONSerializer(json.dumps(READING_V2), client), [v2(i) for i in range(3, 6)])
    run()
    assert seen == list(range(6)), "the v2 writer registered mid-stream was learned, every record read once"
    assert len(decoding.decoder.writer_ids) == 2


def test_encode_back_to_framed_json(spark: SparkSession, client: SchemaRegistryClient, reading_topic: Any) -> None:
    topic, records = reading_topic
    subject = f"{topic}-value"
    encoder = JsonSchemaEncoder.for_subject(client, subject)
    decoder = JsonSchemaDecoder.for_subject(client, subject)
    frame = spark.createDataFrame([as_v2(r) for r in records], SPARK_V2)
    encoded = frame.select(encoder.encode(F.struct(*frame.columns)).alias("value")).collect()
    theirs = their_json.JSONDeserializer(None, schema_registry_client=client)
    ctx = SerializationContext(topic, MessageField.VALUE)
    assert [theirs(bytes(row.value), ctx) for row in encoded] == [
        {k: v for k, v in r.items() if v is not None} for r in records], \
        "confluent-kafka's deserializer reads (and validates) the encoded values; null fields left out"
    assert all(bytes(row.value)[:5] == bytes(encoder._header) for row in encoded)
    again = decoder.decode(spark.createDataFrame([(bytes(row.value),) for row in encoded], "value binary"))
    assert [row.value_decoded.asDict(recursive=True) for row in again.collect()] == [as_v2(r) for r in records], \
        "and our decoder reads them back as they were"
