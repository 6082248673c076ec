"""Failover and hand-off time, per elector, on a 3-node cluster.

Three modes, each against the same reference, the elector's own detection floor: its
session timeout (ZooKeeper session, Kafka group session), which no failover by session
expiry can beat; and Confluent's defaults for comparison (group session 10 s).

- processes (default): local processes on loopback. Failover is from `kill -9` of the
  leader to the first successful registration through a surviving node (a client trying
  the survivors in turn, as ours does); hand-off the same from SIGTERM.
- containers: the same on containers (tests/cluster/containers.py): `docker kill`, `docker stop`.
- partition: containers, the leader cut from ZooKeeper and Kafka by `docker network
  disconnect`: time from the cut to the first acknowledged registration on the
  majority side; the cut is healed between trials.

Median of N trials each. Needs Kafka and ZooKeeper from `make infra-up` for processes;
a Docker engine (`make docker-engine`) for the other two, whose images are built or
reused as by the container tests.
Usage: python bench/failover.py [--mode processes|containers|partition] [--trials 5]
                                [--electors zookeeper,kafka]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.cluster.harness import Cluster, NodeProbes, wait_for  # noqa: E402

SESSION_MS = {"zookeeper": 2000, "kafka": 6000}
HEADERS = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def endpoints() -> dict[str, str]:
    path = ROOT / ".infra" / "run" / "endpoints.env"
    if not path.exists():
        sys.exit("start Kafka and ZooKeeper first: make infra-up")
    return dict(line.split("=", 1) for line in path.read_text().split() if "=" in line)


def register_until_success(survivors: list[NodeProbes], began: float) -> float:
    """Register a fresh schema through the survivors in turn; seconds from `began` to success."""
    body = json.dumps({"schema": json.dumps({"type": "record", "name": f"F{uuid.uuid4().hex}", "fields": []})})
    session = requests.Session()
    while True:
        for node in survivors:
            try:
                response = session.post(f"{node.url}/subjects/failover-{uuid.uuid4().hex}/versions",
                                        data=body, headers=HEADERS, timeout=10)
                if response.status_code == 200:
                    return time.monotonic() - began
            except requests.RequestException:
                pass
            time.sleep(0.01)
        if time.monotonic() - began > 60:
            raise TimeoutError("no registration succeeded within 60 s")


def stop_trial(cluster: Any, graceful: bool) -> float:
    leader = cluster.wait_for_leader(60)
    survivors = [n for n in cluster.nodes if n is not leader]
    began = time.monotonic()
    if graceful:
        leader.terminate()
    else:
        leader.kill9()
    elapsed = register_until_success(survivors, began)
    leader.start()
    wait_for(leader.ready, 60, "the stopped node to come back")
    return elapsed


def partition_trial(cluster: Any) -> float:
    from tests.cluster.containers import KAFKA, ZOOKEEPER

    leader = cluster.wait_for_leader(60)
    majority = [n for n in cluster.nodes if n is not leader]
    began = time.monotonic()
    leader.cut(ZOOKEEPER, KAFKA)
    elapsed = register_until_success(majority, began)
    leader.heal()
    # Healed: the old leader follows, and a write through it reaches the new one.
    wait_for(lambda: leader.ready() and cluster.leader() not in (None, leader), 60, "the cut node to follow")
    register_until_success([leader], time.monotonic())
    return elapsed


@contextmanager
def process_clusters() -> Iterator[Callable[[str], Any]]:
    found = endpoints()
    yield lambda elector: Cluster(3, elector, kafka_bootstrap=found["KAFKA_BOOTSTRAP"],
                                  zookeeper_connect=found["ZOOKEEPER_CONNECT"],
                                  session_timeout_ms=SESSION_MS[elector])


@contextmanager
def container_clusters() -> Iterator[Callable[[str], Any]]:
    from tests.cluster.containers import ContainerCluster, ContainerInfra, EngineUnavailable, docker_engine
    from tests.cluster.images import ImagesUnavailable, build_images
    from tests.conftest import infra

    try:
        client = docker_engine()
        images = build_images(client, infra.JARS_DIR)
    except (EngineUnavailable, ImagesUnavailable) as exc:
        sys.exit(f"containers unavailable: {exc}")
    with ContainerInfra(client, images) as shared:
        yield lambda elector: ContainerCluster(shared, 3, elector, session_timeout_ms=SESSION_MS[elector])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=("processes", "containers", "partition"), default="processes")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--electors", default="zookeeper,kafka")
    args = parser.parse_args()
    clusters = process_clusters() if args.mode == "processes" else container_clusters()
    if args.mode == "partition":
        columns = {"cut": lambda cluster: partition_trial(cluster)}
        title = "leader cut from ZooKeeper and Kafka to the first write acknowledged by the majority"
    else:
        columns = {"kill -9": lambda cluster: stop_trial(cluster, graceful=False),
                   "SIGTERM": lambda cluster: stop_trial(cluster, graceful=True)}
        title = "leader stopped to the first write acknowledged by a survivor"
    rows = []
    with clusters as make_cluster:
        for elector in args.electors.split(","):
            with make_cluster(elector) as cluster:
                rows.append((elector, {name: [trial(cluster) for _ in range(args.trials)]
                                       for name, trial in columns.items()}))
    print(f"\nFailover on 3 nodes ({args.mode}): {title}; median of {args.trials} trials (seconds)")
    print(f"{'elector':10} {'session':>8} " + " ".join(f"{name:>8}" for name in columns) + "   all trials")
    for elector, results in rows:
        session = SESSION_MS[elector] / 1000
        medians = {name: statistics.median(times) for name, times in results.items()}
        print(f"{elector:10} {session:8.1f} " + " ".join(f"{m:8.2f}" for m in medians.values()) + "   "
              + " / ".join(", ".join(f"{t:.2f}" for t in times) for times in results.values()))
        first, median = next(iter(medians.items()))
        print(f"{'':10} ratio {first} / session timeout: {median / session:.2f}x; "
              f"vs Confluent's 10 s default group session: {median / 10:.2f}x")


if __name__ == "__main__":
    main()
