"""registry.spark's JVM expression (registry/spark/jvm) against spark-avro's from_avro.

The expression reads each writer's payload with Avro's fast reader instead of its
resolving decoder. Avro's resolution through spark-avro is the oracle: for every Avro
type, promotion and kind of default, and for payloads cut short or corrupted at random,
the expression must give exactly the rows and the bad records the from_avro decoding
gives, in generated code and interpreted.
"""
from __future__ import annotations

import json
import random
import uuid
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from registry.client import Schema, SchemaRegistryClient
from registry.serde import AvroSerializer
from registry.spark import AvroDecoder, DecodeMode, decode
from tests.integration.spark.conftest import binary_frame, require_jvm_expression
from tests.integration.spark.test_resolution import avro_resolution

pytestmark = pytest.mark.integration

NAMESPACE = "jvm.test"
INNER = {"type": "record", "name": "Inner", "fields": [
    {"name": "a", "type": "int"}, {"name": "b", "type": ["null", "string"], "default": None}]}
COLOR = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"], "default": "RED"}
# Every Avro type and logical type spark-avro maps, each at least once in a container.
WRITER_FIELDS: list[dict[str, Any]] = [
    {"name": "id", "type": "long"},
    {"name": "flag", "type": "boolean"},
    {"name": "i", "type": "int"},
    {"name": "i2l", "type": "int"},
    {"name": "i2d", "type": "int"},
    {"name": "l2f", "type": "long"},
    {"name": "f2d", "type": "float"},
    {"name": "s2b", "type": "string"},
    {"name": "b2s", "type": "bytes"},
    {"name": "text", "type": "string"},
    {"name": "raw", "type": "bytes"},
    {"name": "fix", "type": {"type": "fixed", "name": "Four", "size": 4}},
    {"name": "color", "type": COLOR},
    {"name": "inner", "type": INNER},
    {"name": "inners", "type": {"type": "array", "items": "Inner"}},
    {"name": "scores", "type": {"type": "map", "values": {"type": "array", "items": ["null", "double"]}}},
    {"name": "choice", "type": ["null", "int", "string", "Inner"]},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}},
    {"name": "fixed_price", "type": {"type": "fixed", "name": "Dec8", "size": 8, "logicalType": "decimal",
                                     "precision": 18, "scale": 2}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "local_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "tod", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "gone", "type": {"type": "array", "items": "Inner"}},
    {"name": "maybe", "type": ["null", "long"], "default": None},
]
# The writer's fields reordered, promoted (int to long and double, long to float, float
# to double, string and bytes each way), one removed, and new ones with defaults of every
# kind; the reader also widens the enum and lets a union take more branches.
READER_FIELDS: list[dict[str, Any]] = [
    {"name": "text", "type": "string"},
    {"name": "id", "type": "long"},
    {"name": "flag", "type": "boolean"},
    {"name": "i", "type": "int"},
    {"name": "i2l", "type": "long"},
    {"name": "i2d", "type": "double"},
    {"name": "l2f", "type": "float"},
    {"name": "f2d", "type": "double"},
    {"name": "s2b", "type": "bytes"},
    {"name": "b2s", "type": "string"},
    {"name": "raw", "type": "bytes"},
    {"name": "fix", "type": {"type": "fixed", "name": "Four", "size": 4}},
    {"name": "color", "type": {**COLOR, "symbols": ["RED", "GREEN", "BLUE", "BLACK"]}},
    {"name": "inner", "type": {**INNER, "fields": [*INNER["fields"], {"name": "c", "type": "long", "default": 7}]}},
    {"name": "inners", "type": {"type": "array", "items": "Inner"}},
    {"name": "scores", "type": {"type": "map", "values": {"type": "array", "items": ["null", "double"]}}},
    {"name": "choice", "type": ["null", "int", "string", "Inner", "boolean"]},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}},
    {"name": "fixed_price", "type": {"type": "fixed", "name": "Dec8", "size": 8, "logicalType": "decimal",
                                     "precision": 18, "scale": 2}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "local_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "tod", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "maybe", "type": ["null", "long"], "default": None},
    {"name": "d_str", "type": "string", "default": "x\u00e9"},
    {"name": "d_bytes", "type": "bytes", "default": "\u0000\u00ff"},
    {"name": "d_fixed", "type": {"type": "fixed", "name": "Two", "size": 2}, "default": "ab"},
    {"name": "d_enum", "type": "Color", "default": "BLUE"},
    {"name": "d_record", "type": "Inner", "default": {"a": 3, "b": None}},
    {"name": "d_array", "type": {"type": "array", "items": "long"}, "default": [1, 2]},
    {"name": "d_map", "type": {"type": "map", "values": "string"}, "default": {"k": "v"}},
    {"name": "d_union", "type": ["long", "null"], "default": 5},
    {"name": "d_date", "type": {"type": "int", "logicalType": "date"}, "default": 19000},
    {"name": "d_float", "type": "float", "default": 0.1},
]


