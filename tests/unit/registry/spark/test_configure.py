"""registry.spark.configure: one call adds our jar and the Kafka and Avro connectors to a
SparkSession builder, as delta-spark's configure_spark_with_delta_pip does (issue 50, item 5).

A recording builder stands in for pyspark's: what a session would be given is checked
without starting a JVM (tests/integration/spark starts the real ones).
"""
from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from registry.spark import configure, spark_packages  # noqa: E402
from registry.spark.jars import DECODER_JAR  # noqa: E402


class RecordingBuilder:
    def __init__(self) -> None:
        self.options: dict[str, str] = {}

    def config(self, key: str, value: str) -> RecordingBuilder:
        self.options[key] = value
        return self


def test_the_connectors_are_the_installed_sparks_own() -> None:
    version = metadata.version("pyspark")
    assert spark_packages() == [f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version}",
                                f"org.apache.spark:spark-avro_2.13:{version}"], \
        "the Kafka source and spark-avro of the very Spark pyspark runs, built for its Scala"


def test_configure_adds_our_jar_and_the_connector_packages() -> None:
    builder = RecordingBuilder()
    assert configure(builder, ["io.example:extra:1"]) is builder, "chains like the builder's own methods"
    packages = builder.options["spark.jars.packages"].split(",")
    assert packages == [*spark_packages(), "io.example:extra:1"], "connectors first, then the caller's"
    if DECODER_JAR.is_file():
        assert builder.options["spark.jars"] == str(DECODER_JAR), "the JVM expression's jar, from the package"
    else:
        assert "spark.jars" not in builder.options, "no jar built: the session decodes with from_avro"


def test_a_local_folder_replaces_the_download(tmp_path: Path) -> None:
    for name in ("spark-sql-kafka-0-10_2.13-4.0.0", "spark-token-provider-kafka-0-10_2.13-4.0.0",
                 "spark-avro_2.13-4.0.0", "kafka-clients-3.9.0", "commons-pool2-2.12.0"):
        (tmp_path / f"{name}.jar").touch()
    builder = configure(RecordingBuilder(), jars_folder=tmp_path, extra_jars=["/opt/mine.jar"])
    jars = builder.options["spark.jars"].split(",")
    assert "spark.jars.packages" not in builder.options, "offline: nothing for Spark to download"
    assert {Path(j).name for j in jars} >= {"spark-avro_2.13-4.0.0.jar", "mine.jar"}, \
        "the folder's connectors and the caller's jars, all on spark.jars"
    assert (str(DECODER_JAR) in jars) == DECODER_JAR.is_file(), "our jar too, where the package has it"


def test_a_folder_without_the_connectors_says_how_to_fetch_them(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="make infra-fetch"):
        configure(RecordingBuilder(), jars_folder=tmp_path)
