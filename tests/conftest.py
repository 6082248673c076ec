"""Fixtures giving integration tests a real Kafka (KRaft) and a real ZooKeeper.

By default each test session starts its own servers on fresh free ports in a temporary
directory (a few seconds) and stops them at the end, also when the session fails or is
interrupted. If ``KAFKA_BOOTSTRAP`` / ``ZOOKEEPER_CONNECT`` are set (e.g. from
``.infra/run/endpoints.env`` after ``make infra-up``), those servers are used instead
and left running.

The jars come from ``make infra-fetch``; tests never download anything. Without them
every test needing a server fails, saying so.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator

import pytest

# The repository root is on sys.path (pytest puts the parent of the `tests` package
# there), so the standard-library-only `infra` package imports like any other.
import infra


@pytest.fixture(scope="session", autouse=True)
def temporary_files_in_basetemp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """What the harnesses make with `tempfile` (a cluster's node logs and stores, a
    container cluster's saved logs) goes in this session's basetemp, of which pytest
    keeps the last three: kept for a look after a failure, not collected in /tmp."""
    before = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.getbasetemp())
    try:
        yield
    finally:
        tempfile.tempdir = before


def _require_jars() -> None:
    if not infra.jars_ready():
        pytest.fail(
            f"Kafka/ZooKeeper jars are missing or stale in {infra.JARS_DIR}: "
            "run `make infra-fetch` first (tests never download them)",
            pytrace=False,
        )


def _external(var: str, server: infra.JavaServer) -> infra.JavaServer | None:
    """The ``make infra-up`` server behind ``var``'s endpoint, if it is that one."""
    server.load_state()
    if server.is_running() and server.endpoint == os.environ[var]:
        return server
    return None


@pytest.fixture(scope="session")
def kafka_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[infra.KafkaServer | None]:
    """The session's Kafka broker handle (``restart()``, ``kill()``, ``bootstrap``).

    None when ``KAFKA_BOOTSTRAP`` names a broker that is not ``make infra-up``'s.
    Blocks for start-up (seconds); fails the requesting tests if it cannot start.
    """
    if os.environ.get("KAFKA_BOOTSTRAP"):
        yield _external("KAFKA_BOOTSTRAP", infra.KafkaServer(infra.RUN_DIR, die_with_parent=False))
        return
    _require_jars()
    server = infra.KafkaServer(tmp_path_factory.mktemp("kafka"))
    try:
        server.start()
        yield server
    finally:
        # Runs on failure and on Ctrl-C too; stop() SIGKILLs the group if SIGTERM is slow.
        server.stop(timeout=15)


@pytest.fixture(scope="session")
def zookeeper_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[infra.ZooKeeperServer | None]:
    """The session's ZooKeeper handle; None for a foreign ``ZOOKEEPER_CONNECT``."""
    if os.environ.get("ZOOKEEPER_CONNECT"):
        yield _external(
            "ZOOKEEPER_CONNECT", infra.ZooKeeperServer(infra.RUN_DIR, die_with_parent=False)
        )
        return
    _require_jars()
    server = infra.ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    try:
        server.start()
        yield server
    finally:
        server.stop(timeout=15)


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_server: infra.KafkaServer | None) -> str:
    """``host:port`` of a running Kafka broker for ``bootstrap.servers``."""
    return kafka_server.bootstrap if kafka_server else os.environ["KAFKA_BOOTSTRAP"]


@pytest.fixture(scope="session")
def zookeeper_connect(zookeeper_server: infra.ZooKeeperServer | None) -> str:
    """``host:port`` of a running ZooKeeper for kazoo's ``hosts``."""
    return zookeeper_server.connect if zookeeper_server else os.environ["ZOOKEEPER_CONNECT"]


@pytest.fixture
def kafka_broker(kafka_server: infra.KafkaServer | None) -> Iterator[infra.KafkaServer]:
    """A broker this test may restart or kill; it is serving again after the test."""
    if kafka_server is None:
        pytest.skip("KAFKA_BOOTSTRAP names an external broker that tests cannot restart")
    yield kafka_server
    # Leave a serving broker for the tests that follow, whatever this one did to it.
    if not kafka_server.is_healthy():
        kafka_server.restart()


@pytest.fixture
def fresh_topic() -> str:
    """A topic name no other test uses (``_schemas_<uuid>``); the topic is not created."""
    return f"_schemas_{uuid.uuid4().hex}"
