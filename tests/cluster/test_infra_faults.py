"""Infrastructure faults under writers, on containers: the Kafka broker (for each elector)
and ZooKeeper (for the ZooKeeper elector) are stopped, stay down a while, and start again
on the same address and data. The registries keep running throughout.

While it is down, every write through every node answers within the store timeout plus
a margin with a success or a Confluent 5000x error, never hangs; with Kafka down nothing
is acknowledged. Once it serves again, every node accepts writes within a bounded time,
without being restarted. Then the checks of every failover scenario: every acknowledged
write on every node, no id for two schemas, identical nodes, the topic audit.
"""
from __future__ import annotations

import time

import pytest

from tests.cluster.containers import ContainerCluster, ContainerInfra, InfraContainer
from tests.cluster.harness import wait_for
from tests.cluster.probes import answer_bound, assert_answers_bounded, final_checks, hold_until_observed, probes
from tests.cluster.test_failover import Writers

pytestmark = pytest.mark.integration

# How long a node may take to accept writes again once ZooKeeper or Kafka serves again:
# reconnecting, a session or group rejoin, the fence, catching up. A stopped container's
# address vanishes, so connections opened meanwhile hang as to a dead host until
# librdkafka's socket.connection.setup.timeout.ms (30 s by default) gives up on them.
RECOVERY_SECONDS = 60


def outage(cluster: ContainerCluster, server: InfraContainer, *, expect_no_acks: bool) -> None:
    """Stop `server` under writers, keep it down until every node has answered a write
    sent well into the outage, start it again."""
    bound = answer_bound(cluster)
    started = {node.index: node.box.started_at() for node in cluster.nodes}
    with Writers(cluster) as writers:
        wait_for(lambda: writers.count() >= 10, 30, "the first registrations")
        with probes(*((node, None) for node in cluster.nodes)) as all_probes:
            stop_at = time.monotonic()
            server.stop()
            down_at = time.monotonic()
            hold_until_observed(all_probes, down_at + 1, bound, "every node to answer during the outage")
            up_at = time.monotonic()
            server.start()
            server.wait_ready()
            serving_at = time.monotonic()
            for probe in all_probes:
                wait_for(lambda: probe.acked_since(serving_at), RECOVERY_SECONDS,
                         f"{probe.node} to accept writes again once {server.box.name} serves")
            before = writers.count()
            wait_for(lambda: writers.count() >= before + 4, 30, "the writers to go on after the outage")
        assert_answers_bounded(all_probes, bound, stop_at)
        if expect_no_acks:
            # Sanity of the fault itself: nothing is durable while the only broker is down.
            during = [a for p in all_probes for a in p.answers
                      if a.ok and a.sent > down_at and a.sent + a.elapsed < up_at]
            assert not during, f"writes were acknowledged while Kafka was down: {during[:3]}"
    assert {node.index: node.box.started_at() for node in cluster.nodes} == started, \
        "the registries must recover by themselves, not be restarted"
    final_checks(cluster, writers, all_probes)


@pytest.mark.parametrize("elector", ["zookeeper", "kafka"])
def test_kafka_restart_under_writers(elector: str, containers: ContainerInfra) -> None:
    with ContainerCluster(containers, 3, elector) as cluster:
        cluster.wait_for_leader(60)
        assert containers.kafka is not None
        outage(cluster, containers.kafka, expect_no_acks=True)


def test_zookeeper_restart_under_writers(containers: ContainerInfra) -> None:
    with ContainerCluster(containers, 3, "zookeeper") as cluster:
        cluster.wait_for_leader(60)
        assert containers.zookeeper is not None
        outage(cluster, containers.zookeeper, expect_no_acks=False)
