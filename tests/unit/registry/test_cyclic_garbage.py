"""The hot calls leave no garbage in reference cycles.

Refcounting frees what they leave behind at once; a cycle waits for the cyclic
collector, and every collection runs on the request path (a full one traverses every
object not frozen). A recursive closure (`_resolve_references`' walk once was one) left
7 objects in a cycle on every registration.

Not here: an invalid JSON Schema. jsonschema links its validation errors both ways
(an error's `context` holds its causes, each cause's `parent` the error), by design.
"""
from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator

import pytest

from tests.asgi_client import NodeClient

RECORD = '{{"type":"record","name":"R{n}","fields":[{{"name":"a","type":"long"}}]}}'
REFERRING = ('{{"type":"record","name":"Outer{n}","fields":['
             '{{"name":"inner","type":"R0"}},{{"name":"b","type":"string"}}]}}')


@pytest.fixture(scope="module", params=["true", "false"], ids=["group commit", "a thread per write"])
def client(request) -> Iterator[NodeClient]:
    with NodeClient(**{"group.commit.enable": request.param}) as the_client:
        for n in range(3):
            assert the_client.post(f"/subjects/r{n}/versions", {"schema": RECORD.format(n=n)}).status == 200
        yield the_client


def _cyclic_garbage(call: Callable[[int], object], times: int = 30) -> list[str]:
    """What `times` calls leave for the cyclic collector (type names), after a warm-up."""
    for n in range(5):
        call(n)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)  # keep what a collection finds unreachable, to look at
    try:
        for n in range(5, 5 + times):
            call(n)
        gc.collect()
        return sorted({type(garbage).__qualname__ for garbage in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def _register(client: NodeClient, target: str, body: dict, method: str = "POST") -> None:
    response = client.request(method, target, body)
    assert response.status == 200, response.body


CALLS: dict[str, Callable[[NodeClient, int], object]] = {
    "register": lambda c, n: _register(c, f"/subjects/new-{n}/versions", {"schema": RECORD.format(n=100 + n)}),
    "register with a reference": lambda c, n: _register(c, f"/subjects/outer-{n}/versions", {
        "schema": REFERRING.format(n=n), "references": [{"name": "R0", "subject": "r0", "version": 1}]}),
    "register again": lambda c, n: _register(c, "/subjects/r1/versions", {"schema": RECORD.format(n=1)}),
    "lookup": lambda c, n: _register(c, "/subjects/r2", {"schema": RECORD.format(n=2)}),
    "compatibility check": lambda c, n: _register(c, "/compatibility/subjects/r0/versions/latest",
                                                  {"schema": RECORD.format(n=0)}),
    "register JSON Schema": lambda c, n: _register(c, f"/subjects/json-{n}/versions", {
        "schemaType": "JSON", "schema": json.dumps({"type": "object", "properties": {f"p{n}": {"type": "string"}}})}),
    "register Protobuf": lambda c, n: _register(c, f"/subjects/proto-{n}/versions", {
        "schemaType": "PROTOBUF", "schema": f'syntax = "proto3"; message M{n} {{ string a = 1; }}'}),
    "an incompatible schema": lambda c, n: c.post("/subjects/r0/versions", {
        "schema": '{"type":"record","name":"R0","fields":[{"name":"a","type":"string"}]}'}),
    "an invalid Protobuf schema": lambda c, n: c.post("/subjects/r0/versions", {"schemaType": "PROTOBUF",
                                                                               "schema": "message {"}),
    "a missing reference": lambda c, n: c.post("/subjects/r0/versions", {
        "schema": REFERRING.format(n=n), "references": [{"name": "R0", "subject": "nobody", "version": 1}]}),
    "a config change": lambda c, n: _register(c, "/config/r1", {"compatibility": ("FULL", "BACKWARD")[n % 2]},
                                              "PUT"),
    "a soft delete": lambda c, n: (_register(c, f"/subjects/gone-{n}/versions", {"schema": RECORD.format(n=500 + n)}),
                                   c.delete(f"/subjects/gone-{n}")),
    "schema by id": lambda c, n: c.get("/schemas/ids/1"),
    "latest": lambda c, n: c.get("/subjects/r0/versions/latest"),
    "an invalid schema": lambda c, n: c.post("/subjects/r0/versions", {"schema": '{"type": "recor'}),
    "an unknown subject": lambda c, n: c.get(f"/subjects/nobody-{n}/versions/latest"),
    "a body that is not JSON": lambda c, n: c.post("/subjects/r0/versions", b"{" * (n + 1),
                                                   headers={"Content-Type": "application/json"}),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_a_hot_call_leaves_no_garbage_in_cycles(client, name):
    call = CALLS[name]
    assert _cyclic_garbage(lambda n: call(client, n)) == []


def test_the_check_sees_a_cycle_when_one_is_left():
    """The measure itself: a call that does leave a cycle is caught."""
    def leaves_a_cycle(n: int) -> None:
        node: dict = {"n": n}
        node["self"] = node

    assert _cyclic_garbage(leaves_a_cycle) == ["dict"]
