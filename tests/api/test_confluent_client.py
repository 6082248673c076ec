"""Confluent's own Python client (confluent-kafka) against our server: the drop-in test.

`SchemaRegistryClient` calls, then `AvroSerializer` / `AvroDeserializer` serializing and
deserializing records by hand (no Kafka), with auto-registration and with
`use.latest.version`.
"""
from __future__ import annotations

import json
import struct

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.api.support import ok_json, path_of, record

USER_V1 = record("User", ("name", "string"), ("favorite_number", "long"), namespace="com.example")
USER_V2 = record("User", ("name", "string"), ("favorite_number", "long"), ("email", ["null", "string"]),
                 namespace="com.example", defaults={"email": None})
USER_BREAKS = record("User", ("name", "string"), ("favorite_number", "long"), ("age", "int"),
                     namespace="com.example")


@pytest.fixture
def client(registry_url: str) -> SchemaRegistryClient:
    """A fresh client (fresh caches) per test, on the module's server."""
    return SchemaRegistryClient({"url": registry_url})


def test_register_get_lookup_and_versions(client, registry, subject):
    schema_id = client.register_schema(subject, Schema(USER_V1, "AVRO"))
    assert isinstance(schema_id, int) and schema_id > 0, "register_schema answers a positive id"
    assert client.register_schema(subject, Schema(USER_V1, "AVRO")) == schema_id, "registering again: same id"

    fetched = client.get_schema(schema_id)
    assert json.loads(fetched.schema_str) == json.loads(USER_V1), "get_schema returns the registered schema"
    assert fetched.schema_type == "AVRO", "get_schema reports AVRO"

    v2_id = SchemaRegistryClient({"url": registry.url}).register_schema(
        subject, Schema(USER_V2, "AVRO"))
    latest = SchemaRegistryClient({"url": registry.url}).get_latest_version(subject)
    assert (latest.schema_id, latest.subject, latest.version) == (v2_id, subject, 2), \
        "get_latest_version returns the newest version"
    first = client.get_version(subject, 1)
    assert (first.schema_id, first.version) == (schema_id, 1), "get_version(1) returns version 1"
    assert json.loads(first.schema.schema_str) == json.loads(USER_V1), "with its schema"

    found = client.lookup_schema(subject, Schema(json.dumps(json.loads(USER_V1), indent=2), "AVRO"))
    assert (found.schema_id, found.version, found.subject) == (schema_id, 1, subject), \
        "lookup_schema finds the version from reformatted text"
    assert subject in client.get_subjects(), "get_subjects lists the subject"
    assert client.get_versions(subject) == [1, 2], "get_versions lists both versions"


def test_missing_things_raise_schema_registry_errors_with_confluent_codes(client, subject):
    with pytest.raises(SchemaRegistryError) as missing_subject:
        client.get_latest_version(subject)
    assert missing_subject.value.error_code == 40401, "an unknown subject is 40401 to the client"
    with pytest.raises(SchemaRegistryError) as missing_id:
        client.get_schema(2_000_000_000)
    assert missing_id.value.error_code == 40403, "an unknown id is 40403 to the client"
    client.register_schema(subject, Schema(USER_V1, "AVRO"))
    with pytest.raises(SchemaRegistryError) as incompatible:
        client.register_schema(subject, Schema(USER_BREAKS, "AVRO"))
    assert incompatible.value.http_status_code == 409, "an incompatible schema is a 409 to the client"


def test_delete_version_and_subject(client, registry, subject):
    client.register_schema(subject, Schema(USER_V1, "AVRO"))
    client.register_schema(subject, Schema(USER_V2, "AVRO"))
    assert client.delete_version(subject, 2) == 2, "delete_version answers the version deleted"
    assert ok_json(registry.get(f"/subjects/{path_of(subject)}/versions"), "versions") == [1], \
        "version 2 is soft-deleted"
    assert client.delete_version(subject, 2, permanent=True) == 2, "a permanent delete after the soft one"
    assert client.delete_subject(subject) == [1], "delete_subject answers the versions deleted"
    assert subject not in client.get_subjects(), "the subject is gone from the list"
    assert client.delete_subject(subject, permanent=True) == [1], "a permanent subject delete"
    assert subject not in client.get_subjects(deleted=True), "nothing is left"


