"""Decoding Confluent-framed Avro in PySpark: ours against the JVM limit and a Python UDF.

1,000,000 records of a 10-field event (long, string, double, int, boolean, a
timestamp-millis, an array of strings, a nullable string, and in v2 two more fields
with defaults) are decoded through three paths, in one local[2] SparkSession:

  (a) bare spark-avro `from_avro` on payloads whose header is already stripped, all
      written with one schema (v2) and read with it: the JVM limit;
  (b) a Python UDF using fastavro: read the header, look the writer schema up in a
      dict, `schemaless_reader(writer, reader=v2)`;
  (c) ours, `AvroDecoder.for_subject(...).decode(...)`: framed records, half written
      with v1 and half with v2 (alternating), all read as v2, FAILFAST; and the same
      in PERMISSIVE mode (the error column evaluated too), for reference; and the same
      FAILFAST decoding as a session without registry.spark's jar gets it (spark-avro's
      from_avro only, registry/spark/decode.py).

The data is generated on the JVM with `to_avro`, written to parquet and cached in
memory before anything is timed, so the timed action is decoding: each is
`df.select(decoded).write.format("noop")`, which forces every row through the
decoder. Every path is checked to decode the same rows first. (a) and (c) run
--runs times, interleaved round by round, and each figure is its best run: on a
shared two-core machine other processes only ever add time (as with timeit); the
median of the per-round ratios is printed too, and the same ratio in the JVM's CPU
seconds (/proc), which other processes on the cores disturb far less. (b), ~15x
slower, is timed once. The
registry is a real one (bench/registry_process.registry) holding v1 and v2.

    .venv/bin/python bench/spark_decode.py [--count 1000000] [--runs 7] [--no-udf]

--no-udf leaves (b) out (minutes on a loaded machine) for quick before/after runs of (c)/(a).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
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

FIELDS = [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "amount", "type": "double"},
    {"name": "qty", "type": "int"},
    {"name": "flag", "type": "boolean"},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "note", "type": ["null", "string"], "default": None},
]
V1 = {"type": "record", "name": "Event", "namespace": "bench", "fields": FIELDS}
V2 = {**V1, "fields": [*FIELDS, {"name": "country", "type": "string", "default": "NL"},
                       {"name": "score", "type": ["null", "double"], "default": None}]}
SUBJECT = "spark-bench-value"


def generate(spark: Any, count: int, v1_id: int, v2_id: int, folder: Path) -> tuple[Any, Any]:
    """(framed, stripped): parquet-backed, cached DataFrames of `count` rows each.

    framed.value: header + v1 payload for even ids, header + v2 payload for odd ones;
    stripped.payload: the v2 payload of every id, no header.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import to_avro

    rows = spark.range(count, numPartitions=4)
    i = F.col("id")
    common = [i.alias("id"), F.concat(F.lit("name-"), i.cast("string")).alias("name"),
              (i * 1.25).alias("amount"), (i % 1000).cast("int").alias("qty"), (i % 2 == 0).alias("flag"),
              F.timestamp_millis(F.lit(1_700_000_000_000) + i).alias("at"),
              F.array(F.lit("red"), F.concat(F.lit("t"), (i % 7).cast("string"))).alias("tags"),
              F.when(i % 3 == 0, F.lit("a note")).alias("note")]
    v1 = F.struct(*common)
    v2 = F.struct(*common, F.lit("DE").alias("country"), (i / 7.0).alias("score"))

    def header(schema_id: int) -> Any:
        return F.lit(bytearray(b"\x00" + schema_id.to_bytes(4, "big")))

    framed = rows.select(F.when(i % 2 == 0, F.concat(header(v1_id), to_avro(v1, json.dumps(V1))))
                         .otherwise(F.concat(header(v2_id), to_avro(v2, json.dumps(V2)))).alias("value"))
    stripped = rows.select(to_avro(v2, json.dumps(V2)).alias("payload"))
    framed.write.parquet(str(folder / "framed"))
    stripped.write.parquet(str(folder / "stripped"))
    framed = spark.read.parquet(str(folder / "framed")).cache()
    stripped = spark.read.parquet(str(folder / "stripped")).cache()
    assert framed.count() == count and stripped.count() == count
    return framed, stripped


