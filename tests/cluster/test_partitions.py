"""Network partitions on containers, for each elector: `docker network disconnect` of
a registry from some of the project's networks (tests/cluster/containers.py), then
`docker network connect` again. Nothing is restarted.

- leader cut from ZooKeeper and Kafka: it stops acknowledging writes within its session
  timeout; the other two elect a leader and accept writes;
- the same with group commit off (`group.commit.enable=false`: each write on a thread of
  its own, appending alone; on by default);
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

from tests.cluster.containers import KAFKA, PEER, REGISTRY_PORT, ZOOKEEPER, ContainerCluster, ContainerInfra, \
    ContainerNode
from tests.cluster.harness import wait_for
from tests.cluster.probes import WriteProbe, answer_bound, assert_answers_bounded, final_checks, \
    hold_until_observed, probes
from tests.cluster.test_failover import Writers

pytestmark = pytest.mark.integration


def session_seconds(cluster: ContainerCluster) -> float:
    return cluster.session_timeout_ms / 1000


def cut_and_check(cluster: ContainerCluster, node: ContainerNode, roles: tuple[str, ...]) -> float:
    """Cut `node` from `roles`, then check from inside it that no connection opens to
    what it was cut from. Returns when the cut was in place (time.monotonic())."""
    node.cut(*roles)
    done = time.monotonic()
    targets = {}
    if ZOOKEEPER in roles:
        targets["zookeeper"] = cluster.infra.zookeeper_address
    if KAFKA in roles:
        targets["kafka"] = cluster.infra.kafka_address
    if PEER in roles:
        targets.update({f"node {o.index}": (o.addresses[PEER], REGISTRY_PORT) for o in cluster.nodes if o is not node})
    with ThreadPoolExecutor(len(targets)) as pool:
        reached = dict(zip(targets, pool.map(lambda t: node.can_reach(*t, timeout=1.0), targets.values())))
    assert not any(reached.values()), f"the partition leaks: {node} still reaches {reached}"
    return done


def elected_among(nodes: list[ContainerNode]) -> Callable[[], ContainerNode | None]:
    """A condition: one of `nodes` leads, and every one of them names it."""
    def found() -> ContainerNode | None:
        views = [node.leader_view() or {} for node in nodes]
        leaders = [node for node, view in zip(nodes, views) if view.get("is_leader")]
        if len(leaders) != 1:
            return None
        return leaders[0] if {view.get("leader") for view in views} == {leaders[0].advertised_url} else None

    return found


def wait_until_healed(cluster: ContainerCluster, writers: Writers, timeout: float = 60) -> None:
    """After a heal, without restarting anything: one leader that every node names, and
    a write through every node succeeds."""
    wait_for(elected_among(cluster.nodes), timeout, "every node to agree on one leader after healing")
    for node in cluster.nodes:
        with WriteProbe(node) as probe:
            wait_for(probe.acked, timeout, f"a write through {node} after healing")
        writers.acked.extend(probe.acked())


def cut_leader_from_log_and_election(cluster: ContainerCluster, roles: tuple[str, ...]) -> None:
    """The leader loses `roles` (ZooKeeper and/or Kafka); the followers keep everything."""
    leader = cluster.wait_for_leader(60)
    followers = [n for n in cluster.nodes if n is not leader]
    session, bound = session_seconds(cluster), answer_bound(cluster)
    with Writers(cluster) as writers:
        wait_for(lambda: writers.count() >= 10, 30, "the first registrations")
        # The leader's probe is marked as forwarded to it: it must append or refuse, never forward.
        with probes((leader, leader.advertised_url), (followers[0], None), (followers[1], None)) as all_probes:
            to_leader, via_followers = all_probes[0], all_probes[1:]
            wait_for(to_leader.acked, 30, "the leader to acknowledge a probe before the cut")
            cut_at = time.monotonic()
            cut_done = cut_and_check(cluster, leader, roles)
            wait_for(elected_among(followers), session + 30, "the followers to elect one of themselves")
            wait_for(lambda: any(p.acked_since(cut_done + session) for p in via_followers), 30,
                     "the majority side to acknowledge writes")
            hold_until_observed(all_probes, cut_done + session, bound, "every node to answer during the partition")
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


def test_without_group_commit_a_leader_cut_from_zookeeper_and_kafka_answers_within_the_same_bound(
        containers: ContainerInfra) -> None:
    # On by default; off, each registration blocks a thread of its own on the write.
    with ContainerCluster(containers, 3, "zookeeper",
                          extra_env={"SCHEMA_REGISTRY_GROUP_COMMIT_ENABLE": "false"}) as cluster:
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
                cut_done = cut_and_check(cluster, leader, (PEER,))
                # Past a whole forwarding timeout, so that stale connections to the leader have expired.
                hold_until_observed(all_probes, cut_done + bound, bound, "every node to answer during the partition")
                assert cluster.leader() is leader, "nothing but the followers' reach changed: the leader stays"
            assert len(via_leader.acked_since(cut_done)) >= 3, \
                "the leader, still in touch with ZooKeeper and Kafka, must go on acknowledging writes"
            for probe in via_followers:
                # Every write sent to a follower needs the leader it cannot reach.
                answers = [a for a in probe.answers if a.sent > cut_done]
                assert not any(a.ok for a in answers), \
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
        with Writers(cluster) as writers:
            wait_for(lambda: writers.count() >= 10, 30, "the first registrations")
            with probes((cut, None), (leader, None), (other, None)) as all_probes:
                via_cut, via_majority = all_probes[0], all_probes[1:]
                cut_at = time.monotonic()
                cut_done = cut_and_check(cluster, cut, (ZOOKEEPER, KAFKA, PEER))
                # A group elector sees the member vanish only after its session, then rebalances.
                wait_for(lambda: all(p.acked_since(cut_done + session) for p in via_majority), session + 30,
                         "the leader and the other follower to acknowledge writes")
                hold_until_observed(all_probes, cut_done + session, bound, "every node to answer during the partition")
            late = [a for a in via_cut.answers if a.ok and a.sent > cut_done]
            assert not late, f"{cut} reaches neither the log nor the leader, yet acknowledged {late[0]}"
            assert_answers_bounded(all_probes, bound, cut_at)
            cut.heal()
            wait_until_healed(cluster, writers)
        final_checks(cluster, writers, all_probes)
