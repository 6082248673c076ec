"""Electors on real ZooKeeper and Kafka, for the contract tests and the backend ones.

- ``backend`` (parametrised: ``zookeeper``, ``kafka``) knows how to build an elector of
  that kind from a JSON spec, so in-process nodes and child processes
  (`elector_process.py`) are built by the same code.
- ``cluster`` builds nodes on a fresh election path / group, records every callback,
  samples ``is_leader()`` across its nodes all the time, and on teardown closes every
  node and checks that the callbacks kept the `Elector` contract and that no elector
  thread outlived its elector.
- Timings measured by tests are printed in the terminal summary.

Every wait polls with a deadline (``wait_until``); nothing sleeps for a fixed time.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from election import Elector, LeaderIdentity
from tests.integration.election import specs
from tests.integration.election.specs import KAFKA_SESSION_TIMEOUT_MS, ZK_SESSION_TIMEOUT

ROOT = Path(__file__).resolve().parents[3]

_timings: list[tuple[str, str]] = []


def report_timing(what: str, seconds: list[float] | float) -> None:
    """Keep a measured duration for the terminal summary."""
    values = seconds if isinstance(seconds, list) else [seconds]
    text = ", ".join(f"{v * 1000:.0f} ms" for v in values)
    if len(values) > 1:
        text += f" (median {sorted(values)[len(values) // 2] * 1000:.0f} ms)"
    _timings.append((what, text))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _timings:
        terminalreporter.section("election timings")
        for what, text in _timings:
            terminalreporter.write_line(f"{what}: {text}")


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll ``condition`` every 5 ms until true; return the seconds it took.

    Fails the test, naming ``what``, if it is still false after ``timeout`` seconds.
    """
    started = time.monotonic()
    deadline = started + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.1f}s waiting until {what}", pytrace=False)
        time.sleep(0.005)
    return time.monotonic() - started


# --------------------------------------------------------------------------- backends


@dataclass
class Backend:
    """How to build electors of one kind on the session's servers."""

    name: str
    servers: str
    #: seconds a graceful hand-off may take before the test fails (the goal is far less)
    handoff_bound: float
    #: seconds after a leader stops responding before a successor must be leading
    failover_bound: float

    def spec(self, election: str, index: int, eligible: bool) -> dict[str, Any]:
        """A JSON-able description of one node of election ``election``."""
        return specs.spec(self.name, self.servers, election, index, eligible)

    def quiet(self, election: str, members: int) -> bool:
        """True when the election has no membership change in progress.

        ZooKeeper has nothing of the kind. A Kafka group must be Stable with ``members``
        members (no rebalance running). Only call this while the broker is up:
        describe_consumer_groups can abort the process when the coordinator connection
        drops (confluentinc/librdkafka#4605), which is why the elector does not use it.
        """
        if self.name == "zookeeper":
            return True
        from confluent_kafka import ConsumerGroupState
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.servers})
        description = admin.describe_consumer_groups([election], request_timeout=5)[election].result(10)
        return description.state == ConsumerGroupState.STABLE and len(description.members) == members

    def cleanup(self, election: str) -> None:
        """Remove what an election left on the servers (best effort)."""
        if self.name == "zookeeper":
            from kazoo.client import KazooClient

            client = KazooClient(hosts=self.servers)
            with contextlib.suppress(Exception):
                client.start(timeout=5)
                client.delete(f"/{election}", recursive=True)
            with contextlib.suppress(Exception):
                client.stop()
            client.close()
        else:
            from confluent_kafka.admin import AdminClient

            # The group itself is left to expire: deleting it is a coordinator request,
            # the kind librdkafka#4605 can abort on (see ``quiet``).
            topic = specs.kafka_topic(election)
            admin = AdminClient({"bootstrap.servers": self.servers})
            with contextlib.suppress(Exception):
                admin.delete_topics([topic], request_timeout=5)[topic].result(10)


def zookeeper_backend_on(servers: str) -> Backend:
    # A crashed leader's session expires after its timeout; the watches then fire at once.
    return Backend("zookeeper", servers, handoff_bound=1.0, failover_bound=ZK_SESSION_TIMEOUT + 3.0)


