"""Serializer and deserializer throughput: ours against raw fastavro and confluent-kafka's.

One 8-field record (a timestamp-millis, a nullable double, an array of strings, a
string, a long, an int, a boolean and bytes) goes through three paths, each way:

  (a) raw fastavro: schemaless_writer / schemaless_reader behind a 5-byte header;
  (b) confluent-kafka's AvroSerializer / AvroDeserializer with its own client;
  (c) ours: registry.serde with registry.client (its deserializers decode with the
      native decoder, registry/serde/avro_native, where `make native` built it).

and then v1 data is read with an evolved v2 reader schema by (c) and by fastavro's
own schemaless_reader(writer=v1, reader=v2) (and by (b), for reference).

All paths talk to one real registry started here (bench/registry_process.registry);
registration and the first lookups happen before the timed loops. Every path's
bytes and values are checked equal before anything is timed. Each figure is the
median of --runs timed runs of --count messages, the paths interleaved run by run,
in messages per CPU second of this process and per wall-clock second (see `rates`).

    .venv/bin/python bench/serde.py [--count 50000] [--runs 7]
"""
from __future__ import annotations

import argparse
import datetime
import gc
import io
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer as ConfluentDeserializer  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from fastavro import parse_schema, schemaless_reader, schemaless_writer  # noqa: E402
from registry_process import registry  # noqa: E402

from registry.client import Schema, SchemaRegistryClient  # noqa: E402
from registry.serde import AvroDeserializer, AvroSerializer  # noqa: E402
from registry.serde import avro_codec  # noqa: E402

TOPIC = "bench-serde"
V1 = {
    "type": "record", "name": "PageView", "namespace": "bench.serde", "fields": [
        {"name": "id", "type": "long"},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "user", "type": "string"},
        {"name": "score", "type": ["null", "double"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "active", "type": "boolean"},
        {"name": "count", "type": "int"},
        {"name": "payload", "type": "bytes"},
    ]}
# v2: a field added with a default, one removed, and int promoted to long.
V2 = {
    "type": "record", "name": "PageView", "namespace": "bench.serde", "fields": [
        {"name": "id", "type": "long"},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "user", "type": "string"},
        {"name": "score", "type": ["null", "double"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "active", "type": "boolean"},
        {"name": "count", "type": "long"},
        {"name": "referrer", "type": ["null", "string"], "default": None},
    ]}
RECORD = {
    "id": 1234567890123, "ts": datetime.datetime(2024, 5, 1, 12, 30, 15, 250000, tzinfo=datetime.timezone.utc),
    "user": "alice@example.com", "score": 4.75, "tags": ["home", "promo", "mobile"], "active": True,
    "count": 42, "payload": b"\x00\x01\x02\x03\x04\x05\x06\x07",
}


Rates = dict[Any, float]


