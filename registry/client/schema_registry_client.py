"""A caching, thread-safe Schema Registry client that fails over between nodes.

A drop-in for ``confluent_kafka.schema_registry.SchemaRegistryClient``: the same
configuration keys, method names, signatures and return types (confluent-kafka's own
``Schema``, ``RegisteredSchema``, ``SchemaReference``, ``ServerConfig``), and errors
raised as its ``SchemaRegistryError``. Switching is an import change::

    from registry.client import SchemaRegistryClient

    client = SchemaRegistryClient({"url": "http://sr-1:8081,http://sr-2:8081"})
    schema_id = client.register_schema("orders-value", Schema(schema_str, "AVRO"))

What it adds over confluent-kafka's client: failover between the nodes ``url`` names
and retries with full-jitter backoff (`transport`); caches of id -> schema (an id
never names other content), (subject, schema) -> registration, (subject, version) ->
registration, each holding ``cache.capacity`` entries, least recently used evicted,
and latest version per subject (also expiring after ``cache.latest.ttl.sec``, never
when unset, as in confluent-kafka) (`caches`); and concurrent misses on the same key
make one HTTP request between them (`single_flight`). Configuration keys: see `config`.
"""
from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote

from confluent_kafka.schema_registry import (
    RegisteredSchema,
    Schema,
    ServerConfig,
)

from registry.client import caches
from registry.client.config import ClientConfig
from registry.client.single_flight import SingleFlight
from registry.client.transport import Transport

__all__ = ["SchemaRegistryClient"]


def _quote(value: str) -> str:
    return quote(value, safe="")


class _ConfluentCacheShim:
    """confluent-kafka's serdes reach into `client._cache` for `use.schema.id`; answer
    "not cached" so they fall back to public methods when handed this client."""

    def get_registered_by_subject_id(self, subject: str, schema_id: int) -> None:
        return None


