"""The client side's way to the registry: a caching client that fails over between nodes.

    from registry.client import Schema, SchemaRegistryClient

    client = SchemaRegistryClient({"url": "http://sr-1:8081,http://sr-2:8081"})
    schema_id = client.register_schema("orders-value", Schema(schema_str, "AVRO"))

`SchemaRegistryClient` (schema_registry_client.py) is a drop-in for confluent-kafka's,
built from `config` (the configuration keys), `transport` (HTTP, failover, retries),
`caches` and `single_flight`. `lookup.SchemaLookup` is the one schema lookup the
serializers (registry.serde) and Spark decoding (registry.spark) share: schemas by id
and by version, and the schemas they reference, each fetched once.

Nothing here imports the server: a producer installs this without the `server` extra.
"""
from confluent_kafka.schema_registry import (
    RegisteredSchema,
    Schema,
    SchemaReference,
    ServerConfig,
)
from confluent_kafka.schema_registry.error import SchemaRegistryError

from registry.client.schema_registry_client import SchemaRegistryClient
from registry.client.transport import RegistryUnreachable

__all__ = [
    "RegisteredSchema",
    "RegistryUnreachable",
    "Schema",
    "SchemaReference",
    "SchemaRegistryClient",
    "SchemaRegistryError",
    "ServerConfig",
]
