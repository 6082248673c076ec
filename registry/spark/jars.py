"""The connector jars a SparkSession needs for registry/spark, from a local folder.

pyspark ships Spark but neither its Kafka source nor spark-avro. `make infra-fetch`
(or `mvn -f infra/spark-pom.xml -P spark dependency:copy-dependencies`) puts them,
and the few dependencies pyspark lacks, in `.infra/jars/spark`. Hand them to the
session through `spark.jars`, which reads local files: nothing is downloaded when the
session starts (unlike `spark.jars.packages`)::

    spark = (SparkSession.builder
             .config("spark.jars", connector_jars(".infra/jars/spark"))
             .getOrCreate())

The list also holds registry.spark's own jar where `make` built it (`DECODER_JAR`, from
registry/spark/jvm): the Avro decoder's JVM expression, which decodes framed records
in one step. Without it the decoder writes the same decoding with spark-avro alone.
"""
from __future__ import annotations

from pathlib import Path

DECODER_JAR = Path(__file__).resolve().parent / "jvm" / "registry-spark.jar"

# Each must be on the class path: the Kafka source needs the other three.
REQUIRED = ("spark-sql-kafka-0-10_", "spark-token-provider-kafka-0-10_", "spark-avro_",
            "kafka-clients-", "commons-pool2-")


def connector_jars(folder: str | Path) -> str:
    """The jars in `folder`, and `DECODER_JAR` if built, as the comma list `spark.jars`
    takes (absolute paths).

    Does not block. Raises FileNotFoundError, saying how to fetch them, when the
    folder is missing or lacks one of the connectors.
    """
    root = Path(folder).resolve()
    jars = sorted(root.glob("*.jar")) if root.is_dir() else []
    missing = [prefix.rstrip("-_") for prefix in REQUIRED
               if not any(jar.name.startswith(prefix) for jar in jars)]
    if missing:
        raise FileNotFoundError(
            f"Spark connector jars missing from {root}: {', '.join(missing)}. Fetch them with "
            "`make infra-fetch` (or `mvn -f infra/spark-pom.xml -P spark "
            "dependency:copy-dependencies -Djars.dir=<dir>`, which fills <dir>/spark)")
    if DECODER_JAR.is_file():
        jars.append(DECODER_JAR)
    return ",".join(str(jar) for jar in jars)
