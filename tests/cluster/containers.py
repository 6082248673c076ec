"""A registry cluster as containers on the project's own networks: failover by `docker
kill`, `pause` and `stop`, partitions by `docker network disconnect`.

    client = docker_engine()                              # raises EngineUnavailable(reason)
    images = build_images(client, infra.JARS_DIR)         # tests/cluster/images.py
    with ContainerInfra(client, images) as infra:         # four networks, ZooKeeper, Kafka
        with ContainerCluster(infra, 3, "zookeeper") as cluster:
            leader = cluster.wait_for_leader()
            leader.cut(ZOOKEEPER, KAFKA)                  # ... then leader.heal()

Containers are driven through testcontainers' `DockerContainer` and `Network` (no compose,
which this machine's engine lacks, and no Ryuk, which would be an image pull).

The networks are all `internal` bridges (nothing published on the host, no way out), each
on a subnet chosen here so that every container keeps fixed addresses across restarts
and reconnections:
- control: the test process reaches every container here, through the host's own
  address on the bridge; containers never address one another on it;
- zookeeper: ZooKeeper and the registries;
- kafka: Kafka and the registries (Kafka also listens on control, for the host's audit);
- peer: the registries; a node's `host.name` is its address here, so forwarding crosses it.
Everything is addressed by IP, never by name: Docker's DNS would answer a name over any
network two containers still share. A cut is checked, not assumed (`ContainerNode.can_reach`).

Every container and network carries the label `org.schema-registry-py.owner=<host>:<pid>`;
a new `ContainerInfra` first removes those left by sessions that died without cleaning up.
"""
from __future__ import annotations

import ipaddress
import os
import random
import socket
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.types
import requests

# Ryuk, testcontainers' reaper, is an image pull; we remove what we start ourselves.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
from testcontainers.core.config import testcontainers_config  # noqa: E402
from testcontainers.core.container import DockerContainer  # noqa: E402
from testcontainers.core.network import Network  # noqa: E402

from tests.cluster.harness import ClusterProbes, NodeProbes, wait_for  # noqa: E402
from tests.cluster.images import STATE_DIR, ClusterImages  # noqa: E402

testcontainers_config.ryuk_disabled = True

CONTROL, ZOOKEEPER, KAFKA, PEER = "control", "zookeeper", "kafka", "peer"
ROLES = (CONTROL, ZOOKEEPER, KAFKA, PEER)
OWNER_LABEL = "org.schema-registry-py.owner"
ENGINE_ENV = STATE_DIR / "engine.env"
REGISTRY_PORT, KAFKA_PORT, KAFKA_HOST_PORT, ZOOKEEPER_PORT = 8081, 9092, 9094, 2181
# Host numbers on every subnet (.1 is the bridge, i.e. the host).
_ZOOKEEPER_HOST, _KAFKA_HOST, _FIRST_REGISTRY_HOST = 10, 11, 20


class EngineUnavailable(RuntimeError):
    """No Docker engine answers here (tests skip, giving this reason)."""


def docker_engine(timeout: float = 600) -> docker.DockerClient:
    """A client of the engine the tests use, which testcontainers will use too.

    DOCKER_HOST if set; otherwise /var/run/docker.sock, then the engine `make
    docker-engine` started (its address is in .infra/docker/engine.env). `timeout` is
    per API call (image builds stream for minutes). Sets DOCKER_HOST to the engine found.
    Raises EngineUnavailable, saying what was tried.
    """
    if os.environ.get("DOCKER_HOST"):
        candidates = [os.environ["DOCKER_HOST"]]
    else:
        candidates = ["unix:///var/run/docker.sock"]
        if ENGINE_ENV.exists():
            candidates += [line.split("=", 1)[1].strip() for line in ENGINE_ENV.read_text().splitlines()
                           if line.startswith("DOCKER_HOST=")]
    tried = []
    for host in candidates:
        try:
            client = docker.DockerClient(base_url=host, timeout=int(timeout))
            client.ping()
        except (docker.errors.DockerException, requests.RequestException) as exc:
            tried.append(f"{host}: {exc}")
            continue
        os.environ["DOCKER_HOST"] = host
        return client
    raise EngineUnavailable("no Docker engine answers (" + "; ".join(tried) + "); as root, `make docker-engine` "
                            "starts one (Debian's docker.io), or start Docker")


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def remove_abandoned(client: docker.DockerClient) -> None:
    """Remove containers and networks whose owning process on this host has died."""
    host = socket.gethostname()

    def abandoned(labels: dict[str, str]) -> bool:
        owner_host, _, pid = labels.get(OWNER_LABEL, "").rpartition(":")
        if owner_host != host or not pid.isdigit():
            return False
        try:
            os.kill(int(pid), 0)
            return False
        except ProcessLookupError:
            return True
        except PermissionError:
            return False

    for container in client.containers.list(all=True, filters={"label": OWNER_LABEL}):
        if abandoned(container.labels):
            container.remove(force=True, v=True)
    for network in client.networks.list(filters={"label": OWNER_LABEL}):
        if abandoned(network.attrs.get("Labels") or {}):
            network.remove()


