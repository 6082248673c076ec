"""Issue 12, item 11: confluent-kafka 2.16's ASSOCIATED subject name strategy against our
registry: the serializer asks `/associations/resources/{cluster}/{topic}` first and uses
the associated subject, not only its fallback."""
from __future__ import annotations

import json
import struct
import uuid

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.api.support import ok_json

PAYMENT = json.dumps({"type": "record", "name": "Payment", "fields": [{"name": "cents", "type": "long"}]},
                     separators=(",", ":"))


def test_the_serializer_finds_the_associated_subject(registry, registry_url):
    topic, cluster = f"payments-{uuid.uuid4().hex[:8]}", "lkc-test"
    created = ok_json(registry.post("/associations", {
        "resourceName": topic, "resourceNamespace": cluster, "resourceId": f"id-{topic}",
        "associations": [{"associationType": "value", "schema": {"schema": PAYMENT}}]}), "create association")
    subject = created["associations"][0]["subject"]
    assert subject == f":.{cluster}:{topic}-value"
    schema_id = created["associations"][0]["schema"]["id"]

    conf = {"auto.register.schemas": False, "use.latest.version": True,
            "subject.name.strategy.type": "ASSOCIATED",
            "subject.name.strategy.conf": {"subject.name.strategy.kafka.cluster.id": cluster,
                                           "subject.name.strategy.fallback.type": "NONE"}}
    client = SchemaRegistryClient({"url": registry_url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    payload = AvroSerializer(client, None, conf=conf)({"cents": 250}, ctx)
    magic, written_id = struct.unpack(">bI", payload[:5])
    assert (magic, written_id) == (0, schema_id), "the serializer used the associated subject's latest version"

    deserializer = AvroDeserializer(SchemaRegistryClient({"url": registry_url}),
                                    conf={"subject.name.strategy.type": "ASSOCIATED",
                                          "subject.name.strategy.conf": conf["subject.name.strategy.conf"]})
    assert deserializer(payload, ctx) == {"cents": 250}