def kafka_backend_on(servers: str) -> Backend:
    # A crashed leader is evicted after the session timeout, then the group rebalances.
    return Backend("kafka", servers, handoff_bound=5.0, failover_bound=KAFKA_SESSION_TIMEOUT_MS / 1000 + 6.0)


@pytest.fixture(params=["zookeeper", "kafka"])
def backend(request: pytest.FixtureRequest) -> Backend:
    # Only the servers the test needs are started (getfixturevalue is lazy).
    if request.param == "zookeeper":
        return zookeeper_backend_on(request.getfixturevalue("zookeeper_connect"))
    return kafka_backend_on(request.getfixturevalue("kafka_bootstrap"))


@pytest.fixture
def zookeeper_backend(zookeeper_connect: str) -> Backend:
    return zookeeper_backend_on(zookeeper_connect)


@pytest.fixture
def kafka_backend(kafka_bootstrap: str) -> Backend:
    return kafka_backend_on(kafka_bootstrap)


# --------------------------------------------------------------------------- nodes


class Recorder:
    """on_elected/on_demoted for one node: records them and checks the contract."""

    def __init__(self) -> None:
        self.elector: Elector | None = None
        self.events: list[tuple[str, float]] = []
        self.violations: list[str] = []
        self._inside = threading.Lock()

    def on_elected(self) -> None:
        self._enter("elected")
        # The contract: a node reports itself leader only after on_elected returned.
        if self.elector is not None and self.elector.is_leader():
            self.violations.append("is_leader() was already true inside on_elected")
        self._leave()

    def on_demoted(self) -> None:
        self._enter("demoted")
        self._leave()

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self.events if k == kind)

    def last(self, kind: str) -> float | None:
        times = [t for k, t in self.events if k == kind]
        return times[-1] if times else None

    def _enter(self, kind: str) -> None:
        if not self._inside.acquire(blocking=False):
            self.violations.append(f"{kind} ran while another callback was running")
        thread = threading.current_thread().name
        if not thread.startswith("election-callbacks"):
            self.violations.append(f"{kind} ran on thread {thread!r}, not the callback thread")
        expected = "demoted" if self.events and self.events[-1][0] == "elected" else "elected"
        if kind != expected:
            self.violations.append(f"{kind} after {[k for k, _ in self.events]}: callbacks must alternate")
        self.events.append((kind, time.monotonic()))

    def _leave(self) -> None:
        with contextlib.suppress(RuntimeError):
            self._inside.release()


@dataclass
class Node:
    elector: Elector
    recorder: Recorder

    @property
    def identity(self) -> LeaderIdentity:
        return self.elector.identity

    def close(self) -> None:
        self.elector.close()


@dataclass
class Cluster:
    """The nodes of one election, built in this process."""

    backend: Backend
    election: str
    nodes: list[Node] = field(default_factory=list)
    max_leaders_seen: int = 0
    _next_index: int = 0
    _stop_sampling: threading.Event = field(default_factory=threading.Event)

    def add(self, eligible: bool = True) -> Node:
        """Build and start one more node."""
        index = self._next_index
        self._next_index += 1
        return self.add_spec(self.backend.spec(self.election, index, eligible))

    def spec(self, eligible: bool = True) -> dict[str, Any]:
        """Reserve a node index for a node built elsewhere (a child process)."""
        index = self._next_index
        self._next_index += 1
        return self.backend.spec(self.election, index, eligible)

    def add_spec(self, spec: dict[str, Any]) -> Node:
        recorder = Recorder()
        elector = specs.build_elector(spec)
        recorder.elector = elector
        node = Node(elector, recorder)
        self.nodes.append(node)
        elector.start(recorder.on_elected, recorder.on_demoted)
        return node

    def leaders(self, among: list[Node] | None = None) -> list[Node]:
        return [n for n in (among if among is not None else self.nodes) if n.elector.is_leader()]

    def one_leader(self, among: list[Node] | None = None) -> Node | None:
        leaders = self.leaders(among)
        return leaders[0] if len(leaders) == 1 else None

    def sample(self) -> None:
        """Count this process's leaders every 2 ms until teardown."""
        while not self._stop_sampling.wait(0.002):
            self.max_leaders_seen = max(self.max_leaders_seen, len(self.leaders(list(self.nodes))))


