"""A real registry for the serde and client integration tests, and clients talking to it.

`registry_url` is one `schema-registry serve` process per module (started through
bench/registry_process.registry, which always kills it, also on failure). Tests keep
out of each other's way with unique subjects and topics (`subject`, `topic`).
"""
from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient

from registry.client import SchemaRegistryClient

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from registry_process import registry  # noqa: E402


@pytest.fixture(scope="module")
def registry_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a registry on the embedded store, for this module only."""
    with registry(tmp_path_factory.mktemp("registry")) as (url, _pid):
        yield url


@pytest.fixture
def client(registry_url: str) -> Iterator[SchemaRegistryClient]:
    """Our client, fresh (empty caches) for each test."""
    with SchemaRegistryClient({"url": registry_url, "retries.wait.ms": 50}) as c:
        yield c


@pytest.fixture
def confluent_client(registry_url: str) -> Iterator[ConfluentClient]:
    """confluent-kafka's own client, on the same registry."""
    with ConfluentClient({"url": registry_url}) as c:
        yield c


@pytest.fixture
def topic() -> str:
    """A topic name no other test uses; subjects derived from it are unique too."""
    return f"serde-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def subject(topic: str) -> str:
    """The value subject of `topic` under TopicNameStrategy."""
    return f"{topic}-value"
