"""Writers decoded without Avro's resolving decoder, then reshaped in Catalyst
(registry/spark/resolution.py): the plan is narrow, and where it is taken the rows and
their type are exactly what Avro's own resolution gives (spark-avro's from_avro with
the reader schema as `avroSchema`, the oracle here), bad records included."""
from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from registry.client import Schema, SchemaRegistryClient
from registry.serde import AvroSerializer
from registry.spark import AvroDecoder, DecodeMode
from registry.spark.resolution import Copy, Default, Widen, plan, same_schema
from tests.integration.spark.conftest import binary_frame

pytestmark = pytest.mark.integration


def record(fields: list[dict[str, Any]], name: str = "Event", **extra: Any) -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "t", "fields": fields, **extra})


# --- the plan (pure) ----------------------------------------------------------------------

WRITER = record([{"name": "id", "type": "long"}, {"name": "n", "type": "int"},
                 {"name": "gone", "type": "string"}])


def test_fields_are_copied_widened_or_defaulted_in_the_readers_order() -> None:
    reader = record([{"name": "n", "type": "long"}, {"name": "id", "type": "long"},
                     {"name": "added", "type": "string", "default": "x"},
                     {"name": "opt", "type": ["null", "double"], "default": None}])
    assert plan(WRITER, reader) == [Widen("n", "bigint"), Copy("id"), Default("added", "x", "string"),
                                    Default("opt", None, "double")]


@pytest.mark.parametrize("reader_fields, why", [
    ([{"name": "id", "type": "long", "aliases": ["key"]}], "a field alias may name another writer field"),
    ([{"name": "n", "type": "string"}], "not a promotion"),
    ([{"name": "n", "type": {"type": "long", "logicalType": "timestamp-millis"}}], "a logical type is not widened"),
    ([{"name": "id", "type": "int"}], "narrowing"),
    ([{"name": "added", "type": "string"}], "no default"),
    ([{"name": "added", "type": {"type": "enum", "name": "E", "symbols": ["A"]}, "default": "A"}], "named type"),
    ([{"name": "added", "type": {"type": "array", "items": "string"}, "default": []}], "only primitive defaults"),
    ([{"name": "added", "type": {"type": "long", "logicalType": "timestamp-millis"}, "default": 0}],
     "a logical type's default"),
    ([{"name": "added", "type": ["string", "null"], "default": "x"}], "only null-first unions"),
    ([{"name": "added", "type": "int", "default": 2**31}], "out of range"),
    ([{"name": "added", "type": "int", "default": 1.5}], "not an int"),
    ([{"name": "added", "type": "long", "default": True}], "a boolean is not a number"),
    ([{"name": "added", "type": "double", "default": "NaN"}], "not a JSON number"),
    ([{"name": "id", "type": "long"}, {"name": "ID", "type": "long", "default": 1}], "names Spark cannot tell apart"),
])
def test_anything_less_certain_keeps_avros_resolution(reader_fields: list[dict[str, Any]], why: str) -> None:
    assert plan(WRITER, record(reader_fields)) is None, why


def test_records_must_share_their_full_name_and_the_reader_have_no_aliases() -> None:
    same = [{"name": "id", "type": "long"}]
    assert plan(WRITER, record(same)) == [Copy("id")]
    assert plan(WRITER, record(same, name="Other")) is None
    assert plan(WRITER, json.dumps({"type": "record", "name": "Event", "fields": same})) is None, "another namespace"
    assert plan(WRITER, record(same, aliases=["t.Old"])) is None
    assert plan('"long"', '"long"') is None, "not a record"


def test_a_field_of_a_named_type_is_never_copied_even_when_written_alike() -> None:
    # The name could be defined differently elsewhere in either schema.
    fields = [{"name": "ref", "type": "t.Thing"}]
    assert plan(record(fields), record(fields)) is None


def test_same_schema_ignores_key_order_not_field_order() -> None:
    a = record([{"name": "a", "type": "int"}, {"name": "b", "type": "int"}])
    assert same_schema(a, json.dumps(json.loads(a), sort_keys=True))
    assert not same_schema(a, record([{"name": "b", "type": "int"}, {"name": "a", "type": "int"}]))


