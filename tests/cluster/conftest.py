"""Session fixtures of the container tests: the engine, the images, and the shared
ZooKeeper, Kafka and networks (tests/cluster/containers.py).

Without a Docker engine, or where no image can be made, every test asking for them
skips and says why; a build that fails is an error.
"""
from __future__ import annotations

from collections.abc import Iterator

import docker
import pytest

from tests.cluster.containers import ContainerInfra, EngineUnavailable, docker_engine
from tests.cluster.images import ClusterImages, ImagesUnavailable, build_images
from tests.conftest import infra


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    try:
        client = docker_engine()
    except EngineUnavailable as exc:
        pytest.skip(str(exc))
    yield client
    client.close()


@pytest.fixture(scope="session")
def cluster_images(docker_client: docker.DockerClient) -> ClusterImages:
    """Built once per engine and reused by the hash of their inputs (minutes when new)."""
    if not infra.jars_ready():
        pytest.fail(f"Kafka/ZooKeeper jars are missing in {infra.JARS_DIR}: run `make infra-fetch` first",
                    pytrace=False)
    try:
        return build_images(docker_client, infra.JARS_DIR)
    except ImagesUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def container_infra(docker_client: docker.DockerClient, cluster_images: ClusterImages) -> Iterator[ContainerInfra]:
    """ZooKeeper, Kafka and the networks, shared by every container test; removed at the end."""
    with ContainerInfra(docker_client, cluster_images) as started:
        yield started


@pytest.fixture
def containers(container_infra: ContainerInfra) -> Iterator[ContainerInfra]:
    """The shared infrastructure, serving before the test and again after it (a test
    may have stopped ZooKeeper or Kafka)."""
    container_infra.ensure_serving()
    yield container_infra
    container_infra.ensure_serving()