@pytest.fixture(autouse=True)
def jvm_expression(spark: SparkSession) -> None:
    require_jvm_expression(spark)


def schema(fields: list[dict[str, Any]]) -> str:
    return json.dumps({"type": "record", "name": "Everything", "namespace": NAMESPACE, "fields": fields})


WRITER, READER = schema(WRITER_FIELDS), schema(READER_FIELDS)


def everything(n: int, rng: random.Random) -> dict[str, Any]:
    """A record for WRITER, varied by `n` (fastavro's types: bytes, Decimal, datetime...)."""
    import datetime
    import decimal

    inner = {"a": n, "b": None if n % 2 else f"b{n}"}
    epoch = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    return {
        "id": n, "flag": n % 3 == 0, "i": rng.randint(-2**31, 2**31 - 1), "i2l": rng.randint(-2**31, 2**31 - 1),
        "i2d": rng.randint(-2**31, 2**31 - 1), "l2f": rng.randint(-2**63, 2**63 - 1),
        "f2d": rng.uniform(-1e6, 1e6), "s2b": f"s\u00fc{n}", "b2s": f"b{n}".encode(),
        "text": "".join(rng.choice("abc\u00e9\u4e2d\U0001f600") for _ in range(rng.randint(0, 12))),
        "raw": rng.randbytes(rng.randint(0, 9)), "fix": rng.randbytes(4), "color": ["RED", "GREEN", "BLUE"][n % 3],
        "inner": inner, "inners": [inner] * (n % 3),
        "scores": {f"k{j}": [None if (n + j) % 4 == 0 else rng.random() for _ in range(j)] for j in range(n % 4)},
        "choice": [None, n, f"c{n}", inner][n % 4],
        "price": decimal.Decimal(rng.randint(-10**11, 10**11)).scaleb(-3),
        "fixed_price": decimal.Decimal(rng.randint(-10**17, 10**17)).scaleb(-2),
        "day": datetime.date(1970, 1, 1) + datetime.timedelta(days=rng.randint(-50_000, 50_000)),
        "ms": epoch + datetime.timedelta(milliseconds=rng.randint(-10**12, 10**12)),
        "us": epoch + datetime.timedelta(microseconds=rng.randint(-10**15, 10**15)),
        "local_us": datetime.datetime(2020, 1, 1) + datetime.timedelta(microseconds=rng.randint(-10**15, 10**15)),
        "tod": datetime.time(n % 24, n % 60, 7, 123000), "uid": str(uuid.UUID(int=rng.getrandbits(128))),
        "gone": [inner], "maybe": None if n % 5 == 0 else n * 1000,
    }


