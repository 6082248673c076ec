"""JSON Schema bytes between Confluent's JavaScript serdes (@confluentinc/schemaregistry),
confluent-kafka-go's (serde/jsonschema), confluent-kafka's Python serdes and ours, both
ways, through one registry: each writer frames as Confluent does (magic byte, the id the
registry holds for its subject, one id for the one schema whoever registered it) and
every reader decodes every writer's bytes to the value written."""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as ConfluentDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as ConfluentSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from registry.client import SchemaRegistryClient as OurClient
from registry.serde.json_schema import JSONDeserializer, JSONSerializer
from tests.api.support import RegistryProcess
from tests.interop.exchange import PROGRAMS, Exchange, exchange

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


PYTHON_WRITERS = ("ours", "confluent-python")
WRITERS = (*PYTHON_WRITERS, *PROGRAMS)


@pytest.fixture(scope="module")
def found(interop_registry: RegistryProcess, run_id: str) -> Exchange:
    prefix = f"it-{run_id}-json"
    url = interop_registry.url
    return exchange(url, prefix, "json", python_bytes(url, prefix), json_schema=SCHEMA_TEXT, json_value=VALUE)


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_program_serializer_writes_and_reads_back(found: Exchange, program: str) -> None:
    write = found.write(program)
    assert write["ok"], write
    assert write["value"]["decoded"] == VALUE, f"{program}'s deserializer reads its own bytes as written"


@pytest.mark.parametrize(("reader", "writer"), [(r, w) for r in PROGRAMS for w in WRITERS if w != r])
def test_the_program_deserializer_reads_every_other_writer(found: Exchange, reader: str, writer: str) -> None:
    read = found.read(reader, writer)
    assert read["ok"], read
    assert read["value"] == VALUE, f"{reader}'s deserializer decodes {writer}'s bytes to the value written"


@pytest.mark.parametrize("writer", PROGRAMS)
def test_every_python_deserializer_reads_the_program_bytes(found: Exchange, interop_registry: RegistryProcess,
                                                           writer: str) -> None:
    data = found.payload(writer)
    ctx = SerializationContext("any-topic", MessageField.VALUE)
    url = interop_registry.url
    assert JSONDeserializer(None, schema_registry_client=OurClient({"url": url}))(data, ctx) == VALUE, \
        f"our deserializer decodes {writer}'s bytes to the value written"
    assert ConfluentDeserializer(None, schema_registry_client=ConfluentClient({"url": url}))(data, ctx) == VALUE, \
        f"confluent-kafka's deserializer decodes {writer}'s bytes to the value written"


@pytest.mark.parametrize("writer", WRITERS)
def test_each_writer_frames_with_the_id_of_its_subject(found: Exchange, interop_registry: RegistryProcess,
                                                       writer: str) -> None:
    data = found.payload(writer)
    subject = f"{found.topic(writer)}-value"
    latest = interop_registry.get(f"/subjects/{quote(subject, safe='')}/versions/latest")
    assert latest.status_code == 200, latest.text
    assert data[0] == 0, f"{writer} frames as Confluent does: magic byte 0"
    assert int.from_bytes(data[1:5], "big") == latest.json()["id"], \
        f"{writer} writes the id the registry holds for {subject}"


def test_one_schema_has_one_id_whoever_registered_it(found: Exchange) -> None:
    ids = {writer: int.from_bytes(found.payload(writer)[1:5], "big") for writer in WRITERS}
    assert len(set(ids.values())) == 1, f"the same schema text registered under each writer's subject: {ids}"
