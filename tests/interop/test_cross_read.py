"""Bytes one client's serializer wrote, read by every client's deserializer: 7 x 7.

The writers are the round trips of the scenario (tests/interop/test_scenarios.py), each
on its own topic `<prefix>-rt`; every reader program is run once, in read mode, on all
of them, with the writer's topic (so Confluent's deserializers ask for the id with
`?subject=<writer's topic>-value`, which holds it).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.api.support import RegistryProcess
from tests.interop.clients import CLIENTS, VALUE, plan, run

pytestmark = pytest.mark.integration

Steps = dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def payloads(scenario: Callable[[str], tuple[str, Steps]]) -> dict[str, dict[str, str]]:
    """Each writer's round-trip bytes and topic; a writer whose round trip failed is absent."""
    found = {}
    for name in CLIENTS:
        prefix, steps = scenario(name)
        roundtrip = steps.get("roundtrip", {})
        if roundtrip.get("ok"):
            found[name] = {"writer": name, "topic": f"{prefix}-rt", "hex": roundtrip["value"]["hex"]}
    return found


@pytest.fixture(scope="module")
def reads(payloads: dict[str, dict[str, str]], interop_registry: RegistryProcess,
          run_id: str) -> Callable[[str], Steps]:
    """`reads(reader)`: what the reader's program decoded, per writer; run once per reader."""
    done: dict[str, Steps] = {}

    def get(reader: str) -> Steps:
        if reader not in done:
            the_plan = plan(interop_registry.url, f"it-{run_id}-read-{reader}", mode="read",
                            read=list(payloads.values()))
            done[reader] = run(CLIENTS[reader], the_plan)
        return done[reader]

    return get


@pytest.mark.parametrize("reader", list(CLIENTS))
@pytest.mark.parametrize("writer", list(CLIENTS))
def test_reader_decodes_writer(writer: str, reader: str, payloads: dict[str, dict[str, str]],
                               reads: Callable[[str], Steps]) -> None:
    assert writer in payloads, f"{writer} wrote no bytes: its round-trip step failed (see test_scenarios)"
    outcome = reads(reader).get(writer)
    assert outcome is not None, f"{reader} reported nothing for {writer}'s bytes"
    assert outcome.get("ok"), f"{reader} could not decode {writer}'s bytes: {outcome!r}"
    assert outcome["value"] == VALUE, f"{reader} decodes {writer}'s record to the value written"
