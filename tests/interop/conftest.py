"""One real registry process for the interop suite, and each client program's report.

The registry is the CLI on a free loopback port and a tmp dir (tests/api/support.py),
killed with its process group at the end of the session, also on failure. Each client
program runs its scenario once, on first use, under a prefix of its own; the tests of
both modules assert on those reports.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.api.support import RegistryFactory, RegistryProcess
from tests.interop.clients import CLIENTS, plan, run

Steps = dict[str, dict[str, Any]]


@pytest.fixture(scope="session")
def interop_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryProcess]:
    factory = RegistryFactory(tmp_path_factory.mktemp("interop-registry"))
    try:
        yield factory()
    finally:
        factory.close()


@pytest.fixture(scope="session")
def run_id() -> str:
    """Part of every subject and topic the programs make: nothing else in the registry has it."""
    return uuid.uuid4().hex[:8]


@pytest.fixture(scope="session")
def scenario(interop_registry: RegistryProcess, run_id: str) -> Callable[[str], tuple[str, Steps]]:
    """`scenario(client_name)` -> (its prefix, its steps); each program runs once a session."""
    done: dict[str, tuple[str, Steps] | AssertionError] = {}

    def get(name: str) -> tuple[str, Steps]:
        if name not in done:
            prefix = f"it-{run_id}-{name}"
            try:
                done[name] = (prefix, run(CLIENTS[name], plan(interop_registry.url, prefix)))
            except AssertionError as broken:  # a broken program fails each of its tests, once run
                done[name] = broken
        result = done[name]
        if isinstance(result, AssertionError):
            raise result
        return result

    return get
