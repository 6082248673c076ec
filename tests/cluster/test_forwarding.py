"""Forwarding rules on a real cluster (ZooKeeper election, Kafka store)."""
from __future__ import annotations

import json
import time

import pytest
import requests

from tests.cluster.harness import Cluster, wait_for

pytestmark = pytest.mark.integration

HEADERS = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
BODY = json.dumps({"schema": json.dumps({"type": "record", "name": "F", "fields": []})})


def register(url: str, subject: str, headers: dict | None = None, timeout: float = 20) -> requests.Response:
    return requests.post(f"{url}/subjects/{subject}/versions", data=BODY, headers={**HEADERS, **(headers or {})},
                         timeout=timeout)


def test_without_an_eligible_node_writes_wait_then_fail_with_50004_and_reads_work(
        kafka_bootstrap, zookeeper_connect):
    with Cluster(1, "zookeeper", kafka_bootstrap=kafka_bootstrap, zookeeper_connect=zookeeper_connect,
                 require_leader=False,
                 extra_env={"SCHEMA_REGISTRY_LEADER_ELIGIBILITY": "false",
                            "SCHEMA_REGISTRY_KAFKASTORE_TIMEOUT_MS": "2000"}) as cluster:
        node = cluster.nodes[0]
        ready = requests.get(f"{node.url}/ready", timeout=5)
        assert ready.status_code == 503 and ready.json()["error_code"] == 50002, \
            "no leader known: /ready must not claim that writes work"
        began = time.monotonic()
        response = register(node.url, "s")
        waited = time.monotonic() - began
        assert response.status_code == 500 and response.json()["error_code"] == 50004, response.text
        assert 1.5 < waited < 6, f"a write waits for an election up to kafkastore.timeout.ms (2 s), then " \
                                 f"fails; it waited {waited:.1f} s"
        assert requests.get(f"{node.url}/subjects", timeout=5).json() == [], "reads need no leader"


def test_followers_forward_and_a_forwarded_request_is_never_forwarded_again(kafka_bootstrap, zookeeper_connect):
    with Cluster(2, "zookeeper", kafka_bootstrap=kafka_bootstrap, zookeeper_connect=zookeeper_connect) as cluster:
        leader = cluster.wait_for_leader()
        follower = next(n for n in cluster.nodes if n is not leader)
        response = register(follower.url, "through-follower")
        assert response.status_code == 200, response.text
        schema_id = response.json()["id"]
        wait_for(lambda: requests.get(f"{leader.url}/schemas/ids/{schema_id}", timeout=2).status_code == 200,
                 10, "the forwarded write on the leader")
        again = register(follower.url, "through-follower")
        assert again.json()["id"] == schema_id, "an existing registration is answered (locally) with its id"
        looped = register(follower.url, "loop", headers={"X-Forward": follower.url})
        assert looped.status_code == 500 and looped.json()["error_code"] == 50004, \
            "a request forwarded here as to the leader must not be forwarded again"
        spoofed = register(follower.url, "client-header", headers={"X-Forward": "true"})
        assert spoofed.status_code == 200, \
            f"a client's own X-Forward header is not a cluster's forward: it is ignored ({spoofed.text})"


def test_an_unreachable_leader_gives_50003(kafka_bootstrap, zookeeper_connect):
    # A long session keeps the paused leader elected, so the follower tries to reach it.
    with Cluster(2, "zookeeper", kafka_bootstrap=kafka_bootstrap, zookeeper_connect=zookeeper_connect,
                 session_timeout_ms=30000, extra_env={"SCHEMA_REGISTRY_KAFKASTORE_TIMEOUT_MS": "2000"}) as cluster:
        leader = cluster.wait_for_leader()
        follower = next(n for n in cluster.nodes if n is not leader)
        leader.pause()
        try:
            began = time.monotonic()
            response = register(follower.url, "s")
            assert response.status_code == 500 and response.json()["error_code"] == 50003, response.text
            assert time.monotonic() - began < 10, "forwarding must give up within its timeout"
        finally:
            leader.resume()


def test_a_leader_serving_another_topic_is_never_followed(kafka_bootstrap, zookeeper_connect):
    # Two clusters (two topics) configured with the same election group by mistake.
    shared = {"SCHEMA_REGISTRY_SCHEMA_REGISTRY_GROUP_ID": "shared-by-mistake",
              "SCHEMA_REGISTRY_LEADER_ELECTION_ZOOKEEPER_ROOT": f"/shared-{time.monotonic_ns()}",
              "SCHEMA_REGISTRY_KAFKASTORE_TIMEOUT_MS": "2000"}
    with Cluster(1, "zookeeper", kafka_bootstrap=kafka_bootstrap, zookeeper_connect=zookeeper_connect,
                 extra_env=shared) as first:
        leader = first.wait_for_leader()
        with Cluster(1, "zookeeper", kafka_bootstrap=kafka_bootstrap, zookeeper_connect=zookeeper_connect,
                     extra_env=shared, require_leader=False) as second:
            node = second.nodes[0]
            # Serving reads comes before the election client has read the leader's node: wait for it.
            wait_for(lambda: (node.leader_view() or {}).get("leader") == leader.url, 10,
                     "the shared election to name the first's leader")
            ready = requests.get(f"{node.url}/ready", timeout=5)
            assert ready.status_code == 503 and "another store" in ready.json()["message"], ready.text
            response = register(node.url, "must-not-leak")
            assert response.status_code == 500 and response.json()["error_code"] == 50004, response.text
            assert "schema.registry.group.id" in response.json()["message"], "the error says what to fix"
            assert requests.get(f"{leader.url}/subjects", timeout=5).json() == [], \
                "nothing reached the other cluster's topic"


def test_two_clusters_on_two_topics_elect_apart_by_default(kafka_bootstrap, zookeeper_connect):
    with Cluster(1, "zookeeper", kafka_bootstrap=kafka_bootstrap, zookeeper_connect=zookeeper_connect,
                 default_group=True) as first, \
         Cluster(1, "zookeeper", kafka_bootstrap=kafka_bootstrap, zookeeper_connect=zookeeper_connect,
                 default_group=True) as second:
        assert first.wait_for_leader() is first.nodes[0] and second.wait_for_leader() is second.nodes[0]
        assert register(second.nodes[0].url, "own").status_code == 200


def test_a_write_forwarded_to_a_paused_leader_goes_to_its_successor(kafka_bootstrap, zookeeper_connect):
    with Cluster(3, "zookeeper", kafka_bootstrap=kafka_bootstrap, zookeeper_connect=zookeeper_connect,
                 session_timeout_ms=2000, extra_env={"SCHEMA_REGISTRY_KAFKASTORE_TIMEOUT_MS": "15000"}) as cluster:
        leader = cluster.wait_for_leader()
        follower = next(n for n in cluster.nodes if n is not leader)
        leader.pause()
        try:
            began = time.monotonic()
            response = register(follower.url, "after-pause", timeout=30)
            took = time.monotonic() - began
            assert response.status_code == 200, response.text
            assert took < 10, (f"the write must reach the new leader once it is elected (session 2 s), not wait "
                               f"out the 15 s timeout on the paused one; it took {took:.1f} s")
            successor = cluster.wait_for_leader(other_than=leader)
            schema_id = response.json()["id"]
            wait_for(lambda: requests.get(f"{successor.url}/schemas/ids/{schema_id}", timeout=2).status_code
                     == 200, 10, "the write on the new leader")
        finally:
            leader.resume()
