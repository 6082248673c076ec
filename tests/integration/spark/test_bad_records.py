"""Bad records in both modes: a magic byte other than 0, an unknown id, a payload cut
short, a message shorter than the header, and a writer the reader cannot read.

PERMISSIVE gives a null struct, the reason, and the raw bytes untouched; FAILFAST
fails the job with a message naming the problem. Null values (tombstones) are good.
"""
from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from registry.client import Schema, SchemaReference, SchemaRegistryClient
from registry.serde import AvroSerializer
from registry.spark import AvroDecoder, DecodeMode
from tests.integration.spark.conftest import PAYMENT_V1, PAYMENT_V2, binary_frame, payment_v1, payment_v2

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("avro_decoding")]

UNKNOWN_ID = 987_654


def framed(client: SchemaRegistryClient, schema: str, record: dict[str, Any], topic: str) -> bytes:
    serialize = AvroSerializer(client, schema)
    data = serialize(record, SerializationContext(topic, MessageField.VALUE))
    assert data is not None
    return data


@pytest.fixture(scope="module")
def samples(client: SchemaRegistryClient) -> dict[str, Any]:
    """Good and bad messages for one subject with v1 and v2 registered."""
    topic = f"spark-bad-{uuid.uuid4().hex[:10]}"
    v1 = framed(client, PAYMENT_V1, payment_v1(1), topic)
    v2 = framed(client, PAYMENT_V2, payment_v2(2), topic)
    return {
        "subject": f"{topic}-value",
        "good": [v1, v2, None],
        "bad": {
            "magic": b"\x01" + v2[1:],
            "unknown id": b"\x00" + UNKNOWN_ID.to_bytes(4, "big") + v2[5:],
            "payload": v2[:9],  # header + 4 bytes of a much longer record
            "short": v2[:3],
        },
    }


def test_permissive_keeps_bad_records_as_null_with_a_reason(
        spark: SparkSession, client: SchemaRegistryClient, samples: dict[str, Any]) -> None:
    decoder = AvroDecoder.for_subject(client, samples["subject"])
    bad = samples["bad"]
    values = [*samples["good"], *bad.values()]
    rows = (decoder.decode(binary_frame(spark, values), mode=DecodeMode.PERMISSIVE)
            .orderBy("n").collect())
    assert [bytes(r.value) if r.value is not None else None for r in rows] == values, \
        "the raw bytes stay as they were, for a dead-letter sink"
    good, broken = rows[:3], rows[3:]
    assert [r.value_decoded.id for r in good[:2]] == [1, 2] and good[2].value_decoded is None
    assert [r.value_error for r in good] == [None, None, None], "good records and tombstones have no error"
    assert [r.value_decoded for r in broken] == [None] * 4, "a bad record's struct is null, not all-null fields"
    errors = dict(zip(bad, (r.value_error for r in broken)))
    assert errors["magic"].startswith("unknown magic byte 0x01 (expected 0x00)")
    assert errors["unknown id"].startswith(f"unknown schema id {UNKNOWN_ID}: not a writer schema this decoder knows")
    assert errors["payload"] == \
        f"truncated or corrupt payload: 4 bytes of Avro do not decode with writer schema id {decoder.writer_ids[1]}"
    assert errors["short"] == "truncated: the message has 3 bytes, fewer than the 5-byte Schema Registry header"


@pytest.mark.parametrize("kind, message", [
    ("magic", "unknown magic byte 0x01 (expected 0x00)"),
    ("unknown id", f"unknown schema id {UNKNOWN_ID}: not a writer schema this decoder knows"),
    ("payload", "truncated or corrupt payload: 4 bytes of Avro do not decode with writer schema id"),
    ("short", "truncated: the message has 3 bytes"),
])
def test_failfast_names_the_problem(spark: SparkSession, client: SchemaRegistryClient,
                                   samples: dict[str, Any], kind: str, message: str) -> None:
    decoder = AvroDecoder.for_subject(client, samples["subject"])
    df = decoder.decode(binary_frame(spark, [*samples["good"], samples["bad"][kind]]))
    with pytest.raises(PySparkException) as failure:
        df.collect()
    text = str(failure.value)
    assert "registry.spark: cannot decode column 'value': " + message in text, text