@pytest.fixture(scope="module")
def everything_topic(client: SchemaRegistryClient) -> Iterator[tuple[str, list[bytes]]]:
    """A subject with WRITER then READER; 60 WRITER records and 20 READER ones, framed."""
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic = f"spark-jvm-{uuid.uuid4().hex[:10]}"
    context = SerializationContext(topic, MessageField.VALUE)
    rng = random.Random(17)
    frames = [AvroSerializer(client, WRITER)(everything(n, rng), context) for n in range(60)]
    as_reader = AvroSerializer(client, READER)
    for n in range(60, 80):
        record = {**everything(n, rng), "s2b": b"s", "b2s": "b", "i2l": n, "i2d": 0.5, "l2f": 1.5, "f2d": 2.5,
                  "color": "BLACK", "inner": {"a": n, "b": None, "c": n}, "choice": n % 2 == 0,
                  "d_str": "", "d_bytes": b"", "d_fixed": b"zz", "d_enum": "RED", "d_record": {"a": 0, "b": None},
                  "d_array": [], "d_map": {}, "d_union": None, "d_date": 0, "d_float": 1.0}
        del record["gone"]
        frames.append(as_reader(record, context))
    yield f"{topic}-value", frames


def tasks_frame(spark: SparkSession, values: list[bytes | None]) -> Any:
    """`binary_frame`, shuffled: else the optimizer folds a projection of its local rows
    into them on the driver, and the decoding never runs in a task's generated code."""
    return binary_frame(spark, values).repartition(2)


def rows(df: Any, column: str = "v") -> list[Any]:
    return [r[column].asDict(recursive=True) if r[column] is not None else None for r in df.orderBy("n").collect()]


def test_every_type_promotion_and_default_decodes_as_avros_resolution(
        spark: SparkSession, client: SchemaRegistryClient, everything_topic: tuple[str, list[bytes]]) -> None:
    subject, frames = everything_topic
    decoder = AvroDecoder.for_subject(client, subject)
    decoded = decoder.decode(tasks_frame(spark, frames), into="v")
    assert "registry_framed_avro" in decoded._jdf.queryExecution().executedPlan().toString(), \
        "the JVM expression decodes (else this compares from_avro with itself)"
    writer_frames, reader_frames = frames[:60], frames[60:]
    want = (rows(avro_resolution(spark, writer_frames, WRITER, READER))
            + rows(avro_resolution(spark, reader_frames, READER, READER)))
    got = rows(decoded)
    assert got == want
    assert decoded.schema["v"].dataType == avro_resolution(spark, frames[:1], WRITER, READER).schema["v"].dataType
    first = got[0]
    assert (first["d_str"], first["d_bytes"], first["d_fixed"], first["d_enum"]) == ("x\u00e9", b"\x00\xff", b"ab", "BLUE")
    assert first["d_record"] == {"a": 3, "b": None, "c": 7} and first["d_array"] == [1, 2] and first["d_map"] == {"k": "v"}
    assert first["inner"]["c"] == 7 and first["d_union"] == 5


