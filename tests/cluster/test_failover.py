"""Failover, for each elector: three nodes on one Kafka topic, four clients registering
new schemas through every node while the leader is killed (kill -9, five times),
paused past its session timeout and resumed (a zombie), and stopped with SIGTERM.

Afterwards:
- every acknowledged registration is on every node;
- no id names two schemas;
- all nodes hold identical state;
- the topic itself shows that only the fence holder's records count: every record
  that readers apply was written by the node whose fence precedes it, so nothing the
  zombie appended after its successor's fence took effect (DESIGN invariant 2).
"""
from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from store.kafka_log import EXPECTED_OFFSET_HEADER, ORIGIN_HEADER
from store.records import FenceValue, NoopKey, decode_key, decode_value
from tests.cluster.harness import Cluster, RegistryNode, wait_for

pytestmark = pytest.mark.integration

HEADERS = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


@dataclass(frozen=True)
class Acked:
    subject: str
    schema_id: int
    node: str


# How many acknowledged registrations make a scenario's checks meaningful.
FAIR_NUMBER = 40


class Writers:
    """Four clients registering new schemas round-robin through every node, with failover.

    On a clean exit they go on until at least FAIR_NUMBER registrations are acknowledged
    (within a minute), so every scenario ends with a fair number of them however long its
    faults stalled the writers: check_every_node asserts that number.
    """

    def __init__(self, cluster: Cluster, clients: int = 4) -> None:
        self._cluster = cluster
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.acked: list[Acked] = []
        self.errors: list[str] = []
        self._threads = [threading.Thread(target=self._run, args=(c,), daemon=True) for c in range(clients)]

    def __enter__(self) -> Writers:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        try:
            if exc_type is None:
                wait_for(lambda: self.count() >= FAIR_NUMBER, 60, f"{FAIR_NUMBER} acknowledged registrations")
        finally:
            self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def count(self) -> int:
        with self._lock:
            return len(self.acked)

    def _run(self, client: int) -> None:
        session = requests.Session()
        nodes = itertools.cycle(self._cluster.nodes)
        for n in itertools.count():
            if self._stop.is_set():
                return
            subject = f"c{client}-s{n}"
            body = json.dumps({"schema": json.dumps(
                {"type": "record", "name": f"R{client}_{n}", "fields": [{"name": "a", "type": "int"}]})})
            while not self._stop.is_set():
                node = next(nodes)
                try:
                    response = session.post(f"{node.url}/subjects/{subject}/versions", data=body,
                                            headers=HEADERS, timeout=8)
                except requests.RequestException:
                    self._stop.wait(0.05)
                    continue
                if response.status_code == 200:
                    with self._lock:
                        self.acked.append(Acked(subject, response.json()["id"], node.url))
                    break
                if response.status_code < 500:
                    with self._lock:
                        self.errors.append(f"{node.url}: {response.status_code} {response.text}")
                    break
                self._stop.wait(0.05)  # 5xx during a leader change: try the next node


def converged_state(cluster: Cluster) -> dict:
    """Wait until every live node answers the same state; return it. On a timeout, say
    how the nodes differ (an error body, or how many versions each holds)."""
    last: list[Any] = []

    def same() -> dict | None:
        states = [cluster.state(node) for node in cluster.live()]
        last[:] = states
        return states[0] if all(s == states[0] for s in states) else None

    try:
        return wait_for(same, 60, "all nodes to converge")
    except TimeoutError as exc:
        def summary(state: Any) -> Any:
            schemas = state.get("schemas") if isinstance(state, dict) else None
            if isinstance(schemas, list):
                return {"versions": len(schemas), "subjects": len(state.get("subjects") or []),
                        "config": state.get("config"), "mode": state.get("mode")}
            return state
        nodes = [node.url for node in cluster.live()]
        raise TimeoutError(f"{exc}: {[(url, summary(state)) for url, state in zip(nodes, last)]}") from None