def test_failfast_passes_good_records(spark: SparkSession, client: SchemaRegistryClient,
                                      samples: dict[str, Any]) -> None:
    decoder = AvroDecoder.for_subject(client, samples["subject"])
    rows = decoder.decode(binary_frame(spark, samples["good"]), into="p").orderBy("n").collect()
    assert [r.p.id if r.p else None for r in rows] == [1, 2, None], "FAILFAST only fails on bad records"


def test_a_writer_the_reader_cannot_read_is_a_bad_record(
        spark: SparkSession, client: SchemaRegistryClient) -> None:
    subject = f"spark-incompatible-{uuid.uuid4().hex[:10]}-value"
    topic = subject.removesuffix("-value")
    client.set_compatibility(subject, "NONE")
    old = framed(client, '{"type":"record","name":"R","fields":[{"name":"x","type":"string"}]}', {"x": "a"}, topic)
    new = framed(client, '{"type":"record","name":"R","fields":[{"name":"x","type":"long"}]}', {"x": 7}, topic)
    decoder = AvroDecoder.for_subject(client, subject)  # reader: the long version
    old_id = int.from_bytes(old[1:5], "big")
    rows = decoder.decode(binary_frame(spark, [old, new]), mode="PERMISSIVE").orderBy("n").collect()
    assert rows[1].value_decoded.x == 7 and rows[1].value_error is None
    assert rows[0].value_decoded is None
    assert rows[0].value_error.startswith(f"incompatible writer schema id {old_id}: the reader schema"), \
        "a string cannot be read as a long: said up front, not left to fail inside Avro"


def test_references_are_inlined_for_spark(spark: SparkSession, client: SchemaRegistryClient) -> None:
    base = uuid.uuid4().hex[:10]
    money = '{"type":"record","name":"Money","namespace":"m","fields":[{"name":"cents","type":"long"}]}'
    client.register_schema(f"money-{base}", Schema(money, "AVRO"))
    order = ('{"type":"record","name":"Order","namespace":"o","fields":['
             '{"name":"total","type":"m.Money"},{"name":"tax","type":"m.Money"}]}')
    order_id = client.register_schema(
        f"order-{base}-value", Schema(order, "AVRO", [SchemaReference("m.Money", f"money-{base}", 1)]))
    decoder = AvroDecoder.for_schema_id(client, order_id)
    # Money written out once, at its first use, and by name at the second.
    assert decoder.reader.json.count('"name":"m.Money"') == 1
    payload = bytes([0x00]) + order_id.to_bytes(4, "big") + bytes([0x14, 0x04])  # zigzag 10, 2
    row = decoder.decode(binary_frame(spark, [payload])).collect()[0]
    assert row.value_decoded.asDict(recursive=True) == {"total": {"cents": 10}, "tax": {"cents": 2}}


def test_a_reader_whose_fields_may_all_be_null_tells_an_all_null_record_from_a_bad_one(
        spark: SparkSession, client: SchemaRegistryClient) -> None:
    topic = f"spark-all-nullable-{uuid.uuid4().hex[:10]}"
    schema = ('{"type":"record","name":"Maybe","fields":[{"name":"a","type":["null","long"],"default":null},'
              '{"name":"b","type":["null","string"],"default":null}]}')
    empty = framed(client, schema, {"a": None, "b": None}, topic)
    full = framed(client, schema, {"a": 3, "b": "x"}, topic)
    corrupt = empty[:5] + b"\x08"  # union branch 4 of 2
    decoder = AvroDecoder.for_subject(client, f"{topic}-value")
    rows = decoder.decode(binary_frame(spark, [empty, full, corrupt]), mode=DecodeMode.PERMISSIVE).orderBy("n").collect()
    assert rows[0].value_decoded is not None and rows[0].value_decoded.asDict() == {"a": None, "b": None}, \
        "a good record whose fields are all null is a struct of nulls, not a bad record"
    assert rows[1].value_decoded.asDict() == {"a": 3, "b": "x"}, "no reader-only field leaks into the struct"
    assert [r.value_error for r in rows[:2]] == [None, None]
    assert rows[2].value_decoded is None and rows[2].value_error.startswith("truncated or corrupt payload"), \
        "spark-avro's all-null answer to a payload it cannot decode is still told apart"
