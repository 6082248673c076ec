"""The failover scenario of test_failover.py on containers, for each elector.

Nodes are registry containers (tests/cluster/containers.py) on the project's own
networks, with ZooKeeper and Kafka in containers too: `docker kill` is kill -9, `docker
pause`/`unpause` is SIGSTOP/SIGCONT (the cgroup freezer), `docker stop` is SIGTERM. Four
writers register through every node; the same checks follow: every acknowledged write on
every node, no id naming two schemas, identical nodes, and the topic audit.

Skips, saying why, where no Docker engine answers or no image can be made (see
tests/cluster/conftest.py); `make docker-engine` starts an engine as root.
"""
from __future__ import annotations

import pytest

from tests.cluster.containers import ContainerCluster, ContainerInfra
from tests.cluster.test_failover import audit_topic, check_every_node, run_failover_scenario

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("elector", ["zookeeper", "kafka"])
def test_failover_on_containers(elector: str, containers: ContainerInfra) -> None:
    with ContainerCluster(containers, 3, elector) as cluster:
        writers = run_failover_scenario(cluster)
        check_every_node(cluster, writers)
        applied, _, violations = audit_topic(containers.kafka_bootstrap_host, cluster.topic)
        assert not violations, f"records took effect without their writer holding the fence: {violations[:5]}"
        assert applied > len({a.subject for a in writers.acked}), "the audit must have read the registrations"
