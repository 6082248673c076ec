"""A caching, thread-safe Schema Registry client that fails over between nodes.

A drop-in for ``confluent_kafka.schema_registry.SchemaRegistryClient``: the same
configuration keys, method names, signatures and return types (confluent-kafka's own
``Schema``, ``RegisteredSchema``, ``SchemaReference``, ``ServerConfig``), and errors
raised as its ``SchemaRegistryError``. Switching is an import change::

    from registry.client import SchemaRegistryClient

    client = SchemaRegistryClient({"url": "http://sr-1:8081,http://sr-2:8081"})
    schema_id = client.register_schema("orders-value", Schema(schema_str, "AVRO"))

What it adds over confluent-kafka's client:

* **Failover.** ``url`` may name several nodes. A node that refuses connections is
  skipped for ``url.dead.skip.ms`` and then tried again; requests stick to the last
  node that answered, so its pooled connection is reused.
* **Retries** with full-jitter exponential backoff on connection errors, 408, 429 and
  every 5xx (which covers 50003/50004 while the registry elects a new leader). A
  retriable failure moves on to the next node; the backoff is slept after each round
  of nodes.
* **Caches:** id -> schema (ids are immutable, so forever), (subject, schema) ->
  registration, (subject, version) -> registration, and latest version per subject
  (``cache.latest.ttl.sec``, forever when unset, as in confluent-kafka). Concurrent
  misses on the same key make one HTTP request between them.

Configuration keys: ``url`` (required), ``basic.auth.user.info``,
``basic.auth.credentials.source`` (``USER_INFO``, ``URL`` or ``SASL_INHERIT``),
``sasl.username``/``sasl.password`` (with ``SASL_INHERIT``), ``timeout`` (seconds per
HTTP request, default 10), ``max.retries`` (default 3), ``retries.wait.ms`` (default
1000), ``retries.max.wait.ms`` (default 20000), ``cache.capacity`` (default 1000),
``cache.latest.ttl.sec``, ``ssl.ca.location``, ``ssl.certificate.location``,
``ssl.key.location``, ``proxy``; and ours, ``url.dead.skip.ms`` (default 10000).
"""
from __future__ import annotations

import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import orjson
import requests
from confluent_kafka.schema_registry import (
    RegisteredSchema,
    Schema,
    SchemaReference,
    ServerConfig,
)
from confluent_kafka.schema_registry.error import SchemaRegistryError

__all__ = [
    "RegisteredSchema",
    "RegistryUnreachable",
    "Schema",
    "SchemaReference",
    "SchemaRegistryClient",
    "SchemaRegistryError",
    "ServerConfig",
]

T = TypeVar("T")

_ACCEPT = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"
_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_RETRIABLE_STATUS = frozenset({408, 429})


class RegistryUnreachable(requests.ConnectionError):
    """No node answered: every attempt failed to connect or timed out."""


def _quote(value: str) -> str:
    return quote(value, safe="")


def full_jitter(base_ms: float, max_ms: float, attempt: int) -> float:
    """Seconds to wait before retry `attempt` (0-based): uniform in [0, min(base * 2^attempt, max))."""
    return random.random() * min(base_ms * (2.0 ** attempt), max_ms) / 1000.0


def is_retriable(status: int) -> bool:
    """408, 429 and every 5xx: the same request may succeed later or on another node."""
    return status in _RETRIABLE_STATUS or 500 <= status <= 599


def _error_from(response: requests.Response) -> SchemaRegistryError:
    try:
        body = orjson.loads(response.content)
        return SchemaRegistryError(response.status_code, int(body["error_code"]), str(body["message"]))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        text = response.content[:500].decode("utf-8", "replace")
        return SchemaRegistryError(response.status_code, SchemaRegistryError.UNKNOWN,
                                   f"Unknown Schema Registry Error: {text}")


@dataclass
class _Node:
    url: str
    auth: tuple[str, str] | None
    dead_until: float = 0.0