def test_corrupt_and_cut_payloads_are_bad_exactly_where_from_avro_rejects_them(
        spark: SparkSession, client: SchemaRegistryClient, everything_topic: tuple[str, list[bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    subject, frames = everything_topic
    rng = random.Random(3)
    damaged: list[bytes] = []
    for _ in range(400):
        frame = bytearray(rng.choice(frames))
        if rng.random() < 0.3:
            del frame[rng.randint(5, len(frame) - 1):]
        else:
            for _ in range(rng.randint(1, 3)):
                frame[rng.randint(5, len(frame) - 1)] = rng.randrange(256)
        damaged.append(bytes(frame))
    decoder = AvroDecoder.for_subject(client, subject)
    df = tasks_frame(spark, damaged)
    ours = decoder.decode(df, into="v", mode=DecodeMode.PERMISSIVE)
    assert "registry_framed_avro" in ours._jdf.queryExecution().executedPlan().toString()
    got_rows, got_errors = rows(ours), [r.value_error for r in ours.orderBy("n").collect()]
    monkeypatch.setattr(decode, "_jvm_expression", lambda df: None)
    theirs = decoder.decode(df, into="v", mode=DecodeMode.PERMISSIVE)
    assert got_rows == rows(theirs)
    assert got_errors == [r.value_error for r in theirs.orderBy("n").collect()]
    assert 50 < sum(e is not None for e in got_errors) < 350, "both good and bad records among the damaged"


def test_interpreted_evaluation_gives_the_generated_codes_rows(
        spark: SparkSession, client: SchemaRegistryClient, everything_topic: tuple[str, list[bytes]]) -> None:
    subject, frames = everything_topic
    decoder = AvroDecoder.for_subject(client, subject)
    values = [*frames[::7], None, b"\x00\x00", frames[0][:8], b"\x01" + frames[0][1:]]
    generated = rows(decoder.decode(tasks_frame(spark, values), into="v", mode=DecodeMode.PERMISSIVE))
    previous = {key: spark.conf.get(key) for key in ("spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode")}
    spark.conf.set("spark.sql.codegen.wholeStage", "false")
    spark.conf.set("spark.sql.codegen.factoryMode", "NO_CODEGEN")
    try:
        interpreted = rows(decoder.decode(tasks_frame(spark, values), into="v", mode=DecodeMode.PERMISSIVE))
    finally:
        for key, value in previous.items():
            spark.conf.set(key, value)
    assert interpreted == generated
    assert generated[-4:] == [None, None, None, None] and None not in generated[:-4]


def test_a_column_that_is_not_binary_is_refused_before_any_job(
        spark: SparkSession, client: SchemaRegistryClient, everything_topic: tuple[str, list[bytes]]) -> None:
    subject, _frames = everything_topic
    decoder = AvroDecoder.for_subject(client, subject)
    with pytest.raises(AnalysisException, match="decodes a binary column, not string"):
        decoder.decode(spark.sql("SELECT 1 AS n, 'text' AS value"), into="v")


def test_without_the_jar_the_decoding_is_written_with_from_avro(
        spark: SparkSession, client: SchemaRegistryClient, everything_topic: tuple[str, list[bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    subject, frames = everything_topic
    decoder = AvroDecoder.for_subject(client, subject)
    monkeypatch.setattr(decode, "_JVM_CLASS", "registry.spark.jvm.NoSuchClass")
    assert decode._jvm_expression(spark.range(1)) is None, "a class py4j cannot load means no jar"
    decoded = decoder.decode(tasks_frame(spark, frames[:3]), into="v")
    plan = decoded._jdf.queryExecution().executedPlan().toString()
    assert "registry_framed_avro" not in plan and "from_avro" in plan
    assert rows(decoded) == rows(avro_resolution(spark, frames[:3], WRITER, READER))


def test_a_jar_that_does_not_work_with_this_spark_is_left_out_saying_so(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # A class without the probe stands for a jar built against another Spark, whose probe
    # throws a LinkageError: both reach Python as a py4j error.
    monkeypatch.setattr(decode, "_JVM_CLASS", "java.lang.Integer")
    monkeypatch.setattr(decode, "_JVM_CLASSES", weakref.WeakKeyDictionary())  # the warning is logged once per JVM
    assert decode._jvm_expression(spark.range(1)) is None
    assert "does not work with this Spark" in caplog.text


def test_the_class_is_looked_up_and_probed_once_per_jvm(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    probes: list[str] = []
    working_class = decode._working_class
    monkeypatch.setattr(decode, "_JVM_CLASSES", weakref.WeakKeyDictionary())
    monkeypatch.setattr(decode, "_working_class", lambda jvm, name: probes.append(name) or working_class(jvm, name))
    assert decode._jvm_expression(spark.range(1)) is not None
    assert decode._jvm_expression(spark.range(2)) is not None
    assert probes == [decode._JVM_CLASS], "for_each_batch decodes every micro-batch: ~9 ms of py4j each, else"
