"""A real registry process for API tests: the CLI, on a free loopback port, on a tmp dir.

`registry` is one server per test module (fast); tests keep out of each other's way
with unique subject names (`subject`). `fresh_registry` is a server of its own for a
test that needs an empty registry or changes global state. `start_registry` starts
more (custom settings, restarts on the same data dir). Every process started here is
killed, with its whole process group, when its fixture ends, also on failure.
"""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.support import RegistryFactory, RegistryProcess


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryProcess]:
    """One registry for the whole module. Use unique subjects; leave global state as found."""
    factory = RegistryFactory(tmp_path_factory.mktemp("registry"))
    try:
        yield factory()
    finally:
        factory.close()


@pytest.fixture
def registry_url(registry: RegistryProcess) -> str:
    """The module registry's base URL, e.g. http://127.0.0.1:40123."""
    return registry.url


@pytest.fixture
def start_registry(tmp_path: Path) -> Iterator[RegistryFactory]:
    """Start registries of the test's own (`start_registry(env=...)`); all killed at the end."""
    factory = RegistryFactory(tmp_path)
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture
def fresh_registry(start_registry: RegistryFactory) -> RegistryProcess:
    """An empty registry of the test's own."""
    return start_registry()


@pytest.fixture
def subject() -> str:
    """A subject name no other test uses."""
    return f"subj-{uuid.uuid4().hex[:12]}"
