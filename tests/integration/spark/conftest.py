"""One local SparkSession for the whole session, a registry, and a topic of two schema versions.

The session runs in local mode (`local[2]`, no UI, two shuffle partitions) with the
connector jars from `make infra-fetch` given through `spark.jars`: nothing is
downloaded. It is stopped, and its JVM ended, when the test session ends.
"""
from __future__ import annotations

import decimal
import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import SerializingProducer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.serialization import StringSerializer

import infra
from registry.client import SchemaRegistryClient
from registry.serde import AvroSerializer

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))
from registry_process import registry  # noqa: E402

TIMEOUT = 60.0


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local SparkSession with Spark's Kafka source and spark-avro on its class path."""
    if not infra.jars_ready(components=(infra.SPARK_COMPONENT,)):
        pytest.fail(f"Spark connector jars are missing or stale in {infra.JARS_DIR / 'spark'}: "
                    "run `make infra-fetch` first (tests never download them)", pytrace=False)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from registry.spark import connector_jars

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only, as for Kafka
    session = (SparkSession.builder.master("local[2]").appName("registry-spark-tests")
               .config("spark.jars", connector_jars(infra.JARS_DIR / "spark"))
               .config("spark.driver.memory", "1g")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               # The JVM's temporary files (its lz4 library, unpacked by the Kafka
               # client; Spark's scratch space) in pytest's basetemp, not left in /tmp.
               .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={tmp_path_factory.mktemp('spark-tmp')}")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        # The py4j gateway JVM would otherwise live until this process exits.
        gateway = SparkContext._gateway
        if gateway is not None:
            gateway.shutdown()
            proc = getattr(gateway, "proc", None)
            if proc is not None:
                proc.kill()
                proc.wait()
            SparkContext._gateway = None
            SparkContext._jvm = None


@pytest.fixture(params=["jvm", "from_avro"])
def avro_decoding(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, spark: Any) -> str:
    """Each Avro decoding test twice: with registry.spark's JVM expression (its jar, which
    `make jvm` builds, is on the session's class path), and written with spark-avro's
    from_avro alone, as where the jar is not (or over Spark Connect)."""
    from registry.spark import decode

    if request.param == "from_avro":
        monkeypatch.setattr(decode, "_jvm_expression", lambda df: None)
    else:
        require_jvm_expression(spark)
    return str(request.param)


def require_jvm_expression(spark: Any) -> None:
    """Fail, saying how to build it, where registry.spark's jar is not on the class path."""
    from registry.spark import decode

    if decode._jvm_expression(spark.range(1)) is None:
        pytest.fail("registry.spark's JVM expression is not on the session's class path: "
                    "build its jar with `make jvm` (needs javac)", pytrace=False)


@pytest.fixture(scope="session")
def registry_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A registry on the embedded store for the Spark tests (killed at the end)."""
    with registry(tmp_path_factory.mktemp("spark-registry")) as (url, _pid):
        yield url


@pytest.fixture(scope="session")
def client(registry_url: str) -> Iterator[SchemaRegistryClient]:
    with SchemaRegistryClient({"url": registry_url, "retries.wait.ms": 50}) as c:
        yield c


# --- two compatible versions of a payment --------------------------------------------

PAYMENT_V1 = """{"type": "record", "name": "Payment", "namespace": "pay", "fields": [
  {"name": "id", "type": "long"},
  {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
  {"name": "currency", "type": "string"},
  {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}}
]}"""

# v2 adds three fields with defaults: BACKWARD compatible, and v2 reads v1's data.
PAYMENT_V2 = """{"type": "record", "name": "Payment", "namespace": "pay", "fields": [
  {"name": "id", "type": "long"},
  {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
  {"name": "currency", "type": "string"},
  {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
  {"name": "memo", "type": ["null", "string"], "default": null},
  {"name": "labels", "type": {"type": "array", "items": "string"}, "default": []},
  {"name": "attrs", "type": {"type": "map", "values": "long"}, "default": {}}
]}"""

EPOCH_MS = 1_700_000_000_000


def payment_v1(i: int) -> dict[str, Any]:
    return {"id": i, "amount": decimal.Decimal(i * 101) / 100, "currency": "EUR",
            "at": datetime.fromtimestamp((EPOCH_MS + i) / 1000, timezone.utc),
            "status": "NEW" if i % 2 else "PAID"}


def payment_v2(i: int) -> dict[str, Any]:
    return {**payment_v1(i), "currency": "USD", "memo": f"memo {i}" if i % 3 else None,
            "labels": [f"l{i}", "x"], "attrs": {"n": i}}


def as_v2(record: dict[str, Any]) -> dict[str, Any]:
    """`record` (v1 or v2) in v2's shape: what a v2 reader makes of it."""
    return {"memo": None, "labels": [], "attrs": {}, **record}


@dataclass(frozen=True)
class PaymentTopic:
    """A Kafka topic holding `v1_count` records written with v1, then `v2_count` with v2."""

    topic: str
    subject: str
    v1_id: int
    v2_id: int
    records: list[dict[str, Any]]  # as written, in offset order

    @property
    def expected(self) -> list[dict[str, Any]]:
        return [as_v2(r) for r in self.records]


def _sql_binary(value: bytes | None) -> str:
    return "NULL" if value is None else f"X'{value.hex()}'"


def binary_frame(spark: Any, values: list[bytes | None]) -> Any:
    """A DataFrame (n int, value binary) of `values`, row n holding values[n].

    Built as SQL VALUES, a local relation on the JVM: createDataFrame on a Python list
    would start Python workers just to unpickle a handful of rows.
    """
    rows = ", ".join(f"({n}, {_sql_binary(v)})" for n, v in enumerate(values))
    if not rows:
        return spark.sql("SELECT 0 AS n, CAST(NULL AS BINARY) AS value WHERE false")
    return spark.sql(f"SELECT CAST(n AS INT) AS n, CAST(value AS BINARY) AS value FROM VALUES {rows} AS t(n, value)")


def create_topic(bootstrap: str, topic: str) -> None:
    """Create a one-partition topic; blocks until the broker confirms it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)],
                        operation_timeout=TIMEOUT)[topic].result(timeout=TIMEOUT)


def produce(bootstrap: str, topic: str, serializer: AvroSerializer, records: list[dict[str, Any]]) -> None:
    """Produce `records` keyed by id and block until all are acknowledged (acks=all)."""
    producer = SerializingProducer({"bootstrap.servers": bootstrap, "acks": "all",
                                    "key.serializer": StringSerializer(), "value.serializer": serializer})
    errors: list[Any] = []
    for record in records:
        producer.produce(topic, key=str(record["id"]), value=record,
                         on_delivery=lambda err, _msg: errors.append(err) if err else None)
    assert producer.flush(TIMEOUT) == 0, "every record is delivered before the deadline"
    assert errors == [], "and none failed"


@pytest.fixture(scope="session")
def payment_topic(kafka_bootstrap: str, client: SchemaRegistryClient) -> PaymentTopic:
    """12 v1 records then 12 v2 records in a fresh topic, both versions under `<topic>-value`."""
    topic = f"spark-payments-{uuid.uuid4().hex[:10]}"
    create_topic(kafka_bootstrap, topic)
    first = [payment_v1(i) for i in range(12)]
    second = [payment_v2(i) for i in range(12, 24)]
    produce(kafka_bootstrap, topic, AvroSerializer(client, PAYMENT_V1), first)
    produce(kafka_bootstrap, topic, AvroSerializer(client, PAYMENT_V2), second)
    subject = f"{topic}-value"
    v1, v2 = (client.get_version(subject, n).schema_id for n in (1, 2))
    assert client.get_versions(subject) == [1, 2], "v1 then v2 registered under the topic's subject"
    return PaymentTopic(topic, subject, v1, v2, first + second)
