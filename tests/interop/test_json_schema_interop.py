"""JSON Schema bytes between Confluent's JavaScript serdes (@confluentinc/schemaregistry),
confluent-kafka's Python serdes and ours, both ways, through one registry: each writer's
bytes are identical in framing (magic byte, the registered id) and every reader decodes
every writer's bytes to the value written."""
from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as ConfluentDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as ConfluentSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from registry.client import SchemaRegistryClient as OurClient
from registry.serde.json_schema import JSONDeserializer, JSONSerializer
from tests.api.support import RegistryProcess
from tests.interop.clients import CLIENTS, plan, run

pytestmark = pytest.mark.integration

SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
    "properties": {
        "id": {"type": "integer"}, "customer": {"type": "string"}, "total": {"type": "number"},
        "paid": {"type": "boolean"}, "lines": {"type": "array", "items": {"type": "string"}},
        "status": {"enum": ["NEW", "SHIPPED"]}, "note": {"type": ["null", "string"]},
    },
    "required": ["id", "customer", "total", "paid", "lines", "status"], "additionalProperties": False,
}
SCHEMA_TEXT = json.dumps(SCHEMA, separators=(",", ":"))
# Every value exact in JSON and in a JavaScript number.
VALUE = {"id": 1_234_567_890_123, "customer": "Ada ünïcødé", "total": 99.75, "paid": True,
         "lines": ["book", "pen"], "status": "SHIPPED", "note": None}


def python_bytes(url: str, prefix: str) -> dict[str, dict[str, Any]]:
    """Bytes written by our JSONSerializer and by confluent-kafka's, each on its own topic."""
    written = {}
    for writer, make in (("ours", lambda: JSONSerializer(SCHEMA_TEXT, OurClient({"url": url}))),
                         ("confluent-python", lambda: ConfluentSerializer(SCHEMA_TEXT, ConfluentClient({"url": url})))):
        topic = f"{prefix}-{writer}"
        data = make()(VALUE, SerializationContext(topic, MessageField.VALUE))
        written[writer] = {"writer": writer, "topic": topic, "hex": data.hex()}
    return written


@pytest.fixture(scope="module")
def exchange(interop_registry: RegistryProcess, run_id: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    prefix = f"it-{run_id}-json"
    written = python_bytes(interop_registry.url, prefix)
    steps = run(CLIENTS["confluent-js"], plan(interop_registry.url, prefix, mode="json", json_schema=SCHEMA_TEXT,
                                               json_value=VALUE, read=list(written.values())))
    return written, steps


def test_the_js_serializer_writes_and_reads_back(exchange):
    _, steps = exchange
    assert steps["json_write"]["ok"], steps["json_write"]
    assert steps["json_write"]["value"]["decoded"] == VALUE


@pytest.mark.parametrize("writer", ["ours", "confluent-python"])
def test_the_js_deserializer_reads_python_bytes(exchange, writer):
    _, steps = exchange
    read = steps[f"json_read_{writer}"]
    assert read["ok"], read
    assert read["value"] == VALUE, f"Confluent's JS deserializer decodes {writer}'s bytes to the value written"


def test_every_python_deserializer_reads_the_js_bytes(exchange, interop_registry):
    written, steps = exchange
    js = bytes.fromhex(steps["json_write"]["value"]["hex"])
    ctx = SerializationContext("any-topic", MessageField.VALUE)
    url = interop_registry.url
    assert JSONDeserializer(None, schema_registry_client=OurClient({"url": url}))(js, ctx) == VALUE
    assert ConfluentDeserializer(None, schema_registry_client=ConfluentClient({"url": url}))(js, ctx) == VALUE
    # The framing is Confluent's: magic 0, then the id the JS serializer looked up.
    assert js[0] == 0 and len(js) > 5
    ours = bytes.fromhex(written["ours"]["hex"])
    assert ours[0] == 0, "ours frames as Confluent does"
