"""Cold start on Kafka: process start to `/ready` with 100,000 schemas in `_schemas`.

Ours: `schema-registry serve` with `SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS`, timed
from process start until `/ready` answers 200 (the node has read the topic to its end
and applied every record), and its RSS (supervisor + worker) once ready.
Reference, in the same run: a bare confluent-kafka consumer in a fresh Python process
reading the same topic to its end (process start to partition EOF), i.e. the floor
any Python registry on librdkafka pays just to consume the records. Issue 3's goal:
ready in 5 s or less.

The topic is filled directly in Confluent's format (one SCHEMA record per subject,
~600-byte Avro records), with a batching producer; with `--headers` each record also
carries the two headers our registry writes (a topic it wrote itself), which the bare
consumer does not read.

Uses the broker named by KAFKA_BOOTSTRAP, or starts one (`make infra-fetch` first).
With `--before CHECKOUT` another checkout's registry (its .venv/bin/schema-registry) is
started too, in the same rounds, and the two are compared.

The last lines say which side replays with the compiled module (`make native`).

Usage: python bench/cold_start.py [--schemas 100000] [--runs 3] [--before CHECKOUT] [--headers]
"""
from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from registry_process import CLI, ROOT, avro_record, registry, rss_kib  # noqa: E402

sys.path.insert(0, str(ROOT))  # the repository root: infra is not installed, it is run from here
import infra  # noqa: E402

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from store.kafka_log import EXPECTED_OFFSET_HEADER, ORIGIN_HEADER, encode_expected_offset  # noqa: E402
from store.records import SchemaKey, SchemaValue, encode_key, encode_value  # noqa: E402

GOAL_SECONDS = 5.0
BARE_CONSUMER = r'''
import sys, time
from confluent_kafka import Consumer, KafkaError, TopicPartition
bootstrap, topic = sys.argv[1], sys.argv[2]
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-bare",
                     "enable.auto.commit": False, "enable.partition.eof": True,
                     "fetch.max.bytes": 67108864, "max.partition.fetch.bytes": 16777216})
consumer.assign([TopicPartition(topic, 0, 0)])
count = 0
while True:
    messages = consumer.consume(10000, 0.1)
    for m in messages:
        if m.error() is None:
            m.key(); m.value()
            count += 1
        elif m.error().code() == KafkaError._PARTITION_EOF:
            print(count)
            consumer.close()
            sys.exit(0)
'''


@contextmanager
def broker() -> Iterator[str]:
    """The bootstrap servers of KAFKA_BOOTSTRAP's broker, or of one started for this run."""
    if os.environ.get("KAFKA_BOOTSTRAP"):
        yield os.environ["KAFKA_BOOTSTRAP"]
        return
    with tempfile.TemporaryDirectory() as workdir:
        server = infra.KafkaServer(Path(workdir))
        server.start()
        try:
            yield server.bootstrap
        finally:
            server.stop(timeout=15)


def fill(bootstrap: str, topic: str, count: int, headers: bool = False) -> None:
    """Create a compacted one-partition topic holding `count` schema records; with
    `headers`, each carries the two headers our registry writes (origin, expected offset)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                         "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000})
    for n in range(1, count + 1):
        key = SchemaKey(f"subject-{n}", 1)
        stamp = [(ORIGIN_HEADER, b"http://127.0.0.1:8081"), (EXPECTED_OFFSET_HEADER, encode_expected_offset(n - 1))]
        producer.produce(topic, key=encode_key(key), partition=0, headers=stamp if headers else None,
                         value=encode_value(SchemaValue(key.subject, 1, n, avro_record(n))))
        if n % 10_000 == 0:
            producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError("the topic was not filled")


def bare_consumer(bootstrap: str, topic: str, count: int) -> float:
    """Seconds from process start until a bare consumer has read the topic to its end."""
    began = time.monotonic()
    out = subprocess.run([sys.executable, "-c", BARE_CONSUMER, bootstrap, topic],
                         capture_output=True, text=True, timeout=120, check=True)
    elapsed = time.monotonic() - began
    if int(out.stdout.strip()) < count:  # and the fences of registries started on it
        raise RuntimeError(f"the bare consumer read {out.stdout.strip()} records, not {count}")
    return elapsed


def ours(bootstrap: str, topic: str, cli: Path = CLI) -> tuple[float, int]:
    """Seconds from `schema-registry serve` to `/ready` answering 200, and RSS in KiB."""
    env = {"SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS": bootstrap,
                   "SCHEMA_REGISTRY_LEADER_ELECTION_BACKEND": "static",  # one node: it writes
           "SCHEMA_REGISTRY_KAFKASTORE_TOPIC": topic}
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as data, registry(Path(data), env, ready_timeout=120, cli=cli) as (_, pid):
        elapsed = time.monotonic() - began
        return elapsed, rss_kib(pid)


def replay_kind(checkout: Path) -> str:
    """Whether `checkout` replays with the compiled module (`make native`) or in Python."""
    if any((checkout / "store").glob("_replay_native*.so")):
        return "compiled (store/replay_native)"
    return "Python (store/replay_native not built)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schemas", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another checkout, started in the same rounds")
    parser.add_argument("--headers", action="store_true",
                        help="records carry our registry's two headers, as a topic it wrote does")
    args = parser.parse_args()
    # Ours starts from compiled modules, as it does installed from a wheel (pip compiles
    # them) and as the reference's confluent-kafka does: a checkout run with
    # PYTHONDONTWRITEBYTECODE set would otherwise compile our sources at every start.
    for package in ("registry", "store", "election"):
        compileall.compile_dir(str(ROOT / package), quiet=1)
    with broker() as bootstrap:
        topic = f"_schemas_bench_{uuid.uuid4().hex[:8]}"
        began = time.monotonic()
        fill(bootstrap, topic, args.schemas, args.headers)
        print(f"filled {topic} with {args.schemas:,} schema records in {time.monotonic() - began:.1f} s")
        ready, rss, floor, before = [], [], [], []
        for run in range(args.runs):
            # Alternate, so that neither side always meets a warmer page cache.
            floor.append(bare_consumer(bootstrap, topic, args.schemas))
            seconds, kib = ours(bootstrap, topic)
            ready.append(seconds)
            rss.append(kib)
            line = (f"run {run + 1}: ours {seconds:.2f} s to ready, {kib / 1024:.0f} MiB; "
                    f"bare consumer {floor[-1]:.2f} s")
            if args.before:
                before.append(ours(bootstrap, topic, args.before / ".venv" / "bin" / "schema-registry")[0])
                line += f"; before {before[-1]:.2f} s"
            print(line)
    ours_s, floor_s = statistics.median(ready), statistics.median(floor)
    print(f"\ncold start, {args.schemas:,} schemas, median of {args.runs}:")
    print(f"  ours (process start -> /ready 200): {ours_s:.2f} s   goal <= {GOAL_SECONDS:.0f} s: "
          f"{'met' if ours_s <= GOAL_SECONDS else 'NOT met'}")
    print(f"  reference (bare confluent-kafka consumer, process start -> end of topic): {floor_s:.2f} s")
    print(f"  ratio ours / reference: {ours_s / floor_s:.2f}")
    print(f"  RSS once ready (supervisor + worker): {statistics.median(rss) / 1024:.0f} MiB")
    print(f"  replay: {replay_kind(ROOT)}")
    if before:
        before_s = statistics.median(before)
        print(f"  {args.before}: {before_s:.2f} s ({before_s / floor_s:.2f}x the reference); "
              f"this checkout / it: {ours_s / before_s:.2f}; its replay: {replay_kind(args.before)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
