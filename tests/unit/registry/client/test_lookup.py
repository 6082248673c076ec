"""registry.client.lookup: the schema lookup serde and spark share, on confluent-kafka's mock client.

What is protected: referenced schemas come in dependency order (each before the
schemas that use it), each fetched once however often it is referenced; the walk
survives cycles and chains deeper than Python's recursion limit; ids and versions
are fetched once, also under concurrent misses; bad references fail clearly.
"""
from __future__ import annotations

import sys
import threading
import time
import uuid
from collections import Counter
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient

from registry.client.lookup import BadReference, SchemaLookup


def record(name: str, *field_types: str) -> str:
    fields = ",".join(f'{{"name":"f{i}","type":"{t}"}}' for i, t in enumerate(field_types))
    return f'{{"type":"record","name":"{name}","fields":[{fields}]}}'


class CountingClient:
    """Passes calls to `inner`, counting (method, args) pairs; can hold get_schema calls."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: Counter[tuple[Any, ...]] = Counter()
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.release.set()

    def get_schema(self, schema_id: int) -> Schema:
        with self.lock:
            self.calls["get_schema", schema_id] += 1
        self.release.wait(10)
        return self.inner.get_schema(schema_id)

    def get_version(self, subject: str, version: int, deleted: bool = False) -> Any:
        with self.lock:
            self.calls["get_version", subject, version, deleted] += 1
        return self.inner.get_version(subject, version, deleted=deleted)

    def get_latest_version(self, subject: str) -> Any:
        with self.lock:
            self.calls["get_latest_version", subject] += 1
        return self.inner.get_latest_version(subject)


@pytest.fixture
def mock() -> Any:
    return SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4().hex}"})


def wait_until(predicate: Any, what: str, timeout: float = 10.0) -> None:
    """Poll `predicate` until it holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        pause.wait(0.005)


def ref(name: str) -> SchemaReference:
    return SchemaReference(name, name, 1)


def test_references_come_in_dependency_order_each_fetched_once(mock: Any) -> None:
    # A diamond: Top uses B and C, both use D.
    mock.register_schema("D", Schema(record("D", "int"), "AVRO"))
    mock.register_schema("B", Schema(record("B", "D"), "AVRO", [ref("D")]))
    mock.register_schema("C", Schema(record("C", "D"), "AVRO", [ref("D")]))
    top = Schema(record("Top", "B", "C"), "AVRO", [ref("B"), ref("C")])
    client = CountingClient(mock)
    lookup = SchemaLookup(client)
    found = lookup.referenced(top)
    assert [r.name for r in found] == ["D", "B", "C"], \
        "D, which B and C use, comes before them; B before C as Top names them"
    assert [(r.subject, r.version) for r in found] == [("D", 1), ("B", 1), ("C", 1)]
    assert found[0].schema.schema_str == record("D", "int"), "each carries the referenced schema's text"
    assert lookup.referenced(top) == found, "walking again gives the same answer"
    assert all(n == 1 for n in client.calls.values()) and len(client.calls) == 3, \
        f"each referenced version fetched once, whoever references it and however often: {client.calls}"


def test_a_reference_cycle_is_walked_once_round(mock: Any) -> None:
    mock.register_schema("A", Schema(record("A", "int"), "AVRO", [ref("B")]))
    mock.register_schema("B", Schema(record("B", "int"), "AVRO", [ref("A")]))
    found = SchemaLookup(mock).referenced(Schema(record("Top", "A"), "AVRO", [ref("A")]))
    assert [r.name for r in found] == ["B", "A"], "the cycle ends where it comes back to A"


def test_a_chain_deeper_than_the_recursion_limit(mock: Any) -> None:
    depth = sys.getrecursionlimit() + 500
    for i in range(depth):
        refs = [ref(f"T{i - 1}")] if i else []
        mock.register_schema(f"T{i}", Schema(record(f"T{i}", "int"), "AVRO", refs))
    found = SchemaLookup(mock, capacity=depth).referenced(
        Schema(record("Top", "int"), "AVRO", [ref(f"T{depth - 1}")]))
    assert [r.name for r in found] == [f"T{i}" for i in range(depth)], \
        "the deepest schema first: the walk keeps its own stack instead of recursing"


@pytest.mark.parametrize("reference, message", [
    (SchemaReference("X", None, 1), "lacks a subject or a version"),
    (SchemaReference("X", "X", None), "lacks a subject or a version"),
])
def test_a_reference_without_subject_or_version_is_refused(mock: Any, reference: SchemaReference,
                                                            message: str) -> None:
    with pytest.raises(BadReference, match=message):
        SchemaLookup(mock).referenced(Schema(record("Top", "int"), "AVRO", [reference]))


def test_ids_and_numbered_versions_are_fetched_once_latest_is_the_clients(mock: Any) -> None:
    schema_id = mock.register_schema("s", Schema(record("S", "int"), "AVRO"))
    client = CountingClient(mock)
    lookup = SchemaLookup(client)
    for _ in range(3):
        assert lookup.by_id(schema_id).schema_str == record("S", "int")
        assert lookup.by_version("s", 1).schema_id == schema_id
        assert lookup.by_version("s", "latest").schema_id == schema_id
    assert client.calls == Counter({("get_schema", schema_id): 1, ("get_version", "s", 1, False): 1,
                                    ("get_latest_version", "s"): 3}), \
        "an id and a numbered version never change: fetched once; latest is left to the client's TTL cache"


def test_concurrent_misses_on_one_id_make_one_fetch(mock: Any) -> None:
    schema_id = mock.register_schema("s", Schema(record("S", "int"), "AVRO"))
    client = CountingClient(mock)
    client.release.clear()
    lookup = SchemaLookup(client)
    results: list[Schema] = []
    threads = [threading.Thread(target=lambda: results.append(lookup.by_id(schema_id))) for _ in range(8)]
    for t in threads:
        t.start()
    wait_until(lambda: len(lookup._fetching._waiters) == 7,  # type: ignore[attr-defined]
               "one thread fetches while the seven others wait for its result")
    client.release.set()
    for t in threads:
        t.join(10)
    assert client.calls[("get_schema", schema_id)] == 1, "eight threads missing one id made one fetch"
    assert len(results) == 8 and len(set(results)) == 1, "and all got its schema"