@pytest.fixture
def cluster(backend: Backend) -> Iterator[Cluster]:
    yield from _cluster(backend)


@pytest.fixture
def zookeeper_cluster(zookeeper_backend: Backend) -> Iterator[Cluster]:
    yield from _cluster(zookeeper_backend)


@pytest.fixture
def kafka_cluster(kafka_backend: Backend) -> Iterator[Cluster]:
    yield from _cluster(kafka_backend)


def _cluster(backend: Backend) -> Iterator[Cluster]:
    before = {t for t in threading.enumerate() if t.name.startswith("election-")}
    cluster = Cluster(backend, f"election-test-{uuid.uuid4().hex[:12]}")
    sampler = threading.Thread(target=cluster.sample, name="test-leader-sampler", daemon=True)
    sampler.start()
    try:
        yield cluster
    finally:
        cluster._stop_sampling.set()
        sampler.join()
        for node in cluster.nodes:
            node.close()
        backend.cleanup(cluster.election)
    leftover = [t.name for t in threading.enumerate() if t.name.startswith("election-") and t not in before]
    assert not leftover, f"close() must stop every elector thread; still running: {leftover}"
    for node in cluster.nodes:
        assert not node.recorder.violations, (
            f"{node.identity}: callbacks broke the Elector contract: {node.recorder.violations}"
        )
        assert node.recorder.count("elected") == node.recorder.count("demoted"), (
            f"{node.identity}: every on_elected must be matched by on_demoted by the end of close(): "
            f"{node.recorder.events}"
        )
        if not node.elector.eligible:
            assert not node.recorder.events, f"{node.identity} is ineligible and must never be elected"
    assert cluster.max_leaders_seen <= 1, (
        f"two nodes of one process reported is_leader() at once ({cluster.max_leaders_seen})"
    )


# --------------------------------------------------------------------------- child processes


class ElectorProcess:
    """An elector in a child process (`elector_process.py`), so that it can be paused
    with SIGSTOP like a real node: no heartbeats, no pings, no threads run."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.identity = specs.identity(spec)
        self.events: list[dict[str, Any]] = []
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.election.elector_process", json.dumps(spec)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        self._reader = threading.Thread(target=self._read, name="test-child-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            with contextlib.suppress(ValueError):
                self.events.append(json.loads(line))

    @property
    def state(self) -> dict[str, Any]:
        """The child's last reported is_leader()/leader()."""
        states = [e for e in list(self.events) if e["event"] == "state"]
        return states[-1] if states else {"is_leader": False, "leader": None}

    def count(self, kind: str) -> int:
        return sum(1 for e in list(self.events) if e["event"] == kind)

    def first(self, kind: str, after: float = 0.0) -> dict[str, Any] | None:
        return next((e for e in list(self.events) if e["event"] == kind and e["t"] >= after), None)

    def pause(self) -> None:
        self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._proc.send_signal(signal.SIGCONT)

    def close(self) -> None:
        """Ask the child to close its elector and exit; kill it if it does not."""
        self.resume()
        if self._proc.poll() is None:
            with contextlib.suppress(OSError):
                assert self._proc.stdin is not None
                self._proc.stdin.write("close\n")
                self._proc.stdin.flush()
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._reader.join(timeout=5)
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        if self._proc.stdout is not None:
            self._proc.stdout.close()


@pytest.fixture
def spawn() -> Iterator[Callable[[dict[str, Any]], ElectorProcess]]:
    """Start electors in child processes; all are closed (or killed) after the test."""
    children: list[ElectorProcess] = []

    def start(spec: dict[str, Any]) -> ElectorProcess:
        child = ElectorProcess(spec)
        children.append(child)
        return child

    yield start
    for child in children:
        child.close()
