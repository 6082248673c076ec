"""Issue 12, item 8: confluent-kafka's serializers executing a CEL data-quality rule that
our registry stores and serves (the `rules` extra: rules run in the client, the registry
only keeps and returns them). No Kafka: records are serialized by hand."""
from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.rules.cel.cel_executor import CelExecutor
from confluent_kafka.schema_registry.schema_registry_client import (
    Metadata,
    MetadataProperties,
    Rule,
    RuleKind,
    RuleMode,
    RuleSet,
)
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError

ORDER = json.dumps({"type": "record", "name": "Order", "namespace": "com.example",
                    "fields": [{"name": "amount", "type": "int"}]})


@pytest.fixture(scope="module", autouse=True)
def cel_rules():
    CelExecutor.register()


def test_a_cel_condition_stored_here_is_enforced_by_confluents_serializer(registry_url, subject):
    client = SchemaRegistryClient({"url": registry_url})
    rule = Rule("positive-amount", "amounts must be positive", RuleKind.CONDITION, RuleMode.WRITE, "CEL",
                None, None, "message.amount > 0", None, None, False)
    registered = client.register_schema_full_response(
        subject, Schema(ORDER, "AVRO", metadata=Metadata(None, MetadataProperties({"owner": "payments"}), None),
                        rule_set=RuleSet(None, [rule])))
    assert registered.version == 1, "RegisterFullResponse.version is the version (it was 0 against us)"

    latest = SchemaRegistryClient({"url": registry_url}).get_latest_version(subject)
    assert latest.schema.rule_set.domain_rules[0].expr == "message.amount > 0", "the rule is served back"
    assert latest.schema.metadata.properties.properties == {"owner": "payments"}

    topic = subject.removesuffix("-value") if subject.endswith("-value") else subject
    ctx = SerializationContext(topic, MessageField.VALUE)
    serializer = AvroSerializer(client, None, conf={"auto.register.schemas": False, "use.latest.version": True,
                                                    "subject.name.strategy": lambda *_: subject})
    good = serializer({"amount": 5}, ctx)
    with pytest.raises(SerializationError) as refused:
        serializer({"amount": -1}, ctx)
    cause = refused.value.__cause__
    assert type(cause).__name__ == "RuleConditionError" and "amounts must be positive" in str(cause), \
        f"the stored CEL condition refused the record: {cause!r}"

    deserializer = AvroDeserializer(SchemaRegistryClient({"url": registry_url}))
    assert deserializer(good, ctx) == {"amount": 5}, "a consumer reads the record back through the id"
