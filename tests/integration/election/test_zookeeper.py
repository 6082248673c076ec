"""ZooKeeper-specific failures: an expired session (and the znode that died with it), a
dropped connection, the leader znode deleted behind the leader's back, a leader whose
``on_elected`` fails, an unreachable ZooKeeper, and ZooKeeper itself restarting.

The ``zookeeper_cluster`` fixture checks the `Elector` contract for every test (see
``conftest.py``).
"""
from __future__ import annotations

import socket
import threading
import time

import pytest
from kazoo.client import KazooClient

import infra
from election import LeaderIdentity
from election.zookeeper import ZooKeeperElector
from tests.integration.election import specs
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


def test_after_its_session_expired_a_node_never_reports_the_znode_that_died_with_it(
    zookeeper_connect: str, zookeeper_cluster: Cluster
) -> None:
    cluster = zookeeper_cluster
    leader = cluster.add()
    settle(cluster, [leader])
    assert isinstance(leader.elector, ZooKeeperElector), "the zookeeper_cluster builds ZooKeeper electors"
    old_session, old_epoch = leader.elector.session_id, leader.elector.epoch()

    stale: list[tuple[int | None, object]] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.0005):
            session = leader.elector.session_id
            epoch, named = leader.elector.epoch(), leader.elector.leader()
            if session not in (None, old_session) and session == leader.elector.session_id and (
                epoch == old_epoch and named is not None
            ):
                stale.append((epoch, named))

    watcher = threading.Thread(target=watch, name="test-stale-watcher", daemon=True)
    watcher.start()
    try:
        expire_session(leader.elector, zookeeper_connect)

        def leads_again() -> bool:
            epoch = leader.elector.epoch()
            return leader.elector.is_leader() and epoch is not None and old_epoch is not None and epoch > old_epoch

        wait_until(leads_again, ZK_SESSION_TIMEOUT + 5, "the node leads again, on a new znode")
    finally:
        stop.set()
        watcher.join()
    assert not stale, (
        f"on its new session the node named the znode of its expired session: {stale[:3]} "
        "(ZooKeeper deleted that znode with the session)"
    )


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


def drop_connection(elector: ZooKeeperElector) -> None:
    """Break the elector's TCP connection to ZooKeeper; its session stays alive.

    kazoo sees the socket close (SUSPENDED) and reconnects to the same session within
    a fraction of the session timeout.
    """
    # Test-only reach into kazoo: there is no public way to cut one client's connection.
    sock = elector._client._connection._socket
    assert sock is not None, "the elector must be connected to have a connection to drop"
    sock.shutdown(socket.SHUT_RDWR)


def test_a_dropped_connection_demotes_and_the_same_session_reelects_on_the_same_epoch(
    zookeeper_cluster: Cluster,
) -> None:
    cluster = zookeeper_cluster
    nodes = [cluster.add() for _ in range(3)]
    leader = settle(cluster, nodes)
    assert isinstance(leader.elector, ZooKeeperElector), "the zookeeper_cluster builds ZooKeeper electors"
    session, epoch = leader.elector.session_id, leader.elector.epoch()

    drop_connection(leader.elector)
    wait_until(lambda: leader.recorder.count("demoted") == 1, 5,
               "a dropped connection demotes the leader (SUSPENDED: its claim is in doubt)")
    wait_until(lambda: leader.recorder.count("elected") == 2 and leader.elector.is_leader(), 5,
               "back on the same session, the znode is still the leader's: it is elected again")

    assert leader.elector.session_id == session, "the session survived: kazoo reconnected to it"
    assert leader.elector.epoch() == epoch, "re-elected on the same znode, the leader keeps its epoch"
    assert all(n.recorder.count("elected") == 0 for n in nodes if n is not leader), (
        "the other nodes never lead: the znode stayed held by the leader's live session"
    )
    assert all(n.elector.leader() == leader.identity for n in nodes), "every node still names the leader"