def rates(paths: dict[Any, Callable[[], Any]], count: int, runs: int
          ) -> tuple[Rates, Rates, dict[Any, list[float]]]:
    """Median messages per second of each path over `runs` rounds: (per CPU second, per
    wall second), and each path's per-round CPU rates (to pair paths round by round).

    Rounds interleave the paths, so drift in machine load hits them alike. CPU time
    (time.process_time, this process only) is the figure to compare on a shared
    machine: other processes competing for the cores do not count against whichever
    path they happened to overlap. Wall-clock rates are given too.
    """
    for fn in paths.values():
        fn()  # warm
    cpu: dict[Any, list[float]] = {key: [] for key in paths}
    wall: dict[Any, list[float]] = {key: [] for key in paths}
    for _ in range(runs):
        for key, fn in paths.items():
            gc.collect()
            start_cpu, start_wall = time.process_time(), time.perf_counter()
            fn()
            cpu[key].append(count / (time.process_time() - start_cpu))
            wall[key].append(count / (time.perf_counter() - start_wall))
    return ({key: statistics.median(v) for key, v in cpu.items()},
            {key: statistics.median(v) for key, v in wall.items()}, cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=50_000, help="messages per timed run")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per figure (median reported)")
    args = parser.parse_args()
    count, runs = args.count, args.runs
    records = [dict(RECORD, id=RECORD["id"] + i) for i in range(count)]
    ctx = SerializationContext(TOPIC, MessageField.VALUE)

    with tempfile.TemporaryDirectory() as tmp, registry(Path(tmp)) as (url, _pid):
        ours_client = SchemaRegistryClient({"url": url})
        theirs_client = ConfluentClient({"url": url})
        v1_str, v2_str = json.dumps(V1), json.dumps(V2)
        v1_id = ours_client.register_schema(f"{TOPIC}-value", Schema(v1_str, "AVRO"))

        # (a) raw fastavro, with the header our registry assigned
        parsed_v1, parsed_v2 = parse_schema(V1), parse_schema(V2)
        header = b"\x00" + v1_id.to_bytes(4, "big")

        def raw_write(rec: dict[str, Any]) -> bytes:
            out = io.BytesIO()
            out.write(header)
            schemaless_writer(out, parsed_v1, rec)
            return out.getvalue()

        def raw_read(data: bytes) -> Any:
            fo = io.BytesIO(data)
            fo.seek(5)
            return schemaless_reader(fo, parsed_v1, None)

        def raw_read_evolved(data: bytes) -> Any:
            fo = io.BytesIO(data)
            fo.seek(5)
            return schemaless_reader(fo, parsed_v1, parsed_v2)

        # (b) confluent-kafka, TOPIC strategy (skips its association lookups: its fastest setup)
        theirs_ser = ConfluentSerializer(theirs_client, v1_str, conf={"subject.name.strategy.type": "TOPIC"})
        theirs_de = ConfluentDeserializer(theirs_client, conf={"subject.name.strategy.type": "TOPIC"})
        theirs_de_v2 = ConfluentDeserializer(theirs_client, v2_str, conf={"subject.name.strategy.type": "TOPIC"})
        # (c) ours
        ours_ser = AvroSerializer(ours_client, v1_str)
        ours_de = AvroDeserializer(ours_client)
        ours_de_v2 = AvroDeserializer(ours_client, v2_str)

        # Same bytes, same values, before anything is timed.
        data = raw_write(RECORD)
        assert theirs_ser(RECORD, ctx) == data, "confluent-kafka's bytes differ from raw fastavro's"
        assert ours_ser(RECORD, ctx) == data, "our bytes differ from raw fastavro's"
        expected = raw_read(data)
        assert theirs_de(data, ctx) == expected and ours_de(data, ctx) == expected, "decoded values differ"
        evolved = raw_read_evolved(data)
        assert ours_de_v2(data, ctx) == evolved == theirs_de_v2(data, ctx), "evolved values differ"
        assert "payload" not in evolved and evolved["referrer"] is None

        datas = [raw_write(r) for r in records]

        def loop_write(fn: Callable[..., bytes], with_ctx: bool) -> Callable[[], Any]:
            if with_ctx:
                return lambda: [fn(r, ctx) for r in records]
            return lambda: [fn(r) for r in records]

        def loop_read(fn: Callable[..., Any], with_ctx: bool) -> Callable[[], Any]:
            if with_ctx:
                return lambda: [fn(d, ctx) for d in datas]
            return lambda: [fn(d) for d in datas]

        cpu_rates, wall_rates, cpu_rounds = rates({
            ("serialize", "a"): loop_write(raw_write, False),
            ("serialize", "b"): loop_write(theirs_ser, True),
            ("serialize", "c"): loop_write(ours_ser, True),
            ("serialize", "c batch"): lambda: ours_ser.serialize_batch(records, ctx),
            ("deserialize", "a"): loop_read(raw_read, False),
            ("deserialize", "b"): loop_read(theirs_de, True),
            ("deserialize", "c"): loop_read(ours_de, True),
            ("deserialize", "c batch"): lambda: ours_de.deserialize_batch(datas, ctx),
            ("evolved read", "a"): loop_read(raw_read_evolved, False),
            ("evolved read", "b"): loop_read(theirs_de_v2, True),
            ("evolved read", "c"): loop_read(ours_de_v2, True),
        }, count, runs)
        ours_client.close()
        theirs_client.close()

    print(f"serde throughput (median of {runs} interleaved runs x {count} messages); 8-field record, "
          f"{len(data)} bytes on the wire; fastavro low-level path: {avro_codec.LOW_LEVEL}; "
          f"native decoder: {avro_codec.NATIVE}")
    for title, results in (("msg per CPU second", cpu_rates), ("msg per wall-clock second", wall_rates)):
        print(f"\n{title:26}{'(a) fastavro':>14}{'(b) confluent':>15}{'(c) ours':>12}{'(c)/(a)':>9}"
              f"{'(c)/(b)':>9}{'(c) batch':>12}{'batch/(a)':>11}")
        for way in ("serialize", "deserialize", "evolved read"):
            a, b, c = results[(way, "a")], results[(way, "b")], results[(way, "c")]
            line = f"{way:26}{a:>14,.0f}{b:>15,.0f}{c:>12,.0f}{c / a:>9.2f}{c / b:>9.2f}"
            batch = results.get((way, "c batch"))
            if batch is not None:
                line += f"{batch:>12,.0f}{batch / a:>11.2f}"
            print(line)
    print("\n(c)/(a) round by round, in CPU seconds (each round runs both paths back to back, so a "
          "change of load\nbetween rounds cancels out): median [min, max]")
    for way in ("serialize", "deserialize", "evolved read"):
        paired = [c / a for a, c in zip(cpu_rounds[(way, "a")], cpu_rounds[(way, "c")])]
        print(f"  {way:24}{statistics.median(paired):6.2f}x [{min(paired):.2f}, {max(paired):.2f}]")
    print("\n(a) for 'evolved read' is fastavro's own schemaless_reader(writer=v1, reader=v2); "
          "(b) there is confluent-kafka's AvroDeserializer with the v2 reader schema.")


if __name__ == "__main__":
    main()
