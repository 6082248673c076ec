"""registry.spark with Protobuf values: the Spark type of the reader message, decoding of
two writer versions (ours and confluent-kafka's serializers) from a real Kafka topic in
Structured Streaming and batch, bad records in both modes, foreachBatch learning a new
writer, and encoding back to bytes that confluent-kafka's deserializer reads.
"""
from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import SerializingProducer
from confluent_kafka.schema_registry import protobuf as their_protobuf
from confluent_kafka.serialization import MessageField, SerializationContext, StringSerializer
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from registry.client import SchemaRegistryClient
from registry.serde import ProtobufSerializer
from registry.spark import DecodeMode, ProtobufDecoder, ProtobufEncoder
from tests.integration.spark.conftest import TIMEOUT, binary_frame, create_topic
from tests.integration.spark.test_kafka import kafka_stream
from tests.protobuf_classes import generated, order_v2

pytestmark = pytest.mark.integration

QUERY_TIMEOUT_S = 120


def produce(bootstrap: str, topic: str, serializer: Any, messages: list[Any]) -> None:
    """Produce `messages` keyed by id; block until all are acknowledged (acks=all)."""
    producer = SerializingProducer({"bootstrap.servers": bootstrap, "acks": "all",
                                    "key.serializer": StringSerializer(), "value.serializer": serializer})
    errors: list[Any] = []
    for message in messages:
        producer.produce(topic, key=str(message.id), value=message,
                         on_delivery=lambda err, _msg: errors.append(err) if err else None)
    assert producer.flush(TIMEOUT) == 0, "every record is delivered before the deadline"
    assert errors == [], "and none failed"


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    found = generated(tmp_path_factory.mktemp("protos"))
    found.OrderV2 = order_v2()
    return found


def v1(shop: SimpleNamespace, i: int) -> Any:
    Order = shop.order_pb2.Order
    order = Order(id=i, customer=f"c{i}", lines=[Order.Line(sku="tea", qty=i)],
                  total=shop.common_pb2.Money(currency="EUR", units=i * 10),
                  status=Order.PAID if i % 2 else Order.NEW, labels={"n": str(i)})
    order.placed.seconds = 1_700_000_000 + i
    if i % 3 == 0:
        order.note = f"note {i}"
    return order


def v2(shop: SimpleNamespace, i: int) -> Any:
    return shop.OrderV2(id=i, customer=f"c{i}", channel="web")


def expected_row(shop: SimpleNamespace, message: Any) -> dict[str, Any]:
    """What the v2 reader makes of `message`: every field, in the Spark shape."""
    order = shop.OrderV2.FromString(message.SerializeToString())
    return {
        "id": order.id, "customer": order.customer,
        "lines": [{"sku": line.sku, "qty": line.qty} for line in order.lines],
        "total": {"currency": order.total.currency, "units": order.total.units} if order.HasField("total") else None,
        "placed": order.placed.seconds if order.HasField("placed") else None,
        "status": shop.OrderV2.Status.Name(order.status), "labels": dict(order.labels),
        "note": order.note if order.HasField("note") else None, "channel": order.channel,
    }


def plain(row: Any) -> dict[str, Any]:
    record = row.asDict(recursive=True)
    if record["placed"] is not None:
        record["placed"] = round(record["placed"].timestamp())
    return record


@pytest.fixture(scope="module")
def order_topic(kafka_bootstrap: str, client: SchemaRegistryClient, shop: SimpleNamespace
                ) -> tuple[str, list[Any]]:
    topic = f"spark-pb-{uuid.uuid4().hex[:10]}"
    create_topic(kafka_bootstrap, topic)
    first = [v1(shop, i) for i in range(8)]
    second = [v1(shop, i) for i in range(8, 12)]
    third = [v2(shop, i) for i in range(12, 20)]
    produce(kafka_bootstrap, topic, ProtobufSerializer(shop.order_pb2.Order, client), first)
    produce(kafka_bootstrap, topic, their_protobuf.ProtobufSerializer(shop.order_pb2.Order, client, {}), second)
    produce(kafka_bootstrap, topic, ProtobufSerializer(shop.OrderV2, client), third)
    assert client.get_versions(f"{topic}-value") == [1, 2], "v1 (by both serializers), then v2"
    return topic, first + second + third


def test_spark_type_of_the_reader_message(client: SchemaRegistryClient, order_topic: Any) -> None:
    topic, _ = order_topic
    decoder = ProtobufDecoder.for_subject(client, f"{topic}-value")
    assert decoder.message == "shop.Order" and len(decoder.writer_ids) == 2
    assert decoder.spark_type == T.StructType([
        T.StructField("id", T.LongType()), T.StructField("customer", T.StringType()),
        T.StructField("lines", T.ArrayType(T.StructType([T.StructField("sku", T.StringType()),
                                                         T.StructField("qty", T.IntegerType())]))),
        T.StructField("total", T.StructType([T.StructField("currency", T.StringType()),
                                             T.StructField("units", T.LongType())])),
        T.StructField("placed", T.TimestampType()), T.StructField("status", T.StringType()),
        T.StructField("labels", T.MapType(T.StringType(), T.StringType())),
        T.StructField("note", T.StringType()), T.StructField("channel", T.StringType()),
    ]), "spark-protobuf's mapping: int32 int, int64 bigint, enum string, Timestamp timestamp, map map"


