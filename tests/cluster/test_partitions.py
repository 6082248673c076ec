"""Network partitions on containers, for each elector: `docker network disconnect` of
a registry from some of the project's networks (tests/cluster/containers.py), then
`docker network connect` again. Nothing is restarted.

- leader cut from ZooKeeper and Kafka: it stops acknowledging writes within its session
  timeout; the other two elect a leader and accept writes;
- leader cut from ZooKeeper only (ZooKeeper elector): the zombie that can still reach the
  log; the same, and the topic audit shows none of its late appends took effect;
- leader cut from the followers only: it stays the leader and keeps acknowledging; writes
  sent to the followers fail with 50003/50004 instead of hanging;
- one follower cut from everything: the other two keep accepting writes; writes sent to
  the cut node fail fast.

Throughout, four writers register through every node, and probes time single writes
through each node: every answer comes within the store timeout plus a margin
(`answer_bound`), as a success or a Confluent 5000x error, never a hang. After healing:
every acknowledged write on every node, no id for two schemas, identical nodes, one
leader, and the topic audit (only the fence holder's records take effect).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.cluster.containers import KAFKA, KAFKA_PORT, PEER, REGISTRY_PORT, ZOOKEEPER, ZOOKEEPER_PORT, \
    ContainerCluster, ContainerInfra, ContainerNode
from tests.cluster.harness import wait_for
from tests.cluster.probes import WriteProbe, answer_bound, assert_answers_bounded, final_checks, probes
from tests.cluster.test_failover import Writers

pytestmark = pytest.mark.integration

def session_seconds(cluster: ContainerCluster) -> float:
    return cluster.session_timeout_ms / 1000


def assert_cut(node: ContainerNode, targets: dict[str, tuple[str, int]]) -> None:
    """Check from inside `node` that the cut holds: no connection opens to any target."""
    with ThreadPoolExecutor(len(targets)) as pool:
        reached = dict(zip(targets, pool.map(lambda t: node.can_reach(*t, timeout=1.0), targets.values())))
    assert not any(reached.values()), f"the partition leaks: {node} still reaches {reached}"


def cut_targets(cluster: ContainerCluster, node: ContainerNode, roles: tuple[str, ...]) -> dict[str, tuple[str, int]]:
    infra = cluster.infra
    targets = {}
    if ZOOKEEPER in roles:
        targets["zookeeper"] = (infra.zookeeper_connect.rsplit(":", 1)[0], ZOOKEEPER_PORT)
    if KAFKA in roles:
        targets["kafka"] = (infra.kafka_bootstrap.rsplit(":", 1)[0], KAFKA_PORT)
    if PEER in roles:
        for other in cluster.nodes:
            if other is not node:
                targets[f"node {other.index}"] = (other.addresses[PEER], REGISTRY_PORT)
    return targets


def elected_among(cluster: ContainerCluster, nodes: list[ContainerNode]) -> Callable[[], ContainerNode | None]:
    """A condition: one of `nodes` leads, and every one of them names it."""
    def found() -> ContainerNode | None:
        views = {node.index: node.leader_view() for node in nodes}
        leaders = [node for node in nodes if (views[node.index] or {}).get("is_leader")]
        if len(leaders) != 1:
            return None
        named = {(view or {}).get("leader") for view in views.values()}
        return leaders[0] if named == {leaders[0].advertised_url} else None

    return found


def wait_until_healed(cluster: ContainerCluster, writers: Writers, timeout: float = 60) -> ContainerNode:
    """After a heal, without restarting anything: one leader that every node names, and
    a write through every node succeeds. Returns the leader."""
    leader = wait_for(elected_among(cluster, cluster.nodes), timeout, "every node to agree on one leader after healing")
    for node in cluster.nodes:
        with WriteProbe(node, interval=0.2) as probe:
            wait_for(lambda: probe.acked(), timeout, f"a write through {node} after healing")
        writers.acked.extend(probe.acked())
    return leader


def cut_leader_from_log_and_election(cluster: ContainerCluster, roles: tuple[str, ...]) -> None:
    """The leader loses `roles` (ZooKeeper and/or Kafka); the followers keep everything."""
    leader = cluster.wait_for_leader(60)
    followers = [n for n in cluster.nodes if n is not leader]
    session, bound = session_seconds(cluster), answer_bound(cluster)
    with Writers(cluster) as writers:
        wait_for(lambda: writers.count() >= 10, 30, "the first registrations")
        with probes((leader, leader.advertised_url), (followers[0], None), (followers[1], None)) as all_probes:
            to_leader, via_followers = all_probes[0], all_probes[1:]
            wait_for(lambda: to_leader.acked(), 30, "the leader to acknowledge a probe before the cut")
            cut_at = time.monotonic()
            leader.cut(*roles)
            cut_done = time.monotonic()
            assert_cut(leader, cut_targets(cluster, leader, roles))
            wait_for(elected_among(cluster, followers), session + 30, "the followers to elect one of themselves")
            wait_for(lambda: any(p.acked_since(cut_done + session) for p in via_followers), 30,
                     "the majority side to acknowledge writes")
            # Keep the cut until every probe has seen the new steady state for a while.
            wait_for(lambda: time.monotonic() > cut_at + session + bound + 2, 60, "the partition to last")
            before = writers.count()
            wait_for(lambda: writers.count() >= before + 4, 30, "the writers to go on during the partition")
        late = to_leader.acked_since(cut_done + session)
        assert not late, (f"the leader cut from {roles} acknowledged {len(late)} writes sent more than its "
                          f"{session:g}s session timeout after the cut, e.g. {late[0]}")
        assert_answers_bounded(all_probes, bound, cut_at)
        leader.heal()
        wait_until_healed(cluster, writers)
    final_checks(cluster, writers, all_probes)


@pytest.mark.parametrize("elector", ["zookeeper", "kafka"])
def test_leader_cut_from_zookeeper_and_kafka(elector: str, containers: ContainerInfra) -> None:
    with ContainerCluster(containers, 3, elector) as cluster:
        cut_leader_from_log_and_election(cluster, (ZOOKEEPER, KAFKA))


def test_leader_cut_from_zookeeper_only_cannot_write_past_its_successor(containers: ContainerInfra) -> None:
    # The zombie that still reaches Kafka: only its session's end and the fence stop it.
    with ContainerCluster(containers, 3, "zookeeper") as cluster:
        cut_leader_from_log_and_election(cluster, (ZOOKEEPER,))


@pytest.mark.parametrize("elector", ["zookeeper", "kafka"])
def test_leader_cut_from_followers(elector: str, containers: ContainerInfra) -> None:
    with ContainerCluster(containers, 3, elector) as cluster:
        leader = cluster.wait_for_leader(60)
        followers = [n for n in cluster.nodes if n is not leader]
        bound = answer_bound(cluster)
        with Writers(cluster) as writers:
            wait_for(lambda: writers.count() >= 10, 30, "the first registrations")
            with probes((leader, None), (followers[0], None), (followers[1], None)) as all_probes:
                via_leader, via_followers = all_probes[0], all_probes[1:]
                cut_at = time.monotonic()
                leader.cut(PEER)
                cut_done = time.monotonic()
                assert_cut(leader, cut_targets(cluster, leader, (PEER,)))
                wait_for(lambda: time.monotonic() > cut_at + 2 * bound, 60, "the partition to last")
                assert len(via_leader.acked_since(cut_done)) >= 3, \
                    "the leader, still in touch with ZooKeeper and Kafka, must go on acknowledging writes"
                assert cluster.leader() is leader, "nothing but the followers' reach changed: the leader stays"
                # A write sent to a follower needs the leader it cannot reach.
                for probe in via_followers:
                    answers = [a for a in probe.answers if a.sent > cut_done]
                    assert answers and not any(a.ok for a in answers), \
                        f"{probe.node} cannot reach the leader, yet acknowledged a write it must forward"
                    assert {a.error_code for a in answers} <= {50003, 50004}, \
                        f"forwarded writes must fail with 50003/50004: {'; '.join(map(str, answers[:5]))}"
            assert_answers_bounded(all_probes, bound, cut_at)
            leader.heal()
            wait_until_healed(cluster, writers)
        final_checks(cluster, writers, all_probes)


@pytest.mark.parametrize("elector", ["zookeeper", "kafka"])
def test_follower_cut_from_everything(elector: str, containers: ContainerInfra) -> None:
    with ContainerCluster(containers, 3, elector) as cluster:
        leader = cluster.wait_for_leader(60)
        cut, other = [n for n in cluster.nodes if n is not leader]
        session, bound = session_seconds(cluster), answer_bound(cluster)
        roles = (ZOOKEEPER, KAFKA, PEER)
        with Writers(cluster) as writers:
            wait_for(lambda: writers.count() >= 10, 30, "the first registrations")
            with probes((cut, None), (leader, None), (other, None)) as all_probes:
                via_cut, via_majority = all_probes[0], all_probes[1:]
                cut_at = time.monotonic()
                cut.cut(*roles)
                cut_done = time.monotonic()
                assert_cut(cut, cut_targets(cluster, cut, roles))
                # A group elector sees the member vanish only after its session, then rebalances.
                wait_for(lambda: all(p.acked_since(cut_at + session) for p in via_majority), session + 30,
                         "the leader and the other follower to acknowledge writes")
                wait_for(lambda: time.monotonic() > cut_at + session + bound + 2, 60, "the partition to last")
            late = [a for a in via_cut.answers if a.ok and a.sent > cut_done]
            assert not late, f"{cut} reaches neither the log nor the leader, yet acknowledged {late[0]}"
            assert_answers_bounded(all_probes, bound, cut_at)
            assert [a for a in via_cut.answers if a.sent > cut_done], "the cut node must have been probed"
            cut.heal()
            wait_until_healed(cluster, writers)
        final_checks(cluster, writers, all_probes)