def fastavro_udf(struct_type: Any, writers: dict[int, dict[str, Any]], reader: dict[str, Any]) -> Any:
    """(b): a plain Python UDF, the usual way to call a Python Avro library from PySpark."""
    from fastavro import parse_schema, schemaless_reader
    from pyspark.sql import functions as F

    parsed_reader = parse_schema(reader)
    parsed = {i: parse_schema(w) for i, w in writers.items()}

    def decode(value: bytes | None) -> dict[str, Any] | None:
        if value is None:
            return None
        if len(value) < 5 or value[0] != 0:
            raise ValueError("not a Schema Registry message")
        writer = parsed[int.from_bytes(value[1:5], "big")]
        return schemaless_reader(io.BytesIO(value[5:]), writer, parsed_reader)  # type: ignore[return-value]

    return F.udf(decode, struct_type)


def jvm_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) the JVM `pid` has used: in local mode it runs every task."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(df: Any, pid: int, cpu: list[float] | None = None) -> float:
    """Seconds to push every row of `df` through a no-op sink; the JVM's CPU seconds for
    it are appended to `cpu`. On a shared machine CPU time is the steadier figure: other
    processes taking the cores lengthen the wall clock, not the work done."""
    started, started_cpu = time.perf_counter(), jvm_cpu_seconds(pid)
    df.write.format("noop").mode("overwrite").save()
    if cpu is not None:
        cpu.append(jvm_cpu_seconds(pid) - started_cpu)
    return time.perf_counter() - started