class _Transport:
    """HTTP to a set of registry nodes over one pooled `requests.Session`.

    `request` blocks for at most (max_retries + 1) rounds over the nodes, each HTTP
    attempt bounded by `timeout`, with a jittered backoff sleep between rounds.
    """

    def __init__(self, nodes: list[_Node], session: requests.Session, *, timeout: float,
                 max_retries: int, retries_wait_ms: float, retries_max_wait_ms: float,
                 dead_skip_s: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.nodes = nodes
        self.session = session
        self.timeout = timeout
        self.max_retries = max_retries
        self.retries_wait_ms = retries_wait_ms
        self.retries_max_wait_ms = retries_max_wait_ms
        self.dead_skip_s = dead_skip_s
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._preferred = 0

    def order(self) -> list[_Node]:
        """Nodes to try, in order: live ones from the preferred node on, then the dead
        ones whose skip period ends soonest, so that a fully dead cluster is still probed."""
        now = self._clock()
        with self._lock:
            start = self._preferred
        rotated = self.nodes[start:] + self.nodes[:start]
        live = [n for n in rotated if n.dead_until <= now]
        dead = sorted((n for n in rotated if n.dead_until > now), key=lambda n: n.dead_until)
        return live + dead

    def _mark_dead(self, node: _Node) -> None:
        with self._lock:
            node.dead_until = self._clock() + self.dead_skip_s

    def _mark_alive(self, node: _Node) -> None:
        with self._lock:
            node.dead_until = 0.0
            self._preferred = self.nodes.index(node)

    def request(self, method: str, path: str, *, query: dict[str, Any] | None = None,
                body: Any = None) -> Any:
        """Send one request; return the decoded JSON body (None for an empty one).

        Raises SchemaRegistryError for an error answer (after retries, if retriable),
        and RegistryUnreachable when no node could be reached at all.
        """
        headers = {"Accept": _ACCEPT}
        data = None
        if body is not None:
            data = orjson.dumps(body)
            headers["Content-Type"] = _CONTENT_TYPE
        last_response: requests.Response | None = None
        last_exc: Exception | None = None
        for attempt in range(self.max_retries + 1):
            for node in self.order():
                try:
                    response = self.session.request(method, node.url + path, params=query, data=data,
                                                    headers=headers, auth=node.auth, timeout=self.timeout)
                except requests.ConnectionError as exc:
                    # Refused, reset, DNS, or connect timeout: this node is down for now.
                    self._mark_dead(node)
                    last_exc, last_response = exc, None
                    continue
                except requests.Timeout as exc:
                    # Read timeout: the node is up but slow. Try another, don't shun it.
                    last_exc, last_response = exc, None
                    continue
                self._mark_alive(node)
                status = response.status_code
                if 200 <= status < 300:
                    if status == 204 or not response.content:
                        return None
                    return orjson.loads(response.content)
                if not is_retriable(status):
                    raise _error_from(response)
                last_response, last_exc = response, None
            if attempt < self.max_retries:
                self._sleep(full_jitter(self.retries_wait_ms, self.retries_max_wait_ms, attempt))
        if last_response is not None:
            raise _error_from(last_response)
        raise RegistryUnreachable(
            f"no schema registry node reachable or answering in time "
            f"({', '.join(n.url for n in self.nodes)}): {last_exc}"
        ) from last_exc


class _Flight:
    __slots__ = ("done", "value", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class _SingleFlight:
    """Collapses concurrent calls for the same key into one; the others wait for its result."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[Hashable, _Flight] = {}

    def do(self, key: Hashable, fn: Callable[[], T]) -> T:
        with self._lock:
            flight = self._flights.get(key)
            leader = flight is None
            if leader:
                flight = self._flights[key] = _Flight()
        assert flight is not None
        if not leader:
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            return flight.value
        try:
            flight.value = fn()
            return flight.value
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            with self._lock:
                del self._flights[key]
            flight.done.set()


class _BoundedCache:
    """A dict capped at `capacity` entries (oldest inserted evicted), entries optionally
    expiring `ttl` seconds after insertion. All methods are thread-safe."""

    def __init__(self, capacity: int, ttl: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._capacity = max(1, capacity)
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()

    def get(self, key: Hashable) -> Any:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self._ttl is not None and self._clock() >= entry[0]:
            with self._lock:
                if self._entries.get(key) is entry:
                    del self._entries[key]
            return None
        return entry[1]

    def put(self, key: Hashable, value: Any) -> None:
        expires = self._clock() + self._ttl if self._ttl is not None else 0.0
        with self._lock:
            self._entries[key] = (expires, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)

    def discard_where(self, predicate: Callable[[Hashable], bool]) -> None:
        with self._lock:
            for key in [k for k in self._entries if predicate(k)]:
                del self._entries[key]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


class _ConfluentCacheShim:
    """confluent-kafka's serdes reach into `client._cache` for `use.schema.id`; answer
    "not cached" so they fall back to public methods when handed this client."""

    def get_registered_by_subject_id(self, subject: str, schema_id: int) -> None:
        return None


_KNOWN_KEYS = frozenset({
    "url", "basic.auth.user.info", "basic.auth.credentials.source", "sasl.username", "sasl.password",
    "timeout", "max.retries", "retries.wait.ms", "retries.max.wait.ms", "cache.capacity",
    "cache.latest.ttl.sec", "ssl.ca.location", "ssl.certificate.location", "ssl.key.location",
    "ssl.key.password", "proxy", "url.dead.skip.ms",
})


def _number(conf: dict[str, Any], key: str, default: float | None) -> float | None:
    value = conf.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{key} must be a number, not {type(value).__name__}")
    return value


def _nodes_from(conf: dict[str, Any]) -> list[_Node]:
    raw = conf.get("url")
    if raw is None:
        raise ValueError("Missing required configuration property url")
    if not isinstance(raw, str):
        raise TypeError(f"url must be a str, not {type(raw).__name__}")
    source = str(conf.get("basic.auth.credentials.source",
                          "USER_INFO" if "basic.auth.user.info" in conf else "URL")).upper()
    if source not in ("URL", "USER_INFO", "SASL_INHERIT"):
        raise ValueError("basic.auth.credentials.source must be one of URL, USER_INFO, SASL_INHERIT")
    shared: tuple[str, str] | None = None
    if source == "USER_INFO":
        parts = str(conf.get("basic.auth.user.info", "")).split(":", 1)
        if len(parts) != 2:
            raise ValueError("basic.auth.user.info must be in the form of {username}:{password}")
        shared = (parts[0], parts[1])
    elif source == "SASL_INHERIT":
        if "sasl.username" not in conf or "sasl.password" not in conf:
            raise ValueError("SASL_INHERIT needs sasl.username and sasl.password")
        shared = (str(conf["sasl.username"]), str(conf["sasl.password"]))
    nodes = []
    for item in raw.split(","):
        item = item.strip().rstrip("/")
        if not item:
            continue
        if not item.startswith(("http://", "https://")):
            raise ValueError(f"Invalid url {item}")
        parts = urlsplit(item)
        userinfo = None
        if parts.username is not None:
            if source != "URL":
                raise ValueError("basic.auth.user.info configured with userinfo credentials in the URL. "
                                 "Remove userinfo credentials from the url or remove basic.auth.user.info "
                                 "from the configuration")
            userinfo = (unquote(parts.username), unquote(parts.password or ""))
            host = parts.hostname or ""
            netloc = f"[{host}]" if ":" in host else host
            if parts.port is not None:
                netloc += f":{parts.port}"
            item = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
        nodes.append(_Node(item, shared if shared is not None else userinfo))
    if not nodes:
        raise ValueError("Missing required configuration property url")
    return nodes


class SchemaRegistryClient:
    """A Schema Registry client: confluent-kafka's interface, with failover and caches.

    Every method is thread-safe. Every method that talks to the registry blocks on
    HTTP, retrying as the module docstring describes, and raises SchemaRegistryError
    for an error answer or RegistryUnreachable when no node could be reached.
    """

    def __init__(self, conf: dict[str, Any]) -> None:
        unknown = [k for k in conf if k not in _KNOWN_KEYS]
        if unknown:
            raise ValueError(f"Unrecognized properties: {', '.join(unknown)}")
        if conf.get("ssl.key.password") is not None:
            raise ValueError("ssl.key.password is not supported: use an unencrypted key file")
        self._conf = conf
        session = requests.Session()
        adapter = requests.adapters.HTTPAdapter(pool_connections=8, pool_maxsize=32, max_retries=0)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        if conf.get("ssl.ca.location") is not None:
            session.verify = conf["ssl.ca.location"]
        if conf.get("ssl.certificate.location") is not None:
            cert = conf["ssl.certificate.location"]
            key = conf.get("ssl.key.location")
            session.cert = (cert, key) if key else cert
        elif conf.get("ssl.key.location") is not None:
            raise ValueError("ssl.certificate.location required when configuring ssl.key.location")
        if conf.get("proxy") is not None:
            session.proxies = {"http": conf["proxy"], "https": conf["proxy"]}
        max_retries = _number(conf, "max.retries", 3)
        capacity = _number(conf, "cache.capacity", 1000)
        self._transport = _Transport(
            _nodes_from(conf), session,
            timeout=float(_number(conf, "timeout", 10.0) or 10.0),
            max_retries=int(max_retries or 0),
            retries_wait_ms=float(_number(conf, "retries.wait.ms", 1000) or 0),
            retries_max_wait_ms=float(_number(conf, "retries.max.wait.ms", 20000) or 0),
            dead_skip_s=float(_number(conf, "url.dead.skip.ms", 10000) or 0) / 1000.0,
        )
        ttl = _number(conf, "cache.latest.ttl.sec", None)
        self._schema_by_id: dict[int, Schema] = {}
        self._by_subject_schema: dict[tuple[str, Schema, bool], RegisteredSchema] = {}
        self._lookups: dict[tuple[str, Schema, bool, bool], RegisteredSchema] = {}
        self._versions = _BoundedCache(int(capacity or 1000))
        self._latest = _BoundedCache(int(capacity or 1000), ttl)
        self._cache_lock = threading.Lock()
        self._flights = _SingleFlight()
        self._cache = _ConfluentCacheShim()

    # ---- lifecycle --------------------------------------------------------------

    def __enter__(self) -> SchemaRegistryClient:
        return self

    def __exit__(self, *args: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close the pooled connections. Safe to call more than once."""
        self._transport.session.close()

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
            with self._cache_lock:
                self._by_subject_schema[key] = registered
            # A registration may have added a version: the cached latest is stale.
            self._latest.discard_where(lambda k: k == subject_name)
            return registered

        return self._flights.do(("register",) + key, register)

    def get_schema(self, schema_id: int, subject_name: str | None = None, fmt: str | None = None,
                   reference_format: str | None = None) -> Schema:
        """The schema with `schema_id`. Cached forever: an id never names other content."""
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
                with self._cache_lock:
                    self._schema_by_id[schema_id] = schema
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
                with self._cache_lock:
                    self._lookups[key] = registered
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
            with self._cache_lock:
                self._schema_by_id.setdefault(registered.schema_id, registered.schema)
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
        with self._cache_lock:
            for key in [k for k in self._by_subject_schema if k[0] == subject]:
                del self._by_subject_schema[key]
            for key in [k for k in self._lookups if k[0] == subject]:
                del self._lookups[key]
        self._versions.discard_where(lambda k: k[0] == subject)  # type: ignore[index]
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
        with self._cache_lock:
            self._schema_by_id.clear()
            self._by_subject_schema.clear()
            self._lookups.clear()
        self._versions.clear()
        self._latest.clear()
