"""A registry cluster as local processes on loopback, for failover tests and benchmarks.

    with Cluster(3, "zookeeper", kafka_bootstrap=..., zookeeper_connect=...) as cluster:
        leader = cluster.wait_for_leader()
        leader.kill9()                      # or pause() / resume(), terminate(), restart()

Every node is `schema-registry serve` (a granian supervisor and its worker) in its own
process group, on a free port, sharing one fresh `_schemas` topic. The Kafka and
ZooKeeper it needs are given (tests get them from tests/conftest.py,
benchmarks from the `infra` package). Every process started here is killed on exit.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import requests

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / ".venv" / "bin" / "schema-registry"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(condition: Any, timeout: float, what: str, interval: float = 0.05) -> Any:
    """Poll `condition()` until it returns something truthy; raise after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except requests.RequestException:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class NodeProbes:
    """What every node backend answers over HTTP; subclasses give `url` and `alive()`."""

    url: str

    def alive(self) -> bool:
        raise NotImplementedError

    def ready(self) -> bool:
        """Reads and writes work: caught up with the log, and a leader is known."""
        return self.alive() and requests.get(f"{self.url}/ready", timeout=1).status_code == 200

    def serving_reads(self) -> bool:
        """Caught up with the log, whether or not a leader is known."""
        return self.alive() and requests.get(f"{self.url}/subjects", timeout=1).status_code == 200

    def leader_view(self) -> dict[str, Any] | None:
        """This node's `/leader` answer, or None when it does not answer."""
        try:
            return requests.get(f"{self.url}/leader", timeout=1).json()
        except (requests.RequestException, ValueError):
            return None


@dataclass
class RegistryNode(NodeProbes):
    """One node: start, kill -9, pause (SIGSTOP), resume, terminate (SIGTERM), restart."""

    index: int
    port: int
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen([str(CLI), "serve", "--log-level", "INFO"], env=self.env,
                                            start_new_session=True, stdout=log, stderr=subprocess.STDOUT)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill9(self) -> None:
        """SIGKILL the supervisor, as `kill -9 <pid>` would; its worker dies with it."""
        os.kill(self.pid, signal.SIGKILL)
        self.process.wait()
        self._reap_group()

    def terminate(self, timeout: float = 20) -> float:
        """SIGTERM and wait for a clean exit; returns how long it took."""
        began = time.monotonic()
        os.kill(self.pid, signal.SIGTERM)
        self.process.wait(timeout)
        return time.monotonic() - began

    def pause(self) -> None:
        """SIGSTOP the whole node (supervisor and worker): no threads, no heartbeats."""
        os.killpg(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self.pid, signal.SIGCONT)

    def restart(self) -> None:
        if self.alive():
            self.kill9()
        self.start()

    def _reap_group(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def stop(self) -> None:
        """Kill the node's whole process group, whatever state it is in."""
        if self.process is None:
            return
        try:
            os.killpg(self.pid, signal.SIGCONT)
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()


Node = TypeVar("Node", bound=NodeProbes)


class ClusterProbes(Generic[Node]):
    """What every cluster backend answers over its nodes' HTTP; subclasses give `nodes`."""

    nodes: list[Node]

    def live(self) -> list[Node]:
        return [n for n in self.nodes if n.alive()]

    def leader(self) -> Node | None:
        """The node that says it writes, if exactly one live node says so."""
        leaders = [n for n in self.live() if (view := n.leader_view()) and view["is_leader"]]
        return leaders[0] if len(leaders) == 1 else None

    def wait_for_leader(self, timeout: float = 30, other_than: Node | None = None) -> Node:
        def found() -> Node | None:
            leader = self.leader()
            return leader if leader is not None and leader is not other_than else None

        return wait_for(found, timeout, "a single leader")

    def state(self, node: NodeProbes) -> dict[str, Any]:
        """Everything a client can read that must be equal on every node."""
        get = lambda path: requests.get(f"{node.url}{path}", timeout=5).json()  # noqa: E731
        return {"schemas": get("/schemas?deleted=true"), "subjects": get("/subjects?deleted=true"),
                "config": get("/config"), "mode": get("/mode")}


class Cluster(ClusterProbes[RegistryNode]):
    """`size` nodes sharing a fresh topic, electing with `elector` ("zookeeper" or "kafka")."""

    def __init__(self, size: int, elector: str, *, kafka_bootstrap: str, zookeeper_connect: str = "",
                 session_timeout_ms: int | None = None, workdir: Path | None = None,
                 extra_env: dict[str, str] | None = None, require_leader: bool = True,
                 default_group: bool = False) -> None:
        """`default_group`: leave the election group and ZooKeeper root at their defaults
        (which follow the topic) instead of naming them after it."""
        self.elector = elector
        self.require_leader = require_leader
        self.topic = f"_schemas_{uuid.uuid4().hex[:10]}"
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="cluster-"))
        timeout = session_timeout_ms or (2000 if elector == "zookeeper" else 6000)
        base = {
            **os.environ,
            "SCHEMA_REGISTRY_HOST_NAME": "127.0.0.1",
            "SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS": kafka_bootstrap,
            "SCHEMA_REGISTRY_KAFKASTORE_TOPIC": self.topic,
            "SCHEMA_REGISTRY_KAFKASTORE_TOPIC_REPLICATION_FACTOR": "1",
            "SCHEMA_REGISTRY_KAFKASTORE_TIMEOUT_MS": "5000",
            "SCHEMA_REGISTRY_LEADER_ELECTION_BACKEND": elector,
            "SCHEMA_REGISTRY_LEADER_ELECTION_SESSION_TIMEOUT_MS": str(timeout),
        }
        if not default_group:
            base["SCHEMA_REGISTRY_SCHEMA_REGISTRY_GROUP_ID"] = f"sr-{self.topic}"
            base["SCHEMA_REGISTRY_LEADER_ELECTION_ZOOKEEPER_ROOT"] = f"/{self.topic}"
        if elector == "zookeeper":
            base["SCHEMA_REGISTRY_LEADER_ELECTION_ZOOKEEPER_CONNECT"] = zookeeper_connect
        base.update(extra_env or {})
        self.nodes: list[RegistryNode] = []
        for index in range(size):
            port = free_port()
            env = dict(base, SCHEMA_REGISTRY_LISTENERS=f"http://127.0.0.1:{port}",
                       SCHEMA_REGISTRY_EMBEDDED_STORE_PATH=str(self.workdir / f"node{index}"))
            self.nodes.append(RegistryNode(index, port, env, self.workdir / f"node{index}.log"))

    def __enter__(self) -> Cluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, timeout: float = 60) -> None:
        """Start every node; wait until each is ready (or, with `require_leader=False`
        given to the constructor, serving reads)."""
        for node in self.nodes:
            node.start()
        for node in self.nodes:
            probe = node.ready if self.require_leader else node.serving_reads
            wait_for(probe, timeout, f"node {node.index} to be ready")

    def close(self) -> None:
        for node in self.nodes:
            node.stop()
