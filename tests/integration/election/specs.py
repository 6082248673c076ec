"""Electors built from JSON specs, with the tests' short timeouts.

Shared by the test process (``conftest.py``) and child processes
(``elector_process.py``) so that both build exactly the same electors.
"""
from __future__ import annotations

from typing import Any

from election import Elector, LeaderIdentity

# ZooKeeper's tickTime is 500 ms in tests, so 2 s is 4 ticks (the minimum is 2).
ZK_SESSION_TIMEOUT = 2.0
# Kafka's default group.min.session.timeout.ms is 6 s: the shortest the broker allows.
KAFKA_SESSION_TIMEOUT_MS = 6000
KAFKA_HEARTBEAT_MS = 500


def kafka_topic(election: str) -> str:
    """The coordination topic of a Kafka election named ``election``."""
    return f"_{election}"


def spec(backend: str, servers: str, election: str, index: int, eligible: bool) -> dict[str, Any]:
    """A JSON-able description of node ``index`` of election ``election``."""
    return {
        "backend": backend,
        "servers": servers,
        "election": election,
        "port": 18000 + index,
        "node_id": f"node-{index}",
        "eligible": eligible,
    }


def identity(spec: dict[str, Any]) -> LeaderIdentity:
    return LeaderIdentity("http", "127.0.0.1", spec["port"], spec["node_id"])


def build_elector(spec: dict[str, Any]) -> Elector:
    """The (unstarted) elector a spec describes."""
    if spec["backend"] == "zookeeper":
        from election.zookeeper import ZooKeeperElector

        return ZooKeeperElector(
            identity(spec),
            spec["servers"],
            eligible=spec["eligible"],
            root=f"/{spec['election']}",
            session_timeout=ZK_SESSION_TIMEOUT,
        )
    from election.kafka_group import KafkaGroupElector

    return KafkaGroupElector(
        identity(spec),
        spec["servers"],
        eligible=spec["eligible"],
        group_id=spec["election"],
        topic=kafka_topic(spec["election"]),
        session_timeout_ms=KAFKA_SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=KAFKA_HEARTBEAT_MS,
    )
