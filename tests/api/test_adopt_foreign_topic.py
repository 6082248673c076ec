"""Adopting a `_schemas` topic another registry wrote (issue 48, item 2): records produced
one by one as Confluent's or Karapace's clients left them (plain `json.dumps`, other key
orders, whitespace in the schema text), then a node of ours started on that topic finds
each schema by lookup and by re-registration, with no new version or id."""
from __future__ import annotations

import json
import uuid

import pytest
import requests
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.api.support import RegistryFactory

pytestmark = pytest.mark.integration

V1_JSON = "application/vnd.schemaregistry.v1+json"
# The text as a client sent it, and what we would have stored.
SENT = ('{ "type" : "record", "namespace" : "com.acme",\n  "name" : "Order",\n'
        '  "fields" : [ { "type" : "long", "name" : "id" }, {"name": "note", "type": ["null", "string"], '
        '"default": null} ] }')
OURS = json.dumps({"type": "record", "name": "Order", "namespace": "com.acme",
                   "fields": [{"name": "id", "type": "long"},
                              {"name": "note", "type": ["null", "string"], "default": None}]})


def test_a_topic_another_registry_wrote_is_matched_by_meaning(start_registry: RegistryFactory, kafka_bootstrap: str):
    topic = f"_schemas_foreign_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    created = admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])
    created[topic].result(30)  # as the other registry created it: one compacted partition
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    records = [
        # Karapace's key order, Confluent's value with the schema as sent.
        ({"subject": "raw1", "version": 1, "magic": 1, "keytype": "SCHEMA"},
         {"subject": "raw1", "version": 1, "id": 1, "schema": SENT, "deleted": False}),
        # Plain json.dumps of both, other orders again, the JSON Schema type spelled out.
        ({"keytype": "SCHEMA", "subject": "raw2", "version": 1, "magic": 1},
         {"deleted": False, "schemaType": "JSON", "id": 2, "version": 1, "subject": "raw2",
          "schema": '{ "type": "object",  "properties": { "a": { "type": "integer" } } }'}),
    ]
    for key, value in records:
        producer.produce(topic, key=json.dumps(key).encode(), value=json.dumps(value).encode())
    assert producer.flush(30) == 0, "the foreign records are in the topic"
    del producer, admin  # closed now, not when collected after the broker has stopped
    server = start_registry(env={
        "SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "SCHEMA_REGISTRY_KAFKASTORE_TOPIC": topic,
        "SCHEMA_REGISTRY_KAFKASTORE_TOPIC_REPLICATION_FACTOR": "1",
        "SCHEMA_REGISTRY_LEADER_ELECTION_SESSION_TIMEOUT_MS": "6000",
    })
    headers = {"Content-Type": V1_JSON}
    for subject, body, schema_id in (("raw1", {"schema": OURS}, 1),
                                     ("raw2", {"schemaType": "JSON",
                                               "schema": '{"type":"object","properties":{"a":{"type":"integer"}}}'},
                                      2)):
        found = requests.post(f"{server.url}/subjects/{subject}", json=body, headers=headers, timeout=10)
        assert found.status_code == 200, f"lookup of {subject}: {found.text}"
        assert (found.json()["id"], found.json()["version"]) == (schema_id, 1), found.json()
        again = requests.post(f"{server.url}/subjects/{subject}/versions", json=body, headers=headers, timeout=10)
        assert again.status_code == 200 and again.json()["id"] == schema_id, again.text
        versions = requests.get(f"{server.url}/subjects/{subject}/versions", timeout=10).json()
        assert versions == [1], f"{subject}: re-registering made no new version"
    server.stop()