def _round(seconds: list[float]) -> list[float]:
    return [round(s, 2) for s in seconds]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-udf", action="store_true", help="leave out (b), the Python UDF")
    parser.add_argument("--jars", type=Path, default=ROOT / ".infra" / "jars" / "spark")
    args = parser.parse_args()

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    from registry.spark import AvroDecoder, DecodeMode, connector_jars, decode

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    jars = connector_jars(args.jars)  # fails early, saying to run `make infra-fetch`
    with tempfile.TemporaryDirectory(prefix="spark-bench-") as tmp, \
            registry(Path(tmp) / "registry") as (url, _pid), \
            SchemaRegistryClient({"url": url}) as client:
        v1_id = client.register_schema(SUBJECT, Schema(json.dumps(V1), "AVRO"))
        v2_id = client.register_schema(SUBJECT, Schema(json.dumps(V2), "AVRO"))
        spark = (SparkSession.builder.master("local[2]").appName("spark-decode-bench")
                 .config("spark.jars", jars).config("spark.driver.memory", "3g")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", "2").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        try:
            framed, stripped = generate(spark, args.count, v1_id, v2_id, Path(tmp) / "data")
            decoder = AvroDecoder.for_subject(client, SUBJECT)
            assert decoder.writer_ids == (v1_id, v2_id)
            ours = decoder.decode(framed, "value", into="event").select("event")
            ours_permissive = (decoder.decode(framed, "value", into="event", mode=DecodeMode.PERMISSIVE)
                               .select("event", "value_error"))
            assert decode._jvm_expression(framed) is not None, \
                "registry.spark's jar is on the class path (`make jvm` builds it)"
            with_jar = decode._jvm_expression
            decode._jvm_expression = lambda df: None  # as in a session without the jar
            ours_without_jar = decoder.decode(framed, "value", into="event").select("event")
            decode._jvm_expression = with_jar
            bare = stripped.select(from_avro("payload", json.dumps(V2)).alias("event"))
            struct_type = ours.schema["event"].dataType
            udf = fastavro_udf(struct_type, {v1_id: V1, v2_id: V2}, V2)
            python = framed.select(udf("value").alias("event"))

            # Same answers first: the odd ids were written with v2 by every path.
            sample = F.col("event.id") % 2 == 1
            key = ["event.id", "event.name", "event.at", "event.tags", "event.country", "event.score"]
            want = bare.where(sample).orderBy("event.id").limit(50).select(*key).collect()
            assert ours.where(sample).orderBy("event.id").limit(50).select(*key).collect() == want
            assert ours_without_jar.where(sample).orderBy("event.id").limit(50).select(*key).collect() == want
            assert args.no_udf or python.where(sample).orderBy("event.id").limit(50).select(*key).collect() == want
            v1_rows = ours.where(~sample).select("event.country", "event.score").distinct().collect()
            assert [tuple(r) for r in v1_rows] == [("NL", None)], "v1 records get v2's defaults"

            # Warm-up (JIT, codegen, Python workers), then the timed runs.
            pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
            timed(bare, pid), timed(ours, pid), timed(ours_permissive, pid), timed(ours_without_jar, pid)
            if not args.no_udf:
                timed(python.limit(20_000), pid)
            timed_runs = {"a": bare, "c": ours, "c permissive": ours_permissive, "c without jar": ours_without_jar}
            runs: dict[str, list[float]] = {name: [] for name in timed_runs}
            cpu: dict[str, list[float]] = {name: [] for name in timed_runs}
            for _ in range(args.runs):
                for name, df in timed_runs.items():
                    runs[name].append(timed(df, pid, cpu[name]))
            udf_seconds = float("nan") if args.no_udf else timed(python, pid)
        finally:
            spark.stop()

    rate = {name: args.count / min(seconds) for name, seconds in runs.items()}
    rate["b"] = args.count / udf_seconds
    per_round = statistics.median(a / c for a, c in zip(runs["a"], runs["c"]))
    print(f"Spark decode throughput, {args.count:,} records of a 10-field event, local[2] on "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} "
          f"(best of {args.runs} interleaved runs; (b) once)\n")
    print(f"  (a) bare from_avro, header stripped, one schema  {rate['a']:>12,.0f} rows/s")
    print(f"  (b) Python UDF with fastavro                     {rate['b']:>12,.0f} rows/s")
    print(f"  (c) ours, two writer versions -> v2, FAILFAST     {rate['c']:>12,.0f} rows/s")
    print(f"      ours, PERMISSIVE (+ error column)            {rate['c permissive']:>12,.0f} rows/s")
    print(f"      ours without registry.spark's jar            {rate['c without jar']:>12,.0f} rows/s\n")
    print(f"  (c)/(a) = {rate['c'] / rate['a']:.2f}x   (goal >= 0.9x; median per-round ratio {per_round:.2f}x)")
    cpu_ratio = min(cpu["a"]) / min(cpu["c"])
    cpu_per_round = statistics.median(a / c for a, c in zip(cpu["a"], cpu["c"]))
    print(f"  (c)/(a) in JVM CPU seconds = {cpu_ratio:.2f}x   (median per-round ratio {cpu_per_round:.2f}x)")
    print(f"  (c)/(b) = {rate['c'] / rate['b']:.1f}x   (goal >= 5x)")
    print(f"  PERMISSIVE/(a) = {rate['c permissive'] / rate['a']:.2f}x")
    without_jar = statistics.median(a / c for a, c in zip(cpu["a"], cpu["c without jar"]))
    print(f"  without the jar/(a) = {rate['c without jar'] / rate['a']:.2f}x   "
          f"(JVM CPU, median per-round ratio {without_jar:.2f}x)")
    print(f"\n  runs (s): a={_round(runs['a'])}\n            c={_round(runs['c'])}\n"
          f"            c permissive={_round(runs['c permissive'])}\n"
          f"            c without jar={_round(runs['c without jar'])}\n            b={udf_seconds:.1f}")
    print(f"  JVM CPU (s): a={_round(cpu['a'])}\n               c={_round(cpu['c'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
