"""The image is the fast image (issue 50, item 4).

docker/Dockerfile is built as a user builds it (`docker build -f docker/Dockerfile .`,
the repository as context, .dockerignore choosing what goes in), once per session, on
python:3.11-slim where the engine has it, else on the Debian base tests/cluster/images.py
makes. A container of it, on the embedded store:
- says at start-up that its replay is the compiled one (store._replay_native, built into
  the wheel in the builder stage; the Python fallback would say so instead);
- answers /ready, and its HEALTHCHECK turns healthy;
- runs as a user other than root.
Skips where no Docker engine answers or no base image can be had.
"""
from __future__ import annotations

import time
import urllib.request
import uuid
from collections.abc import Iterator

import docker
import docker.errors
import pytest
from docker.models.containers import Container

from tests.cluster.images import PUBLIC_PYTHON, ImagesUnavailable, debian_base
from tests.cluster.registry_image import ImageBuildError, build_registry_image

pytestmark = pytest.mark.integration

LABEL = "org.schema-registry-py.test-image"


def base_image(client: docker.DockerClient) -> str:
    """python:3.11-slim where the engine has it, else the Debian base (raises ImagesUnavailable)."""
    try:
        client.images.get(PUBLIC_PYTHON)
        return PUBLIC_PYTHON
    except docker.errors.ImageNotFound:
        return debian_base(client, print)


@pytest.fixture(scope="session")
def image(docker_client: docker.DockerClient) -> str:
    """docker/Dockerfile built from the repository's files, once (tests/cluster/registry_image.py)."""
    try:
        base = base_image(docker_client)
    except ImagesUnavailable as exc:
        pytest.skip(str(exc))
    try:
        return build_registry_image(docker_client, base)
    except ImageBuildError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def node(docker_client: docker.DockerClient, image: str) -> Iterator[Container]:
    """A container of the image on a network of its own (the engine `make docker-engine`
    starts has no default bridge), which this host reaches by the container's address."""
    network = docker_client.networks.create(f"registry-image-{uuid.uuid4().hex[:8]}", driver="bridge",
                                            internal=True, labels={LABEL: "registry-image-test"})
    container = docker_client.containers.run(image, detach=True, network=network.name,
                                             labels={LABEL: "registry-image-test"})
    try:
        yield container
    finally:
        container.remove(force=True)
        network.remove()


def wait_for(what: str, check, timeout: float, container: Container) -> object:
    """Poll `check()` until it returns something true; fails naming `what` at `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        container.reload()
        assert container.status == "running", \
            f"the container stopped before {what}:\n{container.logs().decode(errors='replace')[-3000:]}"
        assert time.monotonic() < deadline, \
            f"{what} within {timeout} s:\n{container.logs().decode(errors='replace')[-3000:]}"
        time.sleep(0.5)


def ready(address: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{address}:8081/ready", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


def test_the_image_replays_natively_answers_ready_and_runs_as_a_user(node: Container) -> None:
    node.reload()
    address = wait_for("an address on its network", lambda: (node.reload(), next(
        (n["IPAddress"] for n in node.attrs["NetworkSettings"]["Networks"].values() if n.get("IPAddress")), ""))[1],
        30, node)
    wait_for("/ready answering 200", lambda: ready(address), 60, node)
    logs = node.logs().decode(errors="replace")
    assert "replay: compiled (store._replay_native)" in logs, \
        f"the image's node replays with the compiled module, and says so at start-up:\n{logs[-3000:]}"
    assert "replay: Python" not in logs and "Avro decoding: fastavro" not in logs, "no fallback in the image"

    uid = node.exec_run(["id", "-u"])
    assert uid.exit_code == 0 and uid.output.decode().strip() not in ("", "0"), \
        f"the node runs as a user other than root: id -u says {uid.output!r}"
    assert node.attrs["Config"]["User"] == "registry", "the image names its user"
    native = node.exec_run(["python", "-c", "import store._replay_native as m; print(m.__file__)"])
    assert native.exit_code == 0 and native.output.decode().strip().endswith(".abi3.so"), \
        f"the installed wheel's compiled replay: {native.output!r}"

    health = wait_for("the HEALTHCHECK to report healthy",
                      lambda: (node.reload(), node.attrs["State"].get("Health", {}).get("Status") == "healthy")[1],
                      60, node)
    assert health, "HEALTHCHECK asks /ready"