def audit_topic(bootstrap: str, topic: str) -> tuple[int, int, list[str]]:
    """Read the raw topic: (records applied, records dropped as misplaced, violations).

    A violation is an applied record whose writer is not the holder of the latest
    applied fence before it.
    """
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "audit", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    applied = dropped = 0
    holder: bytes | None = None
    violations: list[str] = []
    try:
        while True:
            message = consumer.poll(10)
            assert message is not None, "the audit consumer got nothing for 10 s"
            if message.error():
                if message.error().code() == -191:  # _PARTITION_EOF: read to the end
                    break
                raise AssertionError(message.error())
            headers = dict(message.headers() or [])
            expected = headers.get(EXPECTED_OFFSET_HEADER)
            if expected is not None and int.from_bytes(expected, "big", signed=True) != message.offset():
                dropped += 1
                continue
            applied += 1
            origin = headers.get(ORIGIN_HEADER)
            key = decode_key(message.key())
            if type(key) is NoopKey and isinstance(decode_value(key, message.value()), FenceValue):
                holder = origin
            elif holder is not None and origin != holder:
                violations.append(f"offset {message.offset()} written by {origin!r} while {holder!r} "
                                  "held the fence")
    finally:
        consumer.close()
    return applied, dropped, violations


def kill_leader_and_recover(cluster: Cluster, writers: Writers) -> None:
    leader = cluster.wait_for_leader()
    leader.kill9()
    cluster.wait_for_leader(other_than=leader)
    before = writers.count()
    wait_for(lambda: writers.count() >= before + 4, 30, "registrations to resume after kill -9")
    leader.start()
    wait_for(leader.ready, 60, "the killed node to come back")


def run_failover_scenario(cluster) -> Writers:
    """The scenario, on any cluster backend: 5 x kill -9, a zombie, a graceful stop.

    Returns the writers once stopped. Asserts progress at every step.
    """
    cluster.wait_for_leader(60)
    with Writers(cluster) as writers:
        wait_for(lambda: writers.count() >= 10, 30, "the first registrations")
        for _ in range(5):
            kill_leader_and_recover(cluster, writers)

        zombie = cluster.wait_for_leader()
        zombie.pause()
        cluster.wait_for_leader(60, other_than=zombie)
        before = writers.count()
        wait_for(lambda: writers.count() >= before + 4, 30, "registrations while the leader is paused")
        zombie.resume()
        wait_for(lambda: (view := zombie.leader_view()) is not None and not view["is_leader"], 30,
                 "the resumed zombie to step down")
        before = writers.count()
        wait_for(lambda: writers.count() >= before + 8, 30, "registrations after the zombie resumed")

        leader = cluster.wait_for_leader()
        leader.terminate()
        cluster.wait_for_leader(30, other_than=leader)
        before = writers.count()
        wait_for(lambda: writers.count() >= before + 4, 30, "registrations after a graceful stop")
        leader.start()
        wait_for(leader.ready, 60, "the stopped node to come back")
        before = writers.count()
        wait_for(lambda: writers.count() >= before + 4, 30, "registrations with every node back")
    return writers


def check_every_node(cluster, writers: Writers) -> None:
    """Identical state everywhere, every acknowledged registration in it, ids unique."""
    assert not writers.errors, f"clients got 4xx answers: {writers.errors[:5]}"
    state = converged_state(cluster)
    ids: dict[int, str] = {}
    by_subject: dict[str, set[int]] = {}
    for version in state["schemas"]:
        assert ids.setdefault(version["id"], version["schema"]) == version["schema"], \
            f"id {version['id']} names two schemas"
        by_subject.setdefault(version["subject"], set()).add(version["id"])
    missing = [a for a in writers.acked if a.schema_id not in by_subject.get(a.subject, set())]
    assert not missing, f"{len(missing)} acknowledged registrations are lost, e.g. {missing[:3]}"
    assert len(writers.acked) >= FAIR_NUMBER, "the scenario should have registered a fair number of schemas"


@pytest.mark.parametrize("elector", ["zookeeper", "kafka"])
def test_failover_keeps_every_acknowledged_write_and_one_writer(elector, kafka_bootstrap, zookeeper_connect):
    with Cluster(3, elector, kafka_bootstrap=kafka_bootstrap, zookeeper_connect=zookeeper_connect) as cluster:
        writers = run_failover_scenario(cluster)
        check_every_node(cluster, writers)
        applied, dropped, violations = audit_topic(kafka_bootstrap, cluster.topic)
        assert not violations, f"records took effect without their writer holding the fence: {violations[:5]}"
        assert applied > len({a.subject for a in writers.acked}), "the audit must have read the registrations"
