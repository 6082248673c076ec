"""Memory after an import is what the registry holds (issue 51): a node that imported
200,000 schemas holds at most 1.2x the memory of a node cold-started on the same data.
It held 2.8x: every record this node wrote kept orjson's whole 4 KiB write buffer as its
key's bytes (`store.records`)."""
from __future__ import annotations

import json
import sys
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from store.records import SchemaKey, encode_key
from tests.api.support import RegistryFactory, child_pids

SCHEMAS = 200_000
BATCH = 500
VERSIONS = 10


def record(n: int) -> str:
    fields = [{"name": f"f{i}", "type": t} for i, t in enumerate(
        ["long", "string", "double", ["null", "string"], "boolean", "int", "bytes", "float"])]
    return json.dumps({"type": "record", "name": f"Event{n}", "namespace": "scale", "fields": fields},
                      separators=(",", ":"))


def rss_mib(pid: int) -> float:
    """Resident memory of the server: its supervisor and workers."""
    total = 0
    for each in [pid, *child_pids(pid)]:
        for line in Path(f"/proc/{each}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def test_an_encoded_key_holds_its_own_size_not_a_write_buffer():
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        keys = [encode_key(SchemaKey(f"subject-{n}", 1)) for n in range(1000)]
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 1000 * (sys.getsizeof(keys[0]) + 64), f"{held / 1000:.0f} bytes a key of {len(keys[0])}"


@pytest.mark.integration
def test_rss_after_an_import_is_within_1_2x_of_a_cold_start_on_the_same_data(start_registry: RegistryFactory,
                                                                             tmp_path: Path):
    data = tmp_path / "data"
    server = start_registry(data_dir=data)
    assert requests.put(f"{server.url}/mode", json={"mode": "IMPORT"}, timeout=10).status_code == 200
    entries = [{"subject": f"s{n // VERSIONS}", "version": n % VERSIONS + 1, "id": n + 1, "schema": record(n)}
               for n in range(SCHEMAS)]

    def send(start: int) -> None:
        answer = requests.post(f"{server.url}/import/schemas", json={"schemas": entries[start:start + BATCH]},
                               timeout=300)
        assert answer.status_code == 200, answer.text[:300]
        assert not any("error_code" in r for r in answer.json()["results"]), answer.text[:300]

    with ThreadPoolExecutor(8) as pool:  # as `schema-registry import` sends them
        list(pool.map(send, range(0, SCHEMAS, BATCH)))
    imported = rss_mib(server.pid)
    server.stop()
    cold = start_registry(data_dir=data)
    assert requests.get(f"{cold.url}/schemas/ids/{SCHEMAS}", timeout=10).status_code == 200, "all there"
    started = rss_mib(cold.pid)
    assert imported <= 1.2 * started, f"after the import {imported:.0f} MiB, cold-started {started:.0f} MiB"
    print(f"after the import {imported:.0f} MiB, cold-started {started:.0f} MiB")