# --- on Spark, against Avro's resolution --------------------------------------------------

# Widenings, every supported default, a removed field, and types copied as they are
# (a logical type, an array, a map, a nullable union).
WIDE_WRITER = record([
    {"name": "id", "type": "long"},
    {"name": "i", "type": "int"},
    {"name": "i2f", "type": "int"},
    {"name": "l2f", "type": "long"},
    {"name": "l2d", "type": "long"},
    {"name": "f2d", "type": "float"},
    {"name": "name", "type": "string"},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": ["null", "long"]}},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "gone", "type": "bytes"},
])
WIDE_READER = record([
    {"name": "name", "type": "string"},
    {"name": "id", "type": "long"},
    {"name": "i", "type": "long"},
    {"name": "i2f", "type": "float"},
    {"name": "l2f", "type": "float"},
    {"name": "l2d", "type": "double"},
    {"name": "f2d", "type": "double"},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": ["null", "long"]}},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "country", "type": "string", "default": "NL"},
    {"name": "score", "type": ["null", "double"], "default": None},
    {"name": "count", "type": "int", "default": -7},
    {"name": "big", "type": "long", "default": 2**40},
    {"name": "ratio", "type": "float", "default": 0.1},
    {"name": "weight", "type": "double", "default": 2},
    {"name": "flag", "type": "boolean", "default": True},
])


def wide(n: int) -> dict[str, Any]:
    # Values where a float32 or float64 rounds: the widening must round as Java does.
    return {"id": n, "i": 2**31 - 1 - n, "i2f": 2**24 + 1 + n, "l2f": 2**53 + 1 + n, "l2d": 2**53 + 1 + n,
            "f2d": 1.1 + n, "name": f"name-{n}", "at": 1_700_000_000_000 + n, "tags": ["a", str(n)],
            "attrs": {"k": n, "z": None}, "note": None if n % 2 else f"note {n}", "gone": b"\x00" * n}


def register_pair(client: SchemaRegistryClient, writer: str, reader: str, records: list[dict[str, Any]]
                  ) -> tuple[str, int, list[bytes]]:
    """A subject holding `writer` then `reader`; `records` framed by a `writer` serializer."""
    topic = f"spark-resolution-{uuid.uuid4().hex[:10]}"
    serialize = AvroSerializer(client, writer)
    frames = [serialize(r, SerializationContext(topic, MessageField.VALUE)) for r in records]
    client.register_schema(f"{topic}-value", Schema(reader, "AVRO"))
    writer_id = int.from_bytes(frames[0][1:5], "big")
    return f"{topic}-value", writer_id, frames  # type: ignore[return-value]


def avro_resolution(spark: SparkSession, frames: list[bytes], writer: str, reader_json: str) -> Any:
    """The oracle: spark-avro's from_avro resolving `writer` into `reader_json`."""
    payload = F.expr("substring(value, 6)")
    return (binary_frame(spark, frames)
            .select("n", from_avro(payload, writer, {"avroSchema": reader_json, "mode": "PERMISSIVE"}).alias("v"))
            .orderBy("n"))


@pytest.mark.usefixtures("avro_decoding")
def test_rows_and_type_are_avros_for_widened_defaulted_and_copied_fields(
        spark: SparkSession, client: SchemaRegistryClient, caplog: pytest.LogCaptureFixture) -> None:
    subject, writer_id, frames = register_pair(client, WIDE_WRITER, WIDE_READER, [wide(n) for n in range(6)])
    decoder = AvroDecoder.for_subject(client, subject)
    assert writer_id in decoder._shortcuts and decoder._shortcuts[writer_id] != "same", \
        "the writer takes the shortcut (else this test compares Avro with itself)"
    framed = binary_frame(spark, frames)
    decoded = decoder.decode(framed, into="v").orderBy("n")
    permissive = decoder.decode(framed, into="v", mode=DecodeMode.PERMISSIVE)
    assert decoded.columns == [*framed.columns, "v"] and permissive.columns == [*framed.columns, "v", "value_error"], \
        "none of the decoder's own columns (header, writer structs, staged record) is left behind"
    oracle = avro_resolution(spark, frames, WIDE_WRITER, WIDE_READER)
    assert decoded.schema["v"].dataType == oracle.schema["v"].dataType
    got = [r.v.asDict(recursive=True) for r in decoded.collect()]
    want = [r.v.asDict(recursive=True) for r in oracle.collect()]
    assert got == want
    assert got[1]["country"] == "NL" and got[1]["big"] == 2**40 and got[1]["flag"] is True
    assert got[1]["l2f"] == want[1]["l2f"] and got[1]["l2f"] != 2**53 + 2, "rounded to a float32, as Java does"
    assert "resolving every writer schema with Avro" not in caplog.text, "the reshaped type was the reader's"


