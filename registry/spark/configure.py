"""One call gives a SparkSession builder what registry.spark needs, as delta-spark's
`configure_spark_with_delta_pip` does for Delta::

    from pyspark.sql import SparkSession
    from registry.spark import configure

    spark = configure(SparkSession.builder.appName("orders")).getOrCreate()

It sets two options of the builder:
- `spark.jars`: registry.spark's own jar (`DECODER_JAR`, built into the wheel from
  registry/spark/jvm), the JVM expression that decodes framed Avro in one step;
- `spark.jars.packages`: the Kafka source and spark-avro of the installed pyspark's Spark
  and Scala versions, which Spark resolves from Maven Central (or `spark.jars.repositories`)
  when the session starts.

Given `jars_folder` (`make infra-fetch` fills .infra/jars/spark), the connectors come from
that folder instead and nothing is downloaded: `connector_jars(jars_folder)` on `spark.jars`.

Without this helper a session still decodes: with spark-avro on its class path and no
jar of ours, `AvroDecoder` writes the same decoding with `from_avro`.
"""
from __future__ import annotations

import importlib.util
import re
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Protocol, Self

from registry.spark.jars import DECODER_JAR, connector_jars

# The connectors a Kafka-reading session needs; their own dependencies come with them.
CONNECTORS = ("spark-sql-kafka-0-10", "spark-avro")
# Spark 4 is built for Scala 2.13 only: the answer where pyspark's jars do not say.
DEFAULT_SCALA = "2.13"


class SessionBuilder(Protocol):
    """What `configure` uses of `pyspark.sql.SparkSession.Builder`."""

    def config(self, key: str, value: str) -> Self: ...


def spark_packages(extra_packages: Sequence[str] = ()) -> list[str]:
    """Maven coordinates of `CONNECTORS` for the installed pyspark, then `extra_packages`.
    Raises PackageNotFoundError when pyspark is not installed (the `spark` extra)."""
    version = metadata.version("pyspark")
    scala = scala_version()
    return [*(f"org.apache.spark:{name}_{scala}:{version}" for name in CONNECTORS), *extra_packages]


def scala_version() -> str:
    """The Scala binary version pyspark's Spark was built for (its scala-library jar)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is not None and spec.origin is not None:
        for jar in (Path(spec.origin).parent / "jars").glob("scala-library-*.jar"):
            found = re.fullmatch(r"scala-library-(\d+\.\d+)\.\d+\.jar", jar.name)
            if found:
                return found.group(1)
    return DEFAULT_SCALA


def configure(builder: SessionBuilder, extra_packages: Sequence[str] = (), *,
              jars_folder: str | Path | None = None, extra_jars: Sequence[str | Path] = ()) -> SessionBuilder:
    """`builder` with registry.spark's jar and the Kafka and Avro connectors (see the
    module docstring); returns it for chaining. Sets `spark.jars` and, without
    `jars_folder`, `spark.jars.packages`, replacing values set before: give yours as
    `extra_jars` and `extra_packages`.

    Does not block (Spark fetches packages when the session starts). Raises
    FileNotFoundError when `jars_folder` lacks a connector (see connector_jars).
    """
    if jars_folder is not None:
        jars = [*connector_jars(jars_folder).split(","), *map(str, extra_jars)]
    else:
        jars = [*([str(DECODER_JAR)] if DECODER_JAR.is_file() else []), *map(str, extra_jars)]
        builder = builder.config("spark.jars.packages", ",".join(spark_packages(extra_packages)))
    if jars_folder is not None and extra_packages:
        builder = builder.config("spark.jars.packages", ",".join(extra_packages))
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    return builder
