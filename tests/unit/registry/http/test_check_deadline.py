"""A request whose checks (parsing, compatibility) use up its time is refused as the
request's fault, 422/42201 with a reason, and writes nothing; only a wait on the log
answers 50002 (issue 47, item 12).
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from registry.http.error_answers import error_answer
from registry.schema_types.base import ParsedSchema
from registry.schema_types.json_schema import JsonSchema
from store.writer import NoTimeLeft, StoreTimeout
from tests.asgi_client import NodeClient

TIMEOUT_MS = 300


@pytest.fixture
def client() -> Iterator[NodeClient]:
    with NodeClient(**{"kafkastore.timeout.ms": str(TIMEOUT_MS)}) as the_client:
        yield the_client


def schema(*names: str) -> str:
    return json.dumps({"type": "object", "additionalProperties": False,
                       "properties": {name: {"type": "string"} for name in names}})


def test_a_compatibility_check_that_outlasts_the_timeout_is_a_422_and_writes_nothing(
        client: NodeClient, monkeypatch: pytest.MonkeyPatch) -> None:
    first = client.post("/subjects/s/versions", {"schemaType": "JSON", "schema": schema("a")})
    assert first.status == 200, first.body
    real = JsonSchema.read_errors

    def slow(self: JsonSchema, writer: ParsedSchema) -> list[str]:
        # The point of the test, not a wait: a check that takes longer than the request may.
        time.sleep(TIMEOUT_MS / 1000 + 0.2)
        return real(self, writer)

    monkeypatch.setattr(JsonSchema, "read_errors", slow)
    end = client.node.log.end_offset()
    answer = client.post("/subjects/s/versions", {"schemaType": "JSON", "schema": schema("a", "b")})
    assert answer.status == 422, (answer.status, answer.body)
    body = answer.json()
    assert body["error_code"] == 42201, body
    assert "checking the request" in body["message"] and "nothing was written" in body["message"], body
    assert client.node.log.end_offset() == end, "a request out of time in its checks appends nothing"
    assert client.get("/subjects/s/versions").json() == [1]
    monkeypatch.setattr(JsonSchema, "read_errors", real)
    again = client.post("/subjects/s/versions", {"schemaType": "JSON", "schema": schema("a", "b")})
    assert again.status == 200 and client.get("/subjects/s/versions").json() == [1, 2], \
        "the same request within its time is registered: nothing was left half done"


def test_only_a_wait_on_the_log_answers_50002() -> None:
    body, status = error_answer(StoreTimeout("timed out waiting for the write to be applied"), 1, "POST /x")
    assert (status, body["error_code"]) == (500, 50002), body
    body, status = error_answer(NoTimeLeft("11.0 s of checks, past the request's 10 s"), 1, "POST /x")
    assert (status, body["error_code"]) == (422, 42201), "time its checks spent is the request's"
    assert "11.0 s of checks" in body["message"], body
