"""A single node on the Kafka store: ready means reads AND writes work (issue 11, item 17).

It elects itself through the Kafka consumer group; before that election is done its
writes used to get 50004 while /ready already answered 200.
"""
from __future__ import annotations

import uuid

import pytest
import requests

from tests.api.support import RegistryFactory, register, unique_record

pytestmark = pytest.mark.integration


def test_the_first_write_after_ready_succeeds(start_registry: RegistryFactory, kafka_bootstrap: str):
    for attempt in range(3):  # three cold starts, each on a fresh topic
        topic = f"_schemas_{uuid.uuid4().hex[:10]}"
        server = start_registry(env={
            "SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS": kafka_bootstrap,
            "SCHEMA_REGISTRY_KAFKASTORE_TOPIC": topic,
            "SCHEMA_REGISTRY_KAFKASTORE_TOPIC_REPLICATION_FACTOR": "1",
            "SCHEMA_REGISTRY_LEADER_ELECTION_SESSION_TIMEOUT_MS": "6000",
        })  # returns once /ready answers 200
        assert register(server, f"first-{attempt}", unique_record(f"first{attempt}")) > 0, \
            "the first write after /ready must be taken, not answered 50004"
        view = requests.get(f"{server.url}/leader", timeout=5).json()
        assert view["is_leader"] and view["leader"] == server.url, view
        server.stop()