class ProjectNetworks:
    """The four internal networks, each on a free /24; `address(role, host)` is fixed."""

    def __init__(self, client: docker.DockerClient, name: str) -> None:
        self._client = client
        self._name = name
        self.networks: dict[str, Network] = {}
        self.subnets: dict[str, ipaddress.IPv4Network] = {}

    def create(self) -> None:
        """Create the networks, retrying subnets the engine or the host already uses."""
        for role in ROLES:
            for attempt in range(50):
                subnet = self._candidate_subnet()
                network = Network(docker_network_kw={
                    "driver": "bridge", "internal": True, "labels": {OWNER_LABEL: _owner()},
                    "ipam": docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=str(subnet))])})
                network.name = f"{self._name}-{role}"
                try:
                    network.create()
                except docker.errors.APIError as exc:
                    if "overlap" in str(exc).lower() and attempt < 49:
                        continue
                    raise
                self.networks[role], self.subnets[role] = network, subnet
                break

    def _candidate_subnet(self) -> ipaddress.IPv4Network:
        taken = [ipaddress.ip_network(config["Subnet"]) for network in self._client.networks.list()
                 for config in (network.attrs.get("IPAM") or {}).get("Config") or [] if "Subnet" in config]
        taken += list(self.subnets.values()) + _host_routes()
        while True:
            candidate = ipaddress.ip_network(f"10.{random.randint(100, 250)}.{random.randint(0, 255)}.0/24")
            if candidate.version == 4 and not any(candidate.overlaps(t) for t in taken if t.version == 4):
                return candidate

    def address(self, role: str, host: int) -> str:
        return str(self.subnets[role].network_address + host)

    def docker_network(self, role: str) -> Any:
        """docker-py's network object, for connect/disconnect with an address."""
        return self._client.networks.get(self.networks[role].id)

    def remove(self) -> None:
        for network in self.networks.values():
            try:
                network.remove()
            except docker.errors.NotFound:
                pass


def _host_routes() -> list[ipaddress.IPv4Network]:
    """The host's IPv4 routes (Linux), which a new bridge subnet must not shadow."""
    routes = []
    try:
        lines = Path("/proc/net/route").read_text().splitlines()[1:]
    except OSError:
        return routes
    for line in lines:
        fields = line.split()
        destination, mask = (socket.inet_ntoa(int(f, 16).to_bytes(4, "little")) for f in (fields[1], fields[7]))
        if destination != "0.0.0.0":
            routes.append(ipaddress.ip_network(f"{destination}/{mask}", strict=False))
    return routes