def test_a_leader_znode_deleted_behind_the_leaders_back_ends_its_term(
    zookeeper_connect: str, zookeeper_cluster: Cluster
) -> None:
    # One eligible node: with two, the other could win the new znode before the old
    # leader's watch fires (ZooKeeper notifies sessions independently), and both would
    # report is_leader() for that moment. Across processes that is what fencing is for.
    cluster = zookeeper_cluster
    leader = cluster.add()
    observer = cluster.add(eligible=False)
    settle(cluster, [leader, observer])
    assert isinstance(leader.elector, ZooKeeperElector), "the zookeeper_cluster builds ZooKeeper electors"
    old_epoch = leader.elector.epoch()

    # An operator deletes the znode: the leader's session lives on, but its claim is gone.
    operator = KazooClient(hosts=zookeeper_connect)
    operator.start(timeout=10)
    try:
        operator.delete(leader.elector.path)
    finally:
        operator.stop()
        operator.close()

    wait_until(lambda: leader.recorder.count("demoted") == 1, 5,
               "the leader whose znode was deleted is demoted (its term is over)")

    def new_term() -> bool:
        epoch = leader.elector.epoch()
        return leader.elector.is_leader() and epoch is not None and old_epoch is not None and epoch > old_epoch

    wait_until(new_term, 10, "the leader claims a new znode: a new term on a larger epoch")
    assert leader.recorder.count("elected") == 2, "the new term ran on_elected again"
    wait_until(lambda: observer.elector.epoch() == leader.elector.epoch(), 5, "the observer sees the new epoch")


def test_a_leader_whose_on_elected_raises_steps_aside_for_the_back_off(zookeeper_cluster: Cluster) -> None:
    cluster = zookeeper_cluster
    release = threading.Event()
    calls: list[str] = []

    def on_elected() -> None:
        calls.append("elected")
        if calls.count("elected") == 1:
            release.wait(10)  # fail only once the other node is up and following
            raise RuntimeError("cannot take office")

    spec = cluster.spec()
    failing = specs.build_elector(spec)
    assert isinstance(failing, ZooKeeperElector), "the zookeeper_cluster builds ZooKeeper electors"
    failing.start(on_elected, lambda: calls.append("demoted"))
    try:
        wait_until(lambda: calls == ["elected"], SETTLE, "the first node is elected (and will fail)")
        other = cluster.add()
        wait_until(lambda: other.elector.leader() == failing.identity, SETTLE,
                   "the second node follows the first")
        release.set()

        wait_until(lambda: other.elector.is_leader(), 5,
                   "after on_elected raised, the node gives up the znode and the other one leads")
        assert calls == ["elected", "demoted"], "a failed on_elected is paired with on_demoted"
        assert not failing.is_leader(), "the node whose on_elected raised must not lead"
        wait_until(lambda: failing.leader() == other.identity, 5, "the resigned node follows the new leader")

        # The back-off is over long before this: the node competes again like any other.
        other.close()
        wait_until(failing.is_leader, SETTLE, "the resigned node leads again once the seat is free")
        assert calls == ["elected", "demoted", "elected"], "its second term ran on_elected once"
    finally:
        release.set()
        failing.close()
    assert calls[-1] == "demoted", "close() ends the second term with on_demoted"


def test_start_and_close_never_wait_for_an_unreachable_zookeeper(zookeeper_cluster: Cluster) -> None:
    # zookeeper_cluster only for its teardown check that close() stopped every elector thread.
    # A port that nothing listens on: every connection attempt is refused.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        hosts = f"127.0.0.1:{probe.getsockname()[1]}"
    elector = ZooKeeperElector(LeaderIdentity("http", "127.0.0.1", 18999, "lonely"), hosts,
                               session_timeout=ZK_SESSION_TIMEOUT)
    calls: list[str] = []
    started = time.monotonic()
    elector.start(lambda: calls.append("elected"), lambda: calls.append("demoted"))
    assert time.monotonic() - started < 1.0, "start() returns without waiting for a connection"
    try:
        # While kazoo tries (and fails) to connect, again and again, nothing is reported.
        watch_until = time.monotonic() + 0.5
        while time.monotonic() < watch_until:
            assert elector.leader() is None and elector.epoch() is None, "with no ZooKeeper no leader is known"
            assert not elector.is_leader() and not calls, "with no ZooKeeper nobody is elected"
            time.sleep(0.005)
    finally:
        closing = time.monotonic()
        elector.close()
    assert time.monotonic() - closing < ZK_SESSION_TIMEOUT + 1, "close() gives up connecting promptly"
