"""The build's one step setuptools does not know: registry.spark's jar.

Everything else is declared in pyproject.toml (the Rust extensions there too, built by
setuptools-rust). Before the packages are copied into the build, registry/spark/jvm/*.java
is compiled with javac against Spark's own jars into registry/spark/jvm/registry-spark.jar,
package data of registry.spark, which `registry.spark.configure(builder)` adds to a session.

Spark's jars are found at $SPARK_HOME/jars, else in an importable pyspark (an editable
install into a venv that has one, or a build without isolation); `make dist` sets
SPARK_HOME to the venv's pyspark. Where neither is found, or javac is missing, the jar is
left as it is: one already built (an sdist carries it) ships, else the wheel has none and
registry.spark decodes with spark-avro's from_avro, as it says when used. A jar newer than
every source is not rebuilt.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
JVM = ROOT / "registry" / "spark" / "jvm"
JAR = JVM / "registry-spark.jar"


def spark_jars() -> Path | None:
    """The folder of Spark's jars to compile against, or None where there is none."""
    home = os.environ.get("SPARK_HOME")
    if home and (Path(home) / "jars").is_dir():
        return Path(home) / "jars"
    spec = importlib.util.find_spec("pyspark")
    if spec is not None and spec.origin is not None and (Path(spec.origin).parent / "jars").is_dir():
        return Path(spec.origin).parent / "jars"
    return None


def build_spark_jar(log: Callable[[str], None]) -> None:
    """Compile JVM/*.java into JAR where sources changed and javac and Spark's jars exist.
    Blocks on javac (about ten seconds). Raises CalledProcessError when javac fails on
    our sources: a broken source is a broken build, not a quiet fallback."""
    sources = sorted(JVM.glob("*.java"))
    if not sources:
        return
    if JAR.is_file() and JAR.stat().st_mtime >= max(s.stat().st_mtime for s in sources):
        return
    jars, javac = spark_jars(), shutil.which("javac")
    if jars is None or javac is None:
        missing = "javac" if javac is None else "Spark's jars (set SPARK_HOME, or install pyspark)"
        log(f"registry-spark.jar not built: no {missing}; "
            f"{'the jar already built ships' if JAR.is_file() else 'registry.spark will use from_avro'}")
        return
    jar_tool = Path(os.path.realpath(javac)).parent / "jar"
    with tempfile.TemporaryDirectory(prefix="registry-spark-") as classes:
        subprocess.run([javac, "-nowarn", "--release", "17", "-d", classes, "-cp", f"{jars}/*",
                        *map(str, sources)], check=True)
        subprocess.run([str(jar_tool), "--create", "--file", str(JAR), "-C", classes, "registry"], check=True)
    log(f"built {JAR.relative_to(ROOT)} against {jars}")


class BuildPyWithSparkJar(build_py):
    """build_py that first makes registry.spark's jar (package data it then copies)."""

    def run(self) -> None:
        build_spark_jar(lambda message: self.announce(message, level=3))
        super().run()


setup(cmdclass={"build_py": BuildPyWithSparkJar})
