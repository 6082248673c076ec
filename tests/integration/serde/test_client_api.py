"""Our client against a real registry, method by method, next to confluent-kafka's client.

Switching clients is meant to be an import change: for each method both clients are
called on the same registry and must return equal values (of confluent-kafka's own
types) or raise SchemaRegistryError with the same status and error code.
"""
from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import ConfigCompatibilityLevel, RegisteredSchema, Schema, ServerConfig
from confluent_kafka.schema_registry.error import SchemaRegistryError

from registry.client import SchemaRegistryClient

pytestmark = pytest.mark.integration


def record(name: str, *fields: tuple[str, Any]) -> str:
    return json.dumps({"type": "record", "name": name,
                       "fields": [{"name": n, "type": t} for n, t in fields]})


V1 = record("User", ("name", "string"))
V2 = json.dumps({"type": "record", "name": "User", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int", "default": 0}]})
INCOMPATIBLE = record("User", ("name", "long"))


def same_registration(a: RegisteredSchema, b: RegisteredSchema) -> bool:
    return ((a.schema_id, a.subject, a.version) == (b.schema_id, b.subject, b.version)
            and json.loads(a.schema.schema_str) == json.loads(b.schema.schema_str))


def same_error(call_ours: Any, call_theirs: Any) -> SchemaRegistryError:
    with pytest.raises(SchemaRegistryError) as ours:
        call_ours()
    with pytest.raises(SchemaRegistryError) as theirs:
        call_theirs()
    assert (ours.value.http_status_code, ours.value.error_code) == \
        (theirs.value.http_status_code, theirs.value.error_code), \
        "errors must carry the same HTTP status and registry error code as confluent-kafka's client"
    return ours.value


def test_register_and_read_back_like_confluent(client: SchemaRegistryClient, confluent_client: Any,
                                               subject: str) -> None:
    schema = Schema(V1, "AVRO")
    schema_id = client.register_schema(subject, schema)
    assert confluent_client.register_schema(subject, schema) == schema_id, \
        "both clients must see one id for one schema under one subject"
    assert client.get_schema(schema_id) == confluent_client.get_schema(schema_id), \
        "get_schema returns confluent-kafka's Schema, equal to what its client returns"

    ours = client.lookup_schema(subject, schema)
    theirs = confluent_client.lookup_schema(subject, schema)
    assert isinstance(ours, RegisteredSchema) and ours == theirs, \
        "lookup_schema returns the same RegisteredSchema (id, subject, version, schema)"
    assert client.get_latest_version(subject) == confluent_client.get_latest_version(subject)
    assert same_registration(client.get_version(subject, 1), confluent_client.get_version(subject, 1)), \
        "get_version returns the same registration (confluent-kafka may hand back its own cached text)"
    assert client.get_versions(subject) == confluent_client.get_versions(subject) == [1]
    assert subject in client.get_subjects() and subject in confluent_client.get_subjects()
    assert client.get_subjects(subject_prefix=subject) == [subject], "the prefix filter is passed on"

    full = client.register_schema_full_response(subject, schema)
    assert full.schema_id == schema_id and full.subject == subject, \
        "registering the same schema again answers with the same id"


def test_new_version_compatibility_and_deletes(client: SchemaRegistryClient, confluent_client: Any,
                                               subject: str) -> None:
    client.register_schema(subject, Schema(V1, "AVRO"))
    assert client.test_compatibility(subject, Schema(V2, "AVRO")) is True
    assert client.test_compatibility(subject, Schema(INCOMPATIBLE, "AVRO")) is False, \
        "a changed field type is not BACKWARD compatible"
    assert client.test_compatibility_all_versions(subject, Schema(V2, "AVRO")) is True
    error = same_error(lambda: client.register_schema(subject, Schema(INCOMPATIBLE, "AVRO")),
                       lambda: confluent_client.register_schema(subject, Schema(INCOMPATIBLE, "AVRO")))
    assert error.http_status_code == 409, "an incompatible schema is refused with 409"

    before = client.get_latest_version(subject)
    v2_id = client.register_schema(subject, Schema(V2, "AVRO"))
    latest = client.get_latest_version(subject)
    assert latest.version == before.version + 1 and latest.schema_id == v2_id, \
        "registering a new version drops the cached latest version of that subject"

    assert client.delete_version(subject, 2) == 2
    assert client.get_versions(subject) == [1], "a soft-deleted version is no longer listed"
    assert client.get_versions(subject, deleted=True) == [1, 2], "deleted=True lists it again"
    assert client.delete_subject(subject) == [1]
    same_error(lambda: client.get_versions(subject), lambda: confluent_client.get_versions(subject))
    assert client.delete_subject(subject, permanent=True) == [1, 2]


def test_compatibility_and_config(client: SchemaRegistryClient, confluent_client: Any, subject: str) -> None:
    client.register_schema(subject, Schema(V1, "AVRO"))
    answer = client.set_compatibility(subject, "full")
    assert answer == {"compatibility": "FULL"}, "the registry's answer is returned as confluent-kafka does"
    assert client.get_compatibility(subject) == confluent_client.get_compatibility(subject) == "FULL"
    config = client.get_config(subject)
    assert isinstance(config, ServerConfig) and config == confluent_client.get_config(subject)
    client.set_config(subject, ServerConfig(compatibility=ConfigCompatibilityLevel.NONE))
    assert client.get_compatibility(subject) == "NONE"
    assert client.delete_config(subject).compatibility_level is not None
    assert client.get_compatibility() == confluent_client.get_compatibility(), "the global level"


def test_errors_carry_status_code_and_message(client: SchemaRegistryClient, confluent_client: Any,
                                              subject: str) -> None:
    error = same_error(lambda: client.get_schema(987654), lambda: confluent_client.get_schema(987654))
    assert (error.http_status_code, error.error_code) == (404, 40403) and error.error_message, \
        "an unknown id is 404 / 40403 with the registry's message"
    error = same_error(lambda: client.get_latest_version(subject),
                       lambda: confluent_client.get_latest_version(subject))
    assert error.error_code == 40401, "an unknown subject is 40401"
    error = same_error(lambda: client.register_schema(subject, Schema('{"type": "nope"}', "AVRO")),
                       lambda: confluent_client.register_schema(subject, Schema('{"type": "nope"}', "AVRO")))
    assert error.error_code == 42201, "an invalid schema is 42201"


def test_failover_skips_a_dead_node(registry_url: str, subject: str) -> None:
    from registry_process import free_port

    dead = f"http://127.0.0.1:{free_port()}"
    with SchemaRegistryClient({"url": f"{dead},{registry_url}", "retries.wait.ms": 10}) as client:
        schema_id = client.register_schema(subject, Schema(V1, "AVRO"))
        assert client.get_schema(schema_id).schema_str is not None
        order = [node.url for node in client._transport.order()]
        assert order == [registry_url, dead], \
            "after one refused connection the dead node goes last and the live one is used first"


def test_caches_make_repeat_calls_free(client: SchemaRegistryClient, subject: str) -> None:
    schema_id = client.register_schema(subject, Schema(V1, "AVRO"))
    calls: list[str] = []
    real = client._transport.request

    def counting(method: str, path: str, **kwargs: Any) -> Any:
        calls.append(f"{method} {path}")
        return real(method, path, **kwargs)

    client._transport.request = counting  # type: ignore[method-assign]
    for _ in range(3):
        client.register_schema(subject, Schema(V1, "AVRO"))
        client.get_schema(schema_id)
        client.lookup_schema(subject, Schema(V1, "AVRO"))
        client.get_latest_version(subject)
        client.get_version(subject, 1)
    assert calls == [f"GET /schemas/ids/{schema_id}", f"POST /subjects/{subject}",
                     f"GET /subjects/{subject}/versions/latest", f"GET /subjects/{subject}/versions/1"], \
        "only the first of each call goes to the registry (registering was cached already)"