def test_streaming_query_decodes_both_versions(spark: SparkSession, kafka_bootstrap: str,
                                               client: SchemaRegistryClient, order_topic: Any,
                                               shop: SimpleNamespace, tmp_path: Path) -> None:
    topic, messages = order_topic
    decoder = ProtobufDecoder.for_subject(client, f"{topic}-value")
    stream = kafka_stream(spark, kafka_bootstrap, topic, maxOffsetsPerTrigger="7")
    decoded = decoder.decode(stream, "value", into="order").select("offset", "order")
    name = f"orders_{uuid.uuid4().hex[:8]}"
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
    assert [plain(row.order) for row in rows] == [expected_row(shop, m) for m in messages], \
        "v1 records (ours and confluent-kafka's) and v2 records, all in the v2 reader's shape"


def test_batch_read_and_bad_records(spark: SparkSession, kafka_bootstrap: str, client: SchemaRegistryClient,
                                    order_topic: Any, shop: SimpleNamespace) -> None:
    topic, messages = order_topic
    decoder = ProtobufDecoder.for_subject(client, f"{topic}-value", version=1)
    batch = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka_bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("endingOffsets", "latest").load())
    rows = decoder.decode(batch, "value", into="o", mode=DecodeMode.PERMISSIVE).orderBy("offset").collect()
    assert [row.value_error for row in rows] == [None] * 20, "no record of the topic is bad"
    assert [row.o.id for row in rows] == [m.id for m in messages], "v2 records read with the v1 reader too"
    assert "channel" not in rows[0].o.asDict(), "in v1's shape"

    good = bytes(rows[0].value)
    ctx = SerializationContext(f"{topic}-refunds", MessageField.VALUE)
    refund = ProtobufSerializer(shop.order_pb2.Refund, client)(shop.order_pb2.Refund(order_id=1), ctx)
    refund_as_order = good[:5] + refund[5:]  # a known id, but the indexes name Refund
    frame = binary_frame(spark, [good, None, b"\x00\x00", b"\x01" + good[1:], b"\x00\x7f\xff\xff\xff\x00",
                                 good[:5] + b"\x08\x02", refund_as_order, good[:6] + b"\x0a\xff"])
    out = decoder.decode(frame, mode="PERMISSIVE").orderBy("n").collect()
    assert out[0].value_decoded.id == messages[0].id and out[0].value_error is None
    assert out[1].value_decoded is None and out[1].value_error is None, "a tombstone stays null, not bad"
    reasons = [row.value_error.split(":")[0].split(" (")[0] for row in out[2:]]
    assert reasons == ["truncated", "unknown magic byte 0x01", "unknown schema id 2147483647",
                       "bad message indexes", "message type shop.Refund", "truncated or corrupt payload"], \
        [row.value_error for row in out[2:]]
    assert all(row.value_decoded is None for row in out[2:]), "a bad record's struct is null"
    with pytest.raises(Exception, match="registry.spark: cannot decode column 'value': unknown schema id"):
        decoder.decode(binary_frame(spark, [b"\x00\x7f\xff\xff\xff\x00"])).collect()


def test_for_each_batch_learns_a_new_writer(spark: SparkSession, kafka_bootstrap: str,
                                            client: SchemaRegistryClient, shop: SimpleNamespace,
                                            tmp_path: Path) -> None:
    topic = f"spark-pb-mid-{uuid.uuid4().hex[:10]}"
    create_topic(kafka_bootstrap, topic)
    produce(kafka_bootstrap, topic, ProtobufSerializer(shop.order_pb2.Order, client), [v1(shop, i) for i in range(3)])
    decoder = ProtobufDecoder.for_subject(client, f"{topic}-value")
    seen: list[int] = []

    def collect(batch: DataFrame, _epoch: int) -> None:
        seen.extend(row.o.id for row in batch.orderBy("offset").select("o").collect())

    decoding = decoder.for_each_batch(collect, "value", into="o")

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
    produce(kafka_bootstrap, topic, ProtobufSerializer(shop.OrderV2, client), [v2(shop, i) for i in range(3, 6)])
    run()
    assert seen == list(range(6)), "the v2 writer registered mid-stream was learned, every record read once"
    assert len(decoding.decoder.writer_ids) == 2


def test_encode_back_to_framed_protobuf(spark: SparkSession, client: SchemaRegistryClient,
                                        order_topic: Any, shop: SimpleNamespace) -> None:
    topic, messages = order_topic
    subject = f"{topic}-value"
    decoder = ProtobufDecoder.for_subject(client, subject)
    encoder = ProtobufEncoder.for_subject(client, subject)
    frame = spark.createDataFrame([(m.SerializeToString(),) for m in messages], "payload binary")
    framed = frame.selectExpr(f"concat(X'{encoder._prefix.hex()}', payload) AS value")
    encoded = decoder.decode(framed, into="o").select(encoder.encode("o").alias("value")).collect()
    theirs = their_protobuf.ProtobufDeserializer(shop.OrderV2, {})
    ctx = SerializationContext(topic, MessageField.VALUE)
    assert [theirs(bytes(row.value), ctx) for row in encoded] == \
        [shop.OrderV2.FromString(m.SerializeToString()) for m in messages], \
        "decode then encode gives back every message; confluent-kafka's deserializer reads the bytes"
