"""ZooKeeper-specific failures: an expired session, and ZooKeeper itself restarting.

The ``zookeeper_cluster`` fixture checks the `Elector` contract for every test (see
``conftest.py``).
"""
from __future__ import annotations

import threading
import time

import pytest
from kazoo.client import KazooClient

from election.zookeeper import ZooKeeperElector
from tests.integration.conftest import infra
from tests.integration.election.conftest import Cluster, Node, report_timing, wait_until
from tests.integration.election.specs import ZK_SESSION_TIMEOUT

pytestmark = pytest.mark.integration

SETTLE = 20.0


def settle(cluster: Cluster, nodes: list[Node]) -> Node:
    """Wait until exactly one of ``nodes`` leads and every node names it; return it."""
    wait_until(lambda: cluster.one_leader(nodes) is not None, SETTLE, "one of the nodes leads")
    leader = cluster.one_leader(nodes)
    assert leader is not None, "still exactly one leader right after settling"
    wait_until(lambda: all(n.elector.leader() == leader.identity for n in nodes), SETTLE,
               f"every node names {leader.identity} as leader")
    return leader


def expire_session(elector: ZooKeeperElector, hosts: str) -> None:
    """Make ZooKeeper expire the elector's session, as it would after a long partition.

    Attaching a second client to the session moves the session to it (the elector's
    connection is dropped); closing that client then ends the session for good.
    """
    # Test-only reach into the elector: the session password is not part of its API.
    session = elector._client.client_id
    assert session is not None, "the elector must be connected to have a session to expire"
    thief = KazooClient(hosts=hosts, client_id=session, timeout=ZK_SESSION_TIMEOUT)
    try:
        thief.start(timeout=10)
    finally:
        thief.stop()
        thief.close()


def test_expired_session_demotes_the_leader_and_it_rejoins_with_a_new_session(
    zookeeper_connect: str, zookeeper_cluster: Cluster
) -> None:
    cluster = zookeeper_cluster
    nodes = [cluster.add() for _ in range(3)]
    leader = settle(cluster, nodes)
    assert isinstance(leader.elector, ZooKeeperElector), "the zookeeper_cluster builds ZooKeeper electors"
    old_session, old_epoch = leader.elector.session_id, leader.elector.epoch()
    rest = [n for n in nodes if n is not leader]

    started = time.monotonic()
    expire_session(leader.elector, zookeeper_connect)
    wait_until(lambda: cluster.one_leader(rest) is not None, ZK_SESSION_TIMEOUT + 3,
               "another node leads once the leader's session expired")
    failover = time.monotonic() - started

    successor = cluster.one_leader(rest)
    assert successor is not None, "exactly one successor leads"
    wait_until(lambda: leader.recorder.count("demoted") == 1, 5,
               "losing the session runs on_demoted on the old leader")
    assert not leader.elector.is_leader(), "the old leader must not report leadership after losing its session"
    # The same elector object comes back on its own, on a new session, as a follower.
    wait_until(lambda: leader.elector.leader() == successor.identity, 10,
               "the old leader rejoins and names the successor")
    assert leader.elector.session_id not in (None, old_session), "rejoining needs a brand-new session"
    new_epoch = successor.elector.epoch()
    assert old_epoch is not None and new_epoch is not None and new_epoch > old_epoch, (
        "the epoch (the leader znode's czxid) must grow with each new leader"
    )
    assert all(n.elector.epoch() == new_epoch for n in nodes), "every node agrees on the new epoch"
    report_timing("zookeeper: failover, session expired to successor leading", failover)


def test_electors_recover_on_their_own_when_zookeeper_restarts(
    zookeeper_server: infra.ZooKeeperServer | None, zookeeper_cluster: Cluster
) -> None:
    if zookeeper_server is None:
        pytest.skip("ZOOKEEPER_CONNECT names an external ZooKeeper that tests cannot restart")
    cluster = zookeeper_cluster
    nodes = [cluster.add() for _ in range(3)]
    observer = cluster.add(eligible=False)
    everyone = [*nodes, observer]
    leader = settle(cluster, everyone)

    # Watch every node throughout the outage: each must drop its view of the leader.
    saw_no_leader: set[int] = set()
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.002):
            for i, node in enumerate(everyone):
                if node.elector.leader() is None and not node.elector.is_leader():
                    saw_no_leader.add(i)

    watcher = threading.Thread(target=watch, name="test-outage-watcher", daemon=True)
    watcher.start()
    try:
        zookeeper_server.restart()
    finally:
        stop.set()
        watcher.join()
    restarted = time.monotonic()

    assert leader.recorder.count("demoted") >= 1, (
        "losing the connection to ZooKeeper must demote the leader at once (SUSPENDED)"
    )
    assert saw_no_leader == set(range(len(everyone))), (
        "while ZooKeeper is unreachable no node may name a leader (writes must fail fast, not go astray)"
    )

    # No elector was recreated: they reconnect and elect on their own.
    again = settle(cluster, everyone)
    report_timing("zookeeper: restart, ZooKeeper serving again to leader elected", time.monotonic() - restarted)
    assert again.recorder.count("elected") >= 1, "the leader after the restart ran on_elected"
    assert all(n.elector.epoch() == again.elector.epoch() for n in everyone), "every node agrees on the epoch"