def test_compatibility_settings_and_checks(client, subject):
    client.register_schema(subject, Schema(USER_V1, "AVRO"))
    # The client hands back the response body: Confluent's echo of the request.
    assert client.set_compatibility(subject, "FULL") == {"compatibility": "FULL"}, \
        "set_compatibility answers Confluent's echo of the level set"
    assert client.get_compatibility(subject) == "FULL", "get_compatibility reads the subject level"
    assert client.test_compatibility(subject, Schema(USER_V2, "AVRO")) is True, \
        "an optional field with a default is FULL-compatible"
    assert client.test_compatibility(subject, Schema(USER_BREAKS, "AVRO")) is False, \
        "a required new field is not"
    assert client.test_compatibility(subject, Schema(USER_V2, "AVRO"), version=1) is True, \
        "checking against a numbered version works too"
    assert client.get_compatibility() == "BACKWARD", "the global level is untouched"


def _framed_id(payload: bytes) -> int:
    assert payload[0] == 0, "Confluent's wire format starts with magic byte 0"
    return struct.unpack(">I", payload[1:5])[0]


def test_avro_serializer_auto_registers_and_round_trips(client, registry, subject):
    topic = subject
    ctx = SerializationContext(topic, MessageField.VALUE)
    serializer = AvroSerializer(client, USER_V1)
    user = {"name": "Ada", "favorite_number": 42}
    payload = serializer(user, ctx)
    registered = ok_json(registry.get(f"/subjects/{path_of(topic + '-value')}/versions/latest"), "latest")
    assert _framed_id(payload) == registered["id"], \
        "the serializer auto-registered the schema under <topic>-value and framed its id"
    reader_client = SchemaRegistryClient({"url": registry.url})  # no cached schemas
    assert AvroDeserializer(reader_client)(payload, ctx) == user, \
        "a deserializer fetching the writer schema by id reads the record back"
    key_ctx = SerializationContext(topic, MessageField.KEY)
    key_payload = AvroSerializer(client, record("Key", ("id", "long")))({"id": 7}, key_ctx)
    assert AvroDeserializer(reader_client)(key_payload, key_ctx) == {"id": 7}, "keys round-trip under <topic>-key"
    assert ok_json(registry.get(f"/subjects/{path_of(topic + '-key')}/versions"), "key versions") == [1], \
        "the key schema is version 1 of <topic>-key"


def test_avro_serializer_with_use_latest_version(client, registry, subject):
    topic = subject
    ctx = SerializationContext(topic, MessageField.VALUE)
    value_subject = f"{topic}-value"
    client.register_schema(value_subject, Schema(USER_V1, "AVRO"))
    v2_id = client.register_schema(value_subject, Schema(USER_V2, "AVRO"))
    serializer = AvroSerializer(client, USER_V1, conf={"auto.register.schemas": False, "use.latest.version": True})
    payload = serializer({"name": "Grace", "favorite_number": 7, "email": "grace@example.com"}, ctx)
    assert _framed_id(payload) == v2_id, "use.latest.version frames the latest version's id"
    reader_client = SchemaRegistryClient({"url": registry.url})
    assert AvroDeserializer(reader_client)(payload, ctx) == {
        "name": "Grace", "favorite_number": 7, "email": "grace@example.com"}, "the record reads back with V2"
    old_reader = AvroDeserializer(reader_client, USER_V1)
    assert old_reader(payload, ctx) == {"name": "Grace", "favorite_number": 7}, \
        "a V1 reader schema resolves V2 data (the field it lacks is skipped)"


def test_avro_serializer_without_auto_register_needs_the_schema(client, registry, subject):
    serializer = AvroSerializer(client, USER_V1, conf={"auto.register.schemas": False})
    ctx = SerializationContext(subject, MessageField.VALUE)
    with pytest.raises(Exception) as refused:
        serializer({"name": "Ada", "favorite_number": 1}, ctx)
    assert "40401" in str(refused.value) or "not found" in str(refused.value).lower(), \
        f"without auto-registration an unregistered subject is an error from the registry: {refused.value!r}"
    client.register_schema(f"{subject}-value", Schema(USER_V1, "AVRO"))
    payload = AvroSerializer(SchemaRegistryClient({"url": registry.url}), USER_V1,
                             conf={"auto.register.schemas": False})({"name": "Ada", "favorite_number": 1}, ctx)
    assert payload[0] == 0, "once registered, lookup-based serialization works"