class NetworkedContainer(DockerContainer):
    """A `DockerContainer` with a fixed address on each of several project networks.

    testcontainers' own `start()` attaches one network when it creates the container
    (the engine API before 1.44 takes only one); here the others are connected before
    the container starts, so its process has every network from its first instruction.
    """

    def __init__(self, image: str, name: str, networks: ProjectNetworks, host: int, roles: tuple[str, ...],
                 env: dict[str, str]) -> None:
        super().__init__(image, env=env, name=name, labels={OWNER_LABEL: _owner()})
        self.project_networks = networks
        self.addresses = {role: networks.address(role, host) for role in roles}

    def start(self) -> NetworkedContainer:
        client = self.get_docker_client()
        first, *others = self.addresses
        version = client.client.api.api_version
        self._container = client.create(
            self.image, command=self._command, environment=self.env, name=self._name,
            network=self.project_networks.networks[first].name,
            networking_config={self.project_networks.networks[first].name:
                               docker.types.EndpointConfig(version, ipv4_address=self.addresses[first])},
            **self._kwargs)
        for role in others:
            self.project_networks.docker_network(role).connect(self._container, ipv4_address=self.addresses[role])
        client.start(self._container)
        return self

    @property
    def name(self) -> str:
        return self._name or ""

    @property
    def started(self) -> bool:
        return self._container is not None

    @property
    def docker(self) -> Any:
        """docker-py's container object (kill, pause, stop, exec_run ...)."""
        return self.get_wrapped_container()

    def remove(self) -> None:
        """Remove the container (and its volumes) whatever state it is in."""
        if self._container is None:
            return
        try:
            self.docker.reload()
            if self.docker.status == "paused":
                self.docker.unpause()
        except docker.errors.NotFound:
            return
        self.stop()

    def running(self) -> bool:
        """Running or paused, as a process that got SIGSTOP still exists."""
        container = self.docker
        container.reload()
        return container.status in ("running", "paused")

    def started_at(self) -> str:
        """When the container's process last started (changes with every restart)."""
        container = self.docker
        container.reload()
        return container.attrs["State"]["StartedAt"]

    def save_logs(self, path: Path) -> None:
        try:
            path.write_bytes(self.docker.logs(timestamps=True))
        except docker.errors.APIError:
            pass


class InfraContainer:
    """ZooKeeper or Kafka: stop (SIGTERM), start again, and a readiness probe from the host."""

    def __init__(self, box: NetworkedContainer, probe: Callable[[], bool]) -> None:
        self.box = box
        self._probe = probe

    def ready(self) -> bool:
        return self.box.running() and self._probe()

    def wait_ready(self, timeout: float = 120) -> None:
        wait_for(self.ready, timeout, f"{self.box.name} to serve", interval=0.2)

    def stop(self, timeout: float = 20) -> None:
        self.box.docker.stop(timeout=timeout)

    def start(self) -> None:
        self.box.docker.start()