@pytest.mark.usefixtures("avro_decoding")
def test_a_corrupt_payload_of_a_reshaped_writer_is_a_bad_record_not_defaults(
        spark: SparkSession, client: SchemaRegistryClient) -> None:
    subject, writer_id, frames = register_pair(client, WIDE_WRITER, WIDE_READER, [wide(1), wide(2)])
    decoder = AvroDecoder.for_subject(client, subject)
    assert writer_id in decoder._shortcuts
    cut = frames[1][:9]
    rows = (decoder.decode(binary_frame(spark, [frames[0], cut]), into="v", mode=DecodeMode.PERMISSIVE)
            .orderBy("n").collect())
    assert rows[0].v is not None and rows[0].value_error is None
    assert rows[1].v is None and rows[1].value_error.startswith("truncated or corrupt payload"), \
        "the filled-in defaults must not make a record that did not decode look decoded"
    with pytest.raises(PySparkException, match="truncated or corrupt payload"):
        decoder.decode(binary_frame(spark, [cut]), into="v").collect()


@pytest.mark.usefixtures("avro_decoding")
def test_a_reader_whose_fields_may_all_be_null_still_tells_bad_records_apart(
        spark: SparkSession, client: SchemaRegistryClient) -> None:
    writer = record([{"name": "x", "type": "int"}, {"name": "n", "type": ["null", "string"], "default": None}])
    reader = record([{"name": "n", "type": ["null", "string"], "default": None},
                     {"name": "m", "type": ["null", "long"], "default": None}])
    subject, writer_id, frames = register_pair(client, writer, reader, [{"x": 1, "n": None}, {"x": 2, "n": "b"}])
    decoder = AvroDecoder.for_subject(client, subject)
    assert writer_id in decoder._shortcuts, "reshaped, the reader-only witness field filled in"
    corrupt = frames[0][:5] + b"\x02\x08"  # x = 1, then union branch 4 of 2
    rows = (decoder.decode(binary_frame(spark, [*frames, corrupt]), into="v", mode=DecodeMode.PERMISSIVE)
            .orderBy("n").collect())
    assert [r.v.asDict() if r.v is not None else None for r in rows] == [
        {"n": None, "m": None}, {"n": "b", "m": None}, None]
    assert rows[2].value_error.startswith("truncated or corrupt payload")


@pytest.mark.usefixtures("avro_decoding")
def test_the_readers_own_schema_is_decoded_without_resolution_and_alike(
        spark: SparkSession, client: SchemaRegistryClient) -> None:
    subject, writer_id, frames = register_pair(client, WIDE_WRITER, WIDE_READER, [wide(3)])
    reader_frame = AvroSerializer(client, WIDE_READER)  # registered already: its id
    topic = subject.removesuffix("-value")
    own = reader_frame({**wide(3), "country": "DE", "score": 1.5, "count": 1, "big": 2, "ratio": 0.5,
                        "weight": 3.0, "flag": False}, SerializationContext(topic, MessageField.VALUE))
    decoder = AvroDecoder.for_subject(client, subject)
    assert decoder._shortcuts[decoder.reader.schema_id] == "same"
    decoded = decoder.decode(binary_frame(spark, [own]), into="v")
    oracle = avro_resolution(spark, [own], WIDE_READER, WIDE_READER)
    assert decoded.schema["v"].dataType == oracle.schema["v"].dataType
    assert decoded.collect()[0].v == oracle.collect()[0].v