class SchemaRegistryClient:
    """A Schema Registry client: confluent-kafka's interface, with failover and caches.

    Every method is thread-safe. Every method that talks to the registry blocks on
    HTTP, retrying as `registry.client.transport` describes, and raises SchemaRegistryError
    for an error answer or RegistryUnreachable when no node could be reached.
    """

    def __init__(self, conf: dict[str, Any]) -> None:
        config = ClientConfig.from_conf(conf)
        self._conf = conf
        self._transport = Transport.from_config(config)
        capacity = config.cache_capacity
        self._schema_by_id: caches.LockedCache[int, Schema] = caches.bounded(capacity)
        self._by_subject_schema: caches.LockedCache[tuple[str, Schema, bool], RegisteredSchema] = \
            caches.bounded(capacity)
        self._lookups: caches.LockedCache[tuple[str, Schema, bool, bool], RegisteredSchema] = \
            caches.bounded(capacity)
        self._versions: caches.LockedCache[tuple[str, int | str, bool], RegisteredSchema] = \
            caches.bounded(capacity)
        self._latest: caches.LockedCache[str, RegisteredSchema] = caches.expiring(capacity, config.latest_ttl_s)
        self._flights = SingleFlight()
        self._cache = _ConfluentCacheShim()

    # ---- lifecycle --------------------------------------------------------------

    def __enter__(self) -> SchemaRegistryClient:
        return self

    def __exit__(self, *args: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close the pooled connections. Safe to call more than once."""
        self._transport.close()

    def config(self) -> dict[str, Any]:
        return self._conf

    @staticmethod
    def new_client(conf: dict[str, Any]) -> Any:
        """confluent-kafka's factory: a mock client for ``mock://`` URLs, else ours."""
        url = conf.get("url")
        if isinstance(url, str) and url.startswith("mock://"):
            from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (
                MockSchemaRegistryClient,
            )
            return MockSchemaRegistryClient(conf)
        return SchemaRegistryClient(conf)

    def _get(self, path: str, query: dict[str, Any] | None = None) -> Any:
        return self._transport.request("GET", path, query=query)

    def _post(self, path: str, body: Any, query: dict[str, Any] | None = None) -> Any:
        return self._transport.request("POST", path, query=query, body=body)

    def _put(self, path: str, body: Any, query: dict[str, Any] | None = None) -> Any:
        return self._transport.request("PUT", path, query=query, body=body)

    def _delete(self, path: str, query: dict[str, Any] | None = None) -> Any:
        return self._transport.request("DELETE", path, query=query)

    # ---- schemas ------------------------------------------------------------------

    def register_schema(self, subject_name: str, schema: Schema, normalize_schemas: bool = False) -> int:
        """Register `schema` under `subject_name` (or find it there); return its id. Cached."""
        registered = self.register_schema_full_response(subject_name, schema, normalize_schemas)
        return registered.schema_id  # type: ignore[return-value]

    def register_schema_full_response(self, subject_name: str, schema: Schema,
                                      normalize_schemas: bool = False) -> RegisteredSchema:
        """Register `schema` under `subject_name`; return the registration. Cached per
        (subject, schema, normalize): a second call makes no request."""
        key = (subject_name, schema, normalize_schemas)
        cached = self._by_subject_schema.get(key)
        if cached is not None:
            return cached

        def register() -> RegisteredSchema:
            response = self._post(f"/subjects/{_quote(subject_name)}/versions", schema.to_dict(),
                                  {"normalize": normalize_schemas})
            answered = RegisteredSchema.from_dict(response)
            registered = RegisteredSchema(
                schema_id=answered.schema_id, guid=answered.guid,
                subject=answered.subject or subject_name, version=answered.version,
                schema=answered.schema if answered.schema.schema_str is not None else schema)
            self._by_subject_schema.put(key, registered)
            # A registration may have added a version: the cached latest is stale.
            self._latest.discard_where(lambda k: k == subject_name)
            return registered

        return self._flights.do(("register",) + key, register)

    def get_schema(self, schema_id: int, subject_name: str | None = None, fmt: str | None = None,
                   reference_format: str | None = None) -> Schema:
        """The schema with `schema_id`. Cached until evicted: an id never names other content."""
        plain = fmt is None and reference_format is None
        if plain:
            cached = self._schema_by_id.get(schema_id)
            if cached is not None:
                return cached

        def fetch() -> Schema:
            query: dict[str, Any] = {}
            if subject_name is not None:
                query["subject"] = subject_name
            if fmt is not None:
                query["format"] = fmt
            if reference_format is not None:
                query["reference_format"] = reference_format
            response = self._get(f"/schemas/ids/{int(schema_id)}", query or None)
            schema = RegisteredSchema.from_dict(response).schema
            if plain:
                self._schema_by_id.put(schema_id, schema)
            return schema

        return self._flights.do(("id", schema_id, subject_name, fmt, reference_format), fetch)

    def get_schema_by_guid(self, guid: str, fmt: str | None = None) -> Schema:
        query = {"format": fmt} if fmt is not None else None
        return RegisteredSchema.from_dict(self._get(f"/schemas/guids/{_quote(guid)}", query)).schema

    def get_schema_types(self) -> list[str]:
        return self._get("/schemas/types")

    def get_subjects_by_schema_id(self, schema_id: int, subject_name: str | None = None,
                                  deleted: bool = False, offset: int = 0, limit: int = -1) -> list[str]:
        query: dict[str, Any] = {"offset": offset, "limit": limit}
        if subject_name is not None:
            query["subject"] = subject_name
        if deleted:
            query["deleted"] = True
        return self._get(f"/schemas/ids/{int(schema_id)}/subjects", query)

    def get_schema_versions(self, schema_id: int, subject_name: str | None = None, deleted: bool = False,
                            offset: int = 0, limit: int = -1) -> list[Any]:
        from confluent_kafka.schema_registry.common.schema_registry_client import SchemaVersion

        query: dict[str, Any] = {"offset": offset, "limit": limit}
        if subject_name is not None:
            query["subject"] = subject_name
        if deleted:
            query["deleted"] = True
        return [SchemaVersion.from_dict(item)
                for item in self._get(f"/schemas/ids/{int(schema_id)}/versions", query)]

    def lookup_schema(self, subject_name: str, schema: Schema, normalize_schemas: bool = False,
                      fmt: str | None = None, deleted: bool = False) -> RegisteredSchema:
        """The registration of `schema` under `subject_name` (id and version). Cached."""
        key = (subject_name, schema, normalize_schemas, deleted)
        if fmt is None:
            cached = self._lookups.get(key)
            if cached is not None:
                return cached

        def lookup() -> RegisteredSchema:
            query: dict[str, Any] = {"normalize": normalize_schemas, "deleted": deleted}
            if fmt is not None:
                query["format"] = fmt
            answered = RegisteredSchema.from_dict(self._post(f"/subjects/{_quote(subject_name)}",
                                                             schema.to_dict(), query))
            registered = RegisteredSchema(schema_id=answered.schema_id, guid=answered.guid,
                                          subject=answered.subject, version=answered.version, schema=schema)
            if fmt is None:
                self._lookups.put(key, registered)
            return registered

        return self._flights.do(("lookup", fmt) + key, lookup)

    # ---- subjects and versions ----------------------------------------------------

    def get_subjects(self, subject_prefix: str | None = None, deleted: bool = False,
                     deleted_only: bool = False, offset: int = 0, limit: int = -1) -> list[str]:
        query: dict[str, Any] = {"deleted": deleted, "deletedOnly": deleted_only,
                                 "offset": offset, "limit": limit}
        if subject_prefix is not None:
            query["subjectPrefix"] = subject_prefix
        return self._get("/subjects", query)

    def delete_subject(self, subject_name: str, permanent: bool = False) -> list[int]:
        """Delete the subject (soft, or hard with `permanent`); return the deleted versions."""
        query = {"permanent": "true"} if permanent else None
        versions = self._delete(f"/subjects/{_quote(subject_name)}", query)
        self._forget_subject(subject_name)
        return versions

    def get_latest_version(self, subject_name: str, fmt: str | None = None) -> RegisteredSchema:
        """The subject's latest version. Cached per subject for `cache.latest.ttl.sec`."""
        if fmt is None:
            cached = self._latest.get(subject_name)
            if cached is not None:
                return cached

        def fetch() -> RegisteredSchema:
            query = {"format": fmt} if fmt is not None else None
            registered = RegisteredSchema.from_dict(
                self._get(f"/subjects/{_quote(subject_name)}/versions/latest", query))
            if fmt is None:
                self._latest.put(subject_name, registered)
            return registered

        return self._flights.do(("latest", subject_name, fmt), fetch)

    def get_latest_with_metadata(self, subject_name: str, metadata: dict[str, str], deleted: bool = False,
                                 fmt: str | None = None) -> RegisteredSchema:
        query: dict[str, Any] = {"deleted": deleted, "key": list(metadata), "value": list(metadata.values())}
        if fmt is not None:
            query["format"] = fmt
        return RegisteredSchema.from_dict(self._get(f"/subjects/{_quote(subject_name)}/metadata", query))

    def get_version(self, subject_name: str, version: int | Literal["latest"] = "latest",
                    deleted: bool = False, fmt: str | None = None) -> RegisteredSchema:
        """One version of a subject. Numbered versions are cached; "latest" is always fetched."""
        cacheable = version != "latest" and fmt is None
        key = (subject_name, version, deleted)
        if cacheable:
            cached = self._versions.get(key)
            if cached is not None:
                return cached
        query: dict[str, Any] = {"deleted": deleted}
        if fmt is not None:
            query["format"] = fmt
        registered = RegisteredSchema.from_dict(
            self._get(f"/subjects/{_quote(subject_name)}/versions/{version}", query))
        if cacheable:
            self._versions.put(key, registered)
        if registered.schema_id is not None and fmt is None:
            self._schema_by_id.put_if_absent(registered.schema_id, registered.schema)
        return registered

    def get_referenced_by(self, subject_name: str, version: int | Literal["latest"] = "latest",
                          offset: int = 0, limit: int = -1) -> list[int]:
        return self._get(f"/subjects/{_quote(subject_name)}/versions/{version}/referencedby",
                         {"offset": offset, "limit": limit})

    def get_versions(self, subject_name: str, deleted: bool = False, deleted_only: bool = False,
                     offset: int = 0, limit: int = -1) -> list[int]:
        return self._get(f"/subjects/{_quote(subject_name)}/versions",
                         {"deleted": deleted, "deletedOnly": deleted_only, "offset": offset, "limit": limit})

    def delete_version(self, subject_name: str, version: int, permanent: bool = False) -> int:
        """Delete one version (soft, or hard with `permanent`); return its number."""
        query = {"permanent": "true"} if permanent else None
        deleted = self._delete(f"/subjects/{_quote(subject_name)}/versions/{version}", query)
        self._forget_subject(subject_name)
        return deleted

    def _forget_subject(self, subject: str) -> None:
        """Drop what we cached about `subject` (ids stay: an id never changes meaning)."""
        self._by_subject_schema.discard_where(lambda k: k[0] == subject)
        self._lookups.discard_where(lambda k: k[0] == subject)
        self._versions.discard_where(lambda k: k[0] == subject)
        self._latest.discard_where(lambda k: k == subject)

    # ---- compatibility and config ----------------------------------------------------

    def set_compatibility(self, subject_name: str | None = None, level: str | None = None) -> Any:
        """Set the compatibility level; return the registry's answer, as confluent-kafka does."""
        if level is None:
            raise ValueError("level must be set")
        path = "/config" if subject_name is None else f"/config/{_quote(subject_name)}"
        return self._put(path, {"compatibility": level.upper()})

    def get_compatibility(self, subject_name: str | None = None) -> str:
        path = "/config" if subject_name is None else f"/config/{_quote(subject_name)}"
        return self._get(path)["compatibilityLevel"]

    def test_compatibility(self, subject_name: str, schema: Schema, version: int | str = "latest",
                           normalize: bool = False, verbose: bool = False) -> bool:
        response = self._post(f"/compatibility/subjects/{_quote(subject_name)}/versions/{version}",
                              schema.to_dict(), {"normalize": normalize, "verbose": verbose})
        return response["is_compatible"]

    def test_compatibility_all_versions(self, subject_name: str, schema: Schema, normalize: bool = False,
                                        verbose: bool = False) -> bool:
        response = self._post(f"/compatibility/subjects/{_quote(subject_name)}/versions",
                              schema.to_dict(), {"normalize": normalize, "verbose": verbose})
        return response["is_compatible"]

    def set_config(self, subject_name: str | None = None, config: ServerConfig | None = None) -> Any:
        """Update the config; return the registry's answer (a dict), as confluent-kafka does."""
        if config is None:
            raise ValueError("config must be set")
        path = "/config" if subject_name is None else f"/config/{_quote(subject_name)}"
        return self._put(path, config.to_dict())

    def delete_config(self, subject_name: str | None = None) -> ServerConfig:
        path = "/config" if subject_name is None else f"/config/{_quote(subject_name)}"
        return ServerConfig.from_dict(self._delete(path))

    def get_config(self, subject_name: str | None = None) -> ServerConfig:
        path = "/config" if subject_name is None else f"/config/{_quote(subject_name)}"
        return ServerConfig.from_dict(self._get(path))

    def get_mode(self, subject_name: str) -> str:
        return self._get(f"/mode/{_quote(subject_name)}")["mode"]

    def update_mode(self, subject_name: str, mode: str, force: bool = False) -> str:
        return self._put(f"/mode/{_quote(subject_name)}", {"mode": mode}, {"force": force})["mode"]

    def delete_mode(self, subject_name: str) -> str:
        return self._delete(f"/mode/{_quote(subject_name)}")["mode"]

    def get_global_mode(self) -> str:
        return self._get("/mode")["mode"]

    def update_global_mode(self, mode: str, force: bool = False) -> str:
        return self._put("/mode", {"mode": mode}, {"force": force})["mode"]

    def get_contexts(self, offset: int = 0, limit: int = -1) -> list[str]:
        return self._get("/contexts", {"offset": offset, "limit": limit})

    def get_associations_by_resource_name(self, resource_name: str, resource_namespace: str,
                                          resource_type: str | None = None,
                                          association_types: list[str] | None = None,
                                          offset: int = 0, limit: int = -1) -> list[Any]:
        """Associations (a Confluent Cloud feature). confluent-kafka's default subject
        strategy asks for them and falls back to the topic strategy on a 404."""
        from confluent_kafka.schema_registry import Association

        query: dict[str, Any] = {}
        if resource_type is not None:
            query["resourceType"] = resource_type
        if association_types is not None:
            query["associationType"] = association_types
        if offset > 0:
            query["offset"] = offset
        if limit >= 1:
            query["limit"] = limit
        found = self._get(f"/associations/resources/{_quote(resource_namespace)}/{_quote(resource_name)}",
                          query)
        return [Association.from_dict(a) for a in found]

    def create_association(self, request: Any) -> Any:
        """Associations are a Confluent Cloud feature; passed through for API parity."""
        from confluent_kafka.schema_registry import AssociationResponse

        return AssociationResponse.from_dict(self._post("/associations", request.to_dict()))

    def delete_associations(self, resource_id: str, resource_type: str | None = None,
                            association_types: list[str] | None = None,
                            cascade_lifecycle: bool = False) -> None:
        """Associations are a Confluent Cloud feature; passed through for API parity."""
        query: dict[str, Any] = {"cascadeLifecycle": cascade_lifecycle}
        if resource_type is not None:
            query["resourceType"] = resource_type
        if association_types is not None:
            query["associationType"] = association_types
        self._delete(f"/associations/resources/{_quote(resource_id)}", query)

    # ---- caches ----------------------------------------------------------------------

    def clear_latest_caches(self) -> None:
        self._latest.clear()

    def clear_caches(self) -> None:
        self._schema_by_id.clear()
        self._by_subject_schema.clear()
        self._lookups.clear()
        self._versions.clear()
        self._latest.clear()