class ContainerInfra:
    """The networks, one ZooKeeper and one Kafka broker (KRaft), for the whole session.

    `zookeeper_connect` and `kafka_bootstrap` are for registries (zookeeper and kafka
    networks); `kafka_bootstrap_host` is for the test process (control network).
    """

    def __init__(self, client: docker.DockerClient, images: ClusterImages, workdir: Path | None = None) -> None:
        self.client = client
        self.images = images
        self.name = f"srpy-{uuid.uuid4().hex[:8]}"
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="containers-"))
        self.networks = ProjectNetworks(client, self.name)
        self._next_host = _FIRST_REGISTRY_HOST
        self.zookeeper: InfraContainer | None = None
        self.kafka: InfraContainer | None = None

    def __enter__(self) -> ContainerInfra:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def zookeeper_address(self) -> tuple[str, int]:
        """ZooKeeper's client address on the zookeeper network."""
        return self.networks.address(ZOOKEEPER, _ZOOKEEPER_HOST), ZOOKEEPER_PORT

    @property
    def kafka_address(self) -> tuple[str, int]:
        """Kafka's listener on the kafka network (for registries)."""
        return self.networks.address(KAFKA, _KAFKA_HOST), KAFKA_PORT

    @property
    def zookeeper_connect(self) -> str:
        return "%s:%d" % self.zookeeper_address

    @property
    def kafka_bootstrap(self) -> str:
        return "%s:%d" % self.kafka_address

    @property
    def kafka_bootstrap_host(self) -> str:
        return f"{self.networks.address(CONTROL, _KAFKA_HOST)}:{KAFKA_HOST_PORT}"

    def start(self) -> None:
        remove_abandoned(self.client)
        self.networks.create()
        zookeeper = NetworkedContainer(self.images.zookeeper, f"{self.name}-zookeeper", self.networks,
                                       _ZOOKEEPER_HOST, (CONTROL, ZOOKEEPER), env={})
        control_zk = (self.networks.address(CONTROL, _ZOOKEEPER_HOST), ZOOKEEPER_PORT)
        self.zookeeper = InfraContainer(zookeeper, lambda: "Mode: standalone" in _four_letter(control_zk, b"srvr"))
        internal = self.networks.address(KAFKA, _KAFKA_HOST)
        external = self.networks.address(CONTROL, _KAFKA_HOST)
        kafka = NetworkedContainer(self.images.kafka, f"{self.name}-kafka", self.networks, _KAFKA_HOST,
                                   (CONTROL, KAFKA), env={
            "KAFKA_CFG_LISTENERS": f"INTERNAL://0.0.0.0:{KAFKA_PORT},HOST://0.0.0.0:{KAFKA_HOST_PORT},"
                                   "CONTROLLER://127.0.0.1:9093",
            "KAFKA_CFG_ADVERTISED_LISTENERS": f"INTERNAL://{internal}:{KAFKA_PORT},HOST://{external}:{KAFKA_HOST_PORT}",
            "KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP": "INTERNAL:PLAINTEXT,HOST:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "KAFKA_CFG_INTER_BROKER_LISTENER_NAME": "INTERNAL",
        })
        self.kafka = InfraContainer(kafka, lambda: _kafka_serves(self.kafka_bootstrap_host))
        zookeeper.start()
        kafka.start()
        self.zookeeper.wait_ready()
        self.kafka.wait_ready()

    def ensure_serving(self, timeout: float = 120) -> None:
        """Start ZooKeeper or Kafka again if a test left it stopped; wait until both serve."""
        for server in (self.zookeeper, self.kafka):
            assert server is not None
            if not server.box.running():
                server.start()
            server.wait_ready(timeout)

    def next_host(self) -> int:
        """A host number for a new registry container (addresses are freed on removal)."""
        host = self._next_host
        self._next_host = _FIRST_REGISTRY_HOST + (self._next_host - _FIRST_REGISTRY_HOST + 1) % 200
        return host

    def close(self) -> None:
        for server in (self.kafka, self.zookeeper):
            if server is not None and server.box.started:
                server.box.save_logs(self.workdir / f"{server.box.name}.log")
                server.box.remove()
        self.networks.remove()


def _four_letter(address: tuple[str, int], word: bytes) -> str:
    try:
        with socket.create_connection(address, timeout=1) as sock:
            sock.sendall(word)
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""


def _kafka_serves(bootstrap: str) -> bool:
    """The broker is registered, unfenced and has a controller."""
    from confluent_kafka.admin import AdminClient

    host, _, port = bootstrap.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
    except OSError:
        return False  # not listening yet: spare librdkafka's connection-refused logging
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.connection.setup.timeout.ms": 1000,
                         "log_level": 0})
    try:
        metadata = admin.list_topics(timeout=2)
    except Exception:  # KafkaException while the broker is away: not serving yet
        return False
    return bool(metadata.brokers) and metadata.controller_id >= 0


class ContainerNode(NodeProbes):
    """A registry container: the node interface of the failover scenario, plus cuts."""

    def __init__(self, index: int, box: NetworkedContainer) -> None:
        self.index = index
        self.box = box
        self.cut_from: set[str] = set()

    def __repr__(self) -> str:
        return f"ContainerNode({self.index}, {self.addresses[PEER]})"

    @property
    def addresses(self) -> dict[str, str]:
        return self.box.addresses

    @property
    def url(self) -> str:
        """Where the test process reaches this node (control network)."""
        return f"http://{self.addresses[CONTROL]}:{REGISTRY_PORT}"

    @property
    def advertised_url(self) -> str:
        """Where the other nodes reach it (peer network): its identity as a leader."""
        return f"http://{self.addresses[PEER]}:{REGISTRY_PORT}"

    def alive(self) -> bool:
        return self.box.running()

    def kill9(self) -> None:
        """`docker kill`: SIGKILL to the container's init, the registry's supervisor."""
        self.box.docker.kill("SIGKILL")
        self.box.docker.wait(timeout=30)

    def pause(self) -> None:
        """`docker pause`: the cgroup freezer stops every thread, as SIGSTOP would."""
        self.box.docker.pause()

    def resume(self) -> None:
        self.box.docker.unpause()

    def terminate(self, timeout: float = 20) -> float:
        """`docker stop`: SIGTERM, SIGKILL after `timeout`; returns how long it took."""
        began = time.monotonic()
        self.box.docker.stop(timeout=int(timeout))
        return time.monotonic() - began

    def start(self) -> None:
        self.box.docker.start()

    def cut(self, *roles: str) -> None:
        """`docker network disconnect` from each network in `roles`."""
        for role in roles:
            self.box.project_networks.docker_network(role).disconnect(self.box.docker, force=True)
            self.cut_from.add(role)

    def heal(self) -> None:
        """Connect again every network this node was cut from, at its same address."""
        for role in sorted(self.cut_from):
            self.box.project_networks.docker_network(role).connect(self.box.docker,
                                                                    ipv4_address=self.addresses[role])
        self.cut_from.clear()

    def can_reach(self, address: str, port: int, timeout: float = 2.0) -> bool:
        """Whether a TCP connection from inside this container to `address:port` opens."""
        code = (f"import socket; socket.create_connection(({address!r}, {port}), timeout={timeout}).close()")
        result = self.box.docker.exec_run(["python3", "-c", code])
        return result.exit_code == 0


