"""The failover scenario on containers (docker/compose.yml), where a Docker engine exists.

Same scenario and checks as test_failover.py, with nodes as containers: `docker kill`
for kill -9, `docker pause`/`unpause` for SIGSTOP/SIGCONT, `docker stop` for SIGTERM.
Skips, saying why, when no Docker engine answers (as on the development machines,
where the process-based cluster in test_failover.py runs the same scenario).
"""
from __future__ import annotations

import http.client
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.cluster.harness import NodeProbes, wait_for
from tests.cluster.test_failover import check_every_node, run_failover_scenario

ROOT = Path(__file__).resolve().parents[2]


def docker_engine_missing() -> str | None:
    """Why the containers cannot run here, or None when a Docker engine answers."""
    path = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://")
    if not os.path.exists(path):
        return f"no Docker engine: {path} does not exist"
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(2)
        sock.connect(path)
        conn = http.client.HTTPConnection("docker")
        conn.sock = sock
        conn.request("GET", "/_ping")
        if conn.getresponse().status != 200:
            return "the Docker engine did not answer /_ping"
    except OSError as exc:
        return f"no Docker engine answers at {path}: {exc}"
    return None


pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(docker_engine_missing() is not None, reason=str(docker_engine_missing()))]


class ContainerNode(NodeProbes):
    """A registry container with the node interface the scenario uses."""

    def __init__(self, compose: Any, service: str) -> None:
        self._compose = compose
        self.service = service
        self.container = compose.get_container(service).ID

    @property
    def url(self) -> str:
        host = self._compose.get_service_host(self.service, 8081)
        return f"http://{host}:{self._compose.get_service_port(self.service, 8081)}"

    def _docker(self, *args: str) -> None:
        subprocess.run(["docker", *args, self.container], check=True, capture_output=True)

    def alive(self) -> bool:
        out = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", self.container],
                             capture_output=True, text=True)
        return out.stdout.strip() == "true"

    def kill9(self) -> None:
        self._docker("kill", "--signal", "KILL")

    def pause(self) -> None:
        self._docker("pause")

    def resume(self) -> None:
        self._docker("unpause")

    def terminate(self) -> None:
        self._docker("stop")

    def start(self) -> None:
        self._docker("start")


class ContainerCluster:
    """docker/compose.yml, up for the test and down afterwards."""

    def __init__(self, elector: str) -> None:
        from testcontainers.compose import DockerCompose

        os.environ["ELECTION"] = elector
        self._compose = DockerCompose(str(ROOT / "docker"), compose_file_name="compose.yml", build=True)

    def __enter__(self) -> ContainerCluster:
        self._compose.start()
        self.nodes = [ContainerNode(self._compose, f"registry-{i}") for i in (1, 2, 3)]
        for node in self.nodes:
            wait_for(node.ready, 180, f"{node.service} to be ready")
        return self

    def __exit__(self, *exc: object) -> None:
        self._compose.stop()

    def live(self) -> list[ContainerNode]:
        return [n for n in self.nodes if n.alive()]

    def leader(self) -> ContainerNode | None:
        leaders = [n for n in self.live() if (view := n.leader_view()) and view["is_leader"]]
        return leaders[0] if len(leaders) == 1 else None

    def wait_for_leader(self, timeout: float = 30, other_than: ContainerNode | None = None) -> ContainerNode:
        return wait_for(lambda: (l := self.leader()) is not None and l is not other_than and l, timeout,
                        "a single leader")

    def state(self, node: ContainerNode) -> dict[str, Any]:
        get = lambda path: requests.get(f"{node.url}{path}", timeout=5).json()  # noqa: E731
        return {"schemas": get("/schemas?deleted=true"), "subjects": get("/subjects?deleted=true"),
                "config": get("/config"), "mode": get("/mode")}


@pytest.mark.parametrize("elector", ["zookeeper", "kafka"])
def test_failover_on_containers(elector):
    with ContainerCluster(elector) as cluster:
        check_every_node(cluster, run_failover_scenario(cluster))
