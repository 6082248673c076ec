"""The gate follows only a leader that serves the same store as this node."""
from __future__ import annotations

from election.identity import LeaderIdentity
from election.static import StaticElector
from registry.leader_gate import ElectionView, LeaderGate
from registry.settings import load_settings
from store.cache import Cache
from store.memory_log import MemoryLog
from store.reader import LogReader
from store.writer import LogWriter

ME = LeaderIdentity("http", "me", 8081, store="kafka:c1:_schemas")


def gate_following(leader: LeaderIdentity) -> tuple[LeaderGate, ElectionView, StaticElector]:
    elector = StaticElector(ME, leader=leader, eligible=False)
    log = MemoryLog()
    cache = Cache()
    view = ElectionView(elector)
    gate = LeaderGate(LogWriter(log, cache, LogReader(log, cache), view), elector)
    elector.start(gate.on_elected, gate.on_demoted)
    return gate, view, elector


def test_a_leader_of_the_same_store_is_followed():
    leader = LeaderIdentity("http", "other", 8081, store="kafka:c1:_schemas")
    gate, view, elector = gate_following(leader)
    try:
        assert gate.leader_url() == "http://other:8081" and view.leads_elsewhere()
        assert gate.leader_problem() is None
    finally:
        elector.close()
        gate.close()


def test_a_leader_of_another_store_is_never_followed():
    leader = LeaderIdentity("http", "other", 8081, store="kafka:c1:_other_schemas")
    gate, view, elector = gate_following(leader)
    try:
        assert gate.leader_url() is None, "writes must not be forwarded into another cluster's log"
        assert not view.leads_elsewhere(), "nor may this node count as having a writer"
        problem = gate.leader_problem()
        assert problem is not None and "_other_schemas" in problem and "group" in problem
    finally:
        elector.close()
        gate.close()


def test_the_default_election_group_follows_the_topic():
    default = load_settings(environ={})
    other = load_settings(environ={}, overrides={"kafkastore.topic": "_schemas_team_b"})
    assert default.group_id == "schema-registry", "Confluent's default for the default topic"
    assert other.group_id == "schema-registry-_schemas_team_b"
    assert default.zookeeper_root != other.zookeeper_root
    explicit = load_settings(environ={}, overrides={"kafkastore.topic": "x", "schema.registry.group.id": "g"})
    assert (explicit.group_id, explicit.zookeeper_root) == ("g", "/g")