class ContainerCluster(ClusterProbes[ContainerNode]):
    """`size` registry containers on a fresh topic, electing with `elector`, on `infra`."""

    def __init__(self, infra: ContainerInfra, size: int, elector: str, *, session_timeout_ms: int | None = None,
                 store_timeout_ms: int = 5000, extra_env: dict[str, str] | None = None) -> None:
        self.infra = infra
        self.elector = elector
        self.topic = f"_schemas_{uuid.uuid4().hex[:10]}"
        self.session_timeout_ms = session_timeout_ms or (2000 if elector == "zookeeper" else 6000)
        self.store_timeout_ms = store_timeout_ms
        self.workdir = infra.workdir / self.topic
        self.workdir.mkdir(parents=True, exist_ok=True)
        base = {
            "SCHEMA_REGISTRY_LISTENERS": f"http://0.0.0.0:{REGISTRY_PORT}",
            "SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS": infra.kafka_bootstrap,
            "SCHEMA_REGISTRY_KAFKASTORE_TOPIC": self.topic,
            "SCHEMA_REGISTRY_KAFKASTORE_TOPIC_REPLICATION_FACTOR": "1",
            "SCHEMA_REGISTRY_KAFKASTORE_TIMEOUT_MS": str(store_timeout_ms),
            "SCHEMA_REGISTRY_LEADER_ELECTION_BACKEND": elector,
            "SCHEMA_REGISTRY_LEADER_ELECTION_SESSION_TIMEOUT_MS": str(self.session_timeout_ms),
            "SCHEMA_REGISTRY_SCHEMA_REGISTRY_GROUP_ID": f"sr-{self.topic}",
            **(extra_env or {}),
        }
        if elector == "zookeeper":
            base["SCHEMA_REGISTRY_LEADER_ELECTION_ZOOKEEPER_CONNECT"] = infra.zookeeper_connect
            base["SCHEMA_REGISTRY_LEADER_ELECTION_ZOOKEEPER_ROOT"] = f"/{self.topic}"
        self.nodes: list[ContainerNode] = []
        for index in range(size):
            host = infra.next_host()
            env = dict(base, SCHEMA_REGISTRY_HOST_NAME=infra.networks.address(PEER, host))
            box = NetworkedContainer(infra.images.registry, f"{infra.name}-{self.topic[9:]}-{index}", infra.networks,
                                     host, (CONTROL, ZOOKEEPER, KAFKA, PEER), env)
            self.nodes.append(ContainerNode(index, box))

    def __enter__(self) -> ContainerCluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, timeout: float = 120) -> None:
        for node in self.nodes:
            node.box.start()
        for node in self.nodes:
            wait_for(node.ready, timeout, f"registry container {node.index} to be ready")

    def close(self) -> None:
        """Save every node's log in `workdir`, then remove the containers."""
        for node in self.nodes:
            if node.box.started:
                node.box.save_logs(self.workdir / f"node{node.index}.log")
                node.box.remove()
