"""Local, real Apache Kafka (KRaft) and Apache ZooKeeper for development, tests and CI.

No Docker: the servers are the official jars from Maven Central (see ``infra/pom.xml``),
run as plain JVM processes bound to 127.0.0.1 on free ports. Standard library only,
because this runs before any virtualenv exists; run it from the repository root.

Command line (wired to make targets by the Makefile; see `infra.cli`)::

    python3 -m infra fetch    # mvn -> .infra/jars/{kafka,zookeeper,spark} (make infra-fetch)
    python3 -m infra up       # start both under .infra/run/          (make infra-up)
    python3 -m infra down     # stop both, keep logs and data          (make infra-down)
    python3 -m infra status   # exit 0 only if both are up and healthy

Python API (used by ``tests/conftest.py`` and the benchmarks)::

    import infra
    zk = infra.ZooKeeperServer(tmp / "zk"); zk.start()        # zk.connect == "127.0.0.1:PORT"
    kafka = infra.KafkaServer(tmp / "kafka"); kafka.start()   # kafka.bootstrap == "127.0.0.1:PORT"
    kafka.restart()                                            # same port, same data
    kafka.stop(); zk.stop()

Modules: `infra.servers` (the servers and starting them together), `infra.fetch`
(jars from Maven Central), `infra.cds` (faster JVM start-up), `infra.kafka_uuid`
(cluster ids), `infra.kafka_probe` (a broker health check over the wire),
`infra.ports`, `infra.processes`, `infra.jvm`, `infra.paths`, `infra.cli`.

Not part of the wheel: ``pyproject.toml`` packages only ``registry``, ``store`` and
``election``.
"""

from infra.cds import build_cds
from infra.errors import InfraError
from infra.fetch import COMPONENTS, SPARK_COMPONENT, fetch, jars_ready
from infra.kafka_uuid import random_uuid
from infra.paths import INFRA_DIR, JARS_DIR, ROOT, RUN_DIR
from infra.ports import HOST, free_port, port_is_free
from infra.servers import JavaServer, KafkaServer, ZooKeeperServer, running, start_all

__all__ = [
    "COMPONENTS",
    "HOST",
    "INFRA_DIR",
    "JARS_DIR",
    "ROOT",
    "RUN_DIR",
    "SPARK_COMPONENT",
    "InfraError",
    "JavaServer",
    "KafkaServer",
    "ZooKeeperServer",
    "build_cds",
    "fetch",
    "free_port",
    "jars_ready",
    "port_is_free",
    "random_uuid",
    "running",
    "start_all",
]
