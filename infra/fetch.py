"""The servers' jars, and Spark's connector jars, resolved from Maven Central with mvn.

Each component is a profile of a pom next to this file and resolves into
``JARS_DIR/<component>``; a marker holding the pom's digest says it is complete.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from infra.errors import InfraError
from infra.paths import JARS_DIR

POM = Path(__file__).resolve().parent / "pom.xml"
SPARK_POM = Path(__file__).resolve().parent / "spark-pom.xml"

# Profiles in infra/pom.xml; each resolves into JARS_DIR/<profile>.
COMPONENTS = ("kafka", "zookeeper")
# Not a server: Spark's Kafka and Avro connectors for registry/spark, handed to a
# SparkSession through spark.jars (profile "spark" in infra/spark-pom.xml).
SPARK_COMPONENT = "spark"
_POMS = {"kafka": POM, "zookeeper": POM, SPARK_COMPONENT: SPARK_POM}
_FETCH_MARKER = ".fetched"


def _pom_digest(component: str) -> str:
    return hashlib.sha256(_POMS[component].read_bytes()).hexdigest()


def jars_ready(jars_dir: Path = JARS_DIR, components: tuple[str, ...] = COMPONENTS) -> bool:
    """True when every component's jars were fetched completely from its current pom.

    ``components`` defaults to the servers; pass ``(SPARK_COMPONENT,)`` for Spark's.
    Does not block and does not raise.
    """
    try:
        return all(
            (jars_dir / c / _FETCH_MARKER).read_text().strip() == _pom_digest(c)
            for c in components
        )
    except OSError:
        return False


def fetch(
    jars_dir: Path = JARS_DIR,
    *,
    quiet: bool = True,
    components: tuple[str, ...] = (*COMPONENTS, SPARK_COMPONENT),
) -> None:
    """Resolve Kafka's and ZooKeeper's runtime classpaths, and Spark's connector jars,
    from Maven Central with mvn.

    Idempotent: a component whose folder was completed from the same pom is skipped.
    Each component resolves into a staging folder that is renamed into place only after
    mvn succeeded, so an interrupted fetch never leaves a half-filled classpath behind.

    Blocks for as long as mvn runs (tens of seconds cold, ~0 warm).
    Raises InfraError if mvn is missing or fails (its output is included).
    """
    mvn = shutil.which("mvn")
    jars_dir.mkdir(parents=True, exist_ok=True)
    for component in components:
        digest = _pom_digest(component)
        dest = jars_dir / component
        marker = dest / _FETCH_MARKER
        if marker.is_file() and marker.read_text().strip() == digest:
            if not quiet:
                print(f"{component}: already fetched in {dest}")
            continue
        if mvn is None:
            raise InfraError("mvn not found on PATH; install Maven 3.8+ and a JDK 17+")
        staging = jars_dir / f".staging-{component}"
        shutil.rmtree(staging, ignore_errors=True)
        # One line even when quiet: a cold fetch takes a minute and would look hung.
        print(f"infra: fetching {component} jars with mvn ...", file=sys.stderr, flush=True)
        cmd = [
            mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(_POMS[component]), "-P", component,
            f"-Djars.dir={staging}", "dependency:copy-dependencies",
        ]
        started = time.monotonic()
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        produced = staging / component
        if res.returncode != 0 or not any(produced.glob("*.jar")):
            output = re.sub(r"\x1b\[[0-9;]*m", "", res.stdout)  # mvn colours even with -B
            tail = "\n".join(output.strip().splitlines()[-40:])
            shutil.rmtree(staging, ignore_errors=True)
            raise InfraError(
                f"mvn failed to fetch {component} (exit {res.returncode}):\n"
                f"  {' '.join(cmd)}\n{tail}"
            )
        # Replace the whole folder so jars from an older pom cannot linger on the classpath.
        shutil.rmtree(dest, ignore_errors=True)
        produced.rename(dest)
        shutil.rmtree(staging, ignore_errors=True)
        marker.write_text(digest + "\n")
        if not quiet:
            n = len(list(dest.glob("*.jar")))
            print(f"{component}: fetched {n} jars into {dest} in {time.monotonic() - started:.0f}s")
