"""Decoding Confluent-framed JSON Schema and Protobuf in PySpark: ours against the bare parse.

JSON: --count records of an 8-field object (two writer versions, alternating), decoded by

  (a) bare `from_json` of the header-stripped payload into the same Spark type;
  (c) ours, `JsonSchemaDecoder.for_subject(...).decode(...)`, FAILFAST (header checked
      against the known writer ids, corrupt-record detection, the error expression).

Protobuf: --count // 4 Order messages (the tests' shop.Order), decoded by

  (a) a bare Python UDF: `Order.FromString(value[6:])` converted to the struct with the
      same converter, no framing checks (spark-protobuf's `from_protobuf`, the reference
      the issue names, is not on the Maven Central we fetch from);
  (c) ours, `ProtobufDecoder.for_subject(...).decode(...)`, FAILFAST.

Data is generated once, written to parquet and cached before anything is timed; each
timed action is `df.select(decoded).write.format("noop")`. (a) and (c) alternate for
--runs rounds and each figure is its best run (other processes only add time).

    .venv/bin/python bench/spark_decode_json_protobuf.py [--count 400000] [--runs 3]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from registry_process import registry  # noqa: E402

from registry.client import Schema, SchemaRegistryClient  # noqa: E402
from tests.protobuf_classes import generated  # noqa: E402

SCHEMA_V1 = {
    "type": "object", "title": "Event", "additionalProperties": False,
    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}, "amount": {"type": "number"},
                   "qty": {"type": "integer"}, "flag": {"type": "boolean"},
                   "tags": {"type": "array", "items": {"type": "string"}},
                   "note": {"type": ["string", "null"]}},
}
SCHEMA_V2 = {**SCHEMA_V1, "properties": {**SCHEMA_V1["properties"], "country": {"type": "string"}}}


def timed(df: Any) -> float:
    start = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=400_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from registry.serde import ProtobufSerializer
    from registry.spark import JsonSchemaDecoder, ProtobufDecoder
    from registry.spark.protobuf import _message_class, _message_reader

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.memory", "2g").config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    rate: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, registry(Path(tmp) / "registry") as (url, _pid):
        client = SchemaRegistryClient({"url": url})
        subject = "spark-bench-json-value"
        v1 = client.register_schema(subject, Schema(json.dumps(SCHEMA_V1), "JSON"))
        v2 = client.register_schema(subject, Schema(json.dumps(SCHEMA_V2), "JSON"))
        decoder = JsonSchemaDecoder.for_subject(client, subject)
        h1, h2 = (bytearray(b"\x00" + i.to_bytes(4, "big")) for i in (v1, v2))
        ids = spark.range(args.count)
        event = F.struct(F.col("id"), F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"),
                         (F.col("id") / 3).alias("amount"), (F.col("id") % 100).alias("qty"),
                         (F.col("id") % 2 == 0).alias("flag"), F.array(F.lit("a"), F.lit("b")).alias("tags"),
                         F.when(F.col("id") % 3 == 0, F.lit("n")).alias("note"),
                         F.when(F.col("id") % 2 == 1, F.lit("NL")).alias("country"))
        payload = F.encode(F.to_json(event), "UTF-8")
        frame = ids.select(F.concat(F.when(F.col("id") % 2 == 0, F.lit(h1)).otherwise(F.lit(h2)),
                                    payload).alias("value"))
        frame.write.parquet(f"{tmp}/json")
        data = spark.read.parquet(f"{tmp}/json").cache()
        data.count()
        bare = data.select(F.from_json(F.substring("value", 6, 2**31 - 1).cast("string"),
                                       decoder.spark_type).alias("e"))
        ours = decoder.decode(data, into="e").select("e")
        assert bare.orderBy("e.id").collect()[:50] == ours.orderBy("e.id").collect()[:50], "same rows"
        runs: dict[str, list[float]] = {"json a": [], "json c": []}
        for _ in range(args.runs):
            runs["json a"].append(timed(bare))
            runs["json c"].append(timed(ours))
        rate.update({k: args.count / min(v) for k, v in runs.items()})

        shop = generated(Path(tmp) / "protos")
        Order = shop.order_pb2.Order
        serializer = ProtobufSerializer(Order, client)
        from confluent_kafka.serialization import MessageField, SerializationContext
        ctx = SerializationContext("spark-bench-pb", MessageField.VALUE)
        count = args.count // 4
        rows = []
        for i in range(count):
            order = Order(id=i, customer=f"c{i}", lines=[Order.Line(sku="tea", qty=i % 7)],
                          total=shop.common_pb2.Money(currency="EUR", units=i), labels={"k": "v"})
            order.placed.seconds = 1_700_000_000 + i
            rows.append((serializer(order, ctx),))
        spark.createDataFrame(rows, "value binary").write.parquet(f"{tmp}/pb")
        pb = spark.read.parquet(f"{tmp}/pb").cache()
        pb.count()
        pb_decoder = ProtobufDecoder.for_subject(client, "spark-bench-pb-value")

        set_bytes = pb_decoder._reader_bytes  # the workers cannot import the generated module

        def bare_parse(value: bytes) -> Any:
            cls = _message_class(set_bytes, "shop.Order")
            return _message_reader(cls.DESCRIPTOR)(cls.FromString(bytes(value)[6:]))

        bare_pb = pb.select(F.udf(bare_parse, pb_decoder.spark_type)("value").alias("o"))
        ours_pb = pb_decoder.decode(pb, into="o").select("o")
        assert bare_pb.collect()[:20] == ours_pb.collect()[:20], "same rows"
        runs = {"pb a": [], "pb c": []}
        for _ in range(args.runs):
            runs["pb a"].append(timed(bare_pb))
            runs["pb c"].append(timed(ours_pb))
        rate.update({k: count / min(v) for k, v in runs.items()})
        client.close()
    spark.stop()
    print(f"Spark decode throughput, rows/s (best of {args.runs}), local[2]")
    print(f"  JSON      (a) bare from_json {rate['json a']:>12,.0f}   (c) ours {rate['json c']:>12,.0f}"
          f"   (c)/(a) = {rate['json c'] / rate['json a']:.2f}x   ({args.count:,} rows, 2 writer versions)")
    print(f"  Protobuf  (a) bare UDF parse {rate['pb a']:>12,.0f}   (c) ours {rate['pb c']:>12,.0f}"
          f"   (c)/(a) = {rate['pb c'] / rate['pb a']:.2f}x   ({args.count // 4:,} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
