"""Failover and hand-off time, per elector, on a 3-node cluster of local processes.

Failover: from `kill -9` of the leader to the first successful registration through a
surviving node (a client trying the survivors in turn, as ours does). Hand-off: the
same from SIGTERM of the leader. Median of N trials each. Reference, in the same run:
the elector's own detection floor, i.e. its session timeout (ZooKeeper session,
Kafka group session), which no failover by session expiry can beat; and Confluent's
defaults for comparison (group session 10 s; Karapace adds a 5 s wait).

Needs Kafka and ZooKeeper: `make infra-up` (read from .infra/run/endpoints.env).
Usage: python bench/failover.py [--trials 5] [--electors zookeeper,kafka]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.cluster.harness import Cluster, RegistryNode, wait_for  # noqa: E402

SESSION_MS = {"zookeeper": 2000, "kafka": 6000}
HEADERS = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def endpoints() -> dict[str, str]:
    path = ROOT / ".infra" / "run" / "endpoints.env"
    if not path.exists():
        sys.exit("start Kafka and ZooKeeper first: make infra-up")
    return dict(line.split("=", 1) for line in path.read_text().split() if "=" in line)


def register_until_success(survivors: list[RegistryNode], began: float) -> float:
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


def trial(cluster: Cluster, graceful: bool) -> float:
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--electors", default="zookeeper,kafka")
    args = parser.parse_args()
    found = endpoints()
    rows = []
    for elector in args.electors.split(","):
        with Cluster(3, elector, kafka_bootstrap=found["KAFKA_BOOTSTRAP"],
                     zookeeper_connect=found["ZOOKEEPER_CONNECT"], session_timeout_ms=SESSION_MS[elector]) as cluster:
            kills = [trial(cluster, graceful=False) for _ in range(args.trials)]
            handoffs = [trial(cluster, graceful=True) for _ in range(args.trials)]
        rows.append((elector, kills, handoffs))
    print(f"\nFailover on 3 nodes, median of {args.trials} trials (seconds)")
    print(f"{'elector':10} {'session':>8} {'kill -9':>8} {'SIGTERM':>8}   all kill -9 / all SIGTERM")
    for elector, kills, handoffs in rows:
        session = SESSION_MS[elector] / 1000
        print(f"{elector:10} {session:8.1f} {statistics.median(kills):8.2f} {statistics.median(handoffs):8.2f}   "
              f"{', '.join(f'{k:.2f}' for k in kills)} / {', '.join(f'{h:.2f}' for h in handoffs)}")
        print(f"{'':10} ratio kill -9 / session timeout: {statistics.median(kills) / session:.2f}x; "
              f"vs Confluent's 10 s default group session: {statistics.median(kills) / 10:.2f}x")


if __name__ == "__main__":
    main()
