"""Kafka-specific failure: the broker (the group coordinator) restarting.

The ``kafka_cluster`` fixture checks the `Elector` contract for every test (see
``conftest.py``).
"""
from __future__ import annotations

import time

import pytest

import infra
from tests.integration.election.conftest import Cluster, report_timing, wait_until

pytestmark = pytest.mark.integration

SETTLE = 30.0


def test_electors_recover_on_their_own_when_the_broker_restarts(
    kafka_broker: infra.KafkaServer, kafka_cluster: Cluster
) -> None:
    cluster = kafka_cluster
    nodes = [cluster.add() for _ in range(3)]
    observer = cluster.add(eligible=False)
    everyone = [*nodes, observer]

    def settled() -> bool:
        leader = cluster.one_leader(nodes)
        return leader is not None and all(n.elector.leader() == leader.identity for n in everyone)

    wait_until(settled, SETTLE, "one node leads and every node names it")

    kafka_broker.restart()
    restarted = time.monotonic()

    # No elector was recreated: librdkafka reconnects, the group re-forms (or survives,
    # if the restart was shorter than the session timeout) and everyone agrees again.
    wait_until(settled, SETTLE, "after the restart one node leads and every node names it")
    report_timing("kafka: restart, broker serving again to leader elected and named by all",
                  time.monotonic() - restarted)
    assert len(cluster.leaders()) == 1, "exactly one node may lead after the broker restart"
