"""Subject name strategies, and that serializers resolve a subject once, not per message."""
from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from confluent_kafka import schema_registry as confluent
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

from registry.serde import AvroSerializer, naming

RECORD = json.dumps({"type": "record", "name": "Click", "namespace": "web",
                     "fields": [{"name": "x", "type": "int"}]})
KEY = SerializationContext("clicks", MessageField.KEY)
VALUE = SerializationContext("clicks", MessageField.VALUE)


def test_topic_name_strategy() -> None:
    assert naming.TopicNameStrategy(VALUE, "web.Click") == "clicks-value"
    assert naming.TopicNameStrategy(KEY, "web.Click") == "clicks-key"
    with pytest.raises(ValueError):
        naming.TopicNameStrategy(None, "web.Click")


def test_record_name_strategy_needs_no_context() -> None:
    assert naming.RecordNameStrategy(VALUE, "web.Click") == "web.Click"
    assert naming.RecordNameStrategy(None, "web.Click") == "web.Click"


def test_topic_record_name_strategy() -> None:
    assert naming.TopicRecordNameStrategy(VALUE, "web.Click") == "clicks-web.Click"
    assert naming.TopicRecordNameStrategy(VALUE, None) is None, "no record name, no subject"


@pytest.mark.parametrize("ours, theirs", [
    (naming.topic_subject_name_strategy, confluent.topic_subject_name_strategy),
    (naming.record_subject_name_strategy, confluent.record_subject_name_strategy),
    (naming.topic_record_subject_name_strategy, confluent.topic_record_subject_name_strategy),
])
def test_same_subjects_as_confluent_kafka(ours: Any, theirs: Any) -> None:
    for ctx in (KEY, VALUE):
        assert ours(ctx, "web.Click") == theirs(ctx, "web.Click"), "switching libraries keeps the subjects"


@pytest.mark.parametrize("type_name, expected", [
    (None, naming.topic_subject_name_strategy), ("TOPIC", naming.topic_subject_name_strategy),
    ("record", naming.record_subject_name_strategy), ("TOPIC_RECORD", naming.topic_record_subject_name_strategy),
])
def test_strategy_type_names(type_name: str | None, expected: Any) -> None:
    assert naming.strategy_from_conf(None, type_name) is expected


def test_a_callable_wins_over_a_type_name() -> None:
    def custom(ctx: Any, name: Any) -> str:
        return "x"
    assert naming.strategy_from_conf(custom, "RECORD") is custom
    with pytest.raises(ValueError):
        naming.strategy_from_conf("not callable")


def client() -> Any:
    return SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4().hex}"})


@pytest.mark.parametrize("conf, subjects", [
    ({}, ["clicks-key", "clicks-value"]),
    ({"subject.name.strategy": naming.RecordNameStrategy}, ["web.Click"]),
    ({"subject.name.strategy": confluent.record_subject_name_strategy}, ["web.Click"]),
    ({"subject.name.strategy.type": "TOPIC_RECORD"}, ["clicks-web.Click"]),
])
def test_serializer_registers_under_the_strategys_subject(conf: dict[str, Any], subjects: list[str]) -> None:
    registry = client()
    serializer = AvroSerializer(registry, RECORD, conf=conf)
    serializer({"x": 1}, KEY)
    serializer({"x": 2}, VALUE)
    assert sorted(registry.get_subjects()) == subjects


def test_record_name_strategy_serializes_without_a_context() -> None:
    serializer = AvroSerializer(client(), RECORD, conf={"subject.name.strategy.type": "RECORD"})
    assert serializer({"x": 1}, None)[0] == 0, "no topic needed when the subject is the record name"


def test_a_custom_strategy_is_asked_for_every_message() -> None:
    asked: list[str] = []

    def by_header(ctx: Any, name: Any) -> str:
        asked.append(ctx.topic)
        return f"custom-{ctx.topic}"

    registry = client()
    serializer = AvroSerializer(registry, RECORD, conf={"subject.name.strategy": by_header})
    for _ in range(3):
        serializer({"x": 1}, VALUE)
    assert asked == ["clicks"] * 3, "an unknown strategy may depend on anything: it is not cached"
    assert registry.get_subjects() == ["custom-clicks"]
