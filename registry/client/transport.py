"""HTTP to a set of registry nodes: failover, retries with full jitter, dead-node skipping.

    transport = Transport.from_config(ClientConfig.from_conf({"url": "http://sr-1:8081,http://sr-2:8081"}))
    subjects = transport.request("GET", "/subjects")

* **Failover.** A node that refuses connections is skipped for ``url.dead.skip.ms``
  and then tried again; requests stick to the last node that answered, so its pooled
  connection is reused.
* **Retries** with full-jitter exponential backoff on connection errors, 408, 429 and
  every 5xx (which covers 50003/50004 while the registry elects a new leader). A
  retriable failure moves on to the next node; the backoff is slept after each round
  of nodes.
"""
from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import requests
from confluent_kafka.schema_registry.error import SchemaRegistryError

from registry.client.config import Auth, ClientConfig

_ACCEPT = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"
_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_RETRIABLE_STATUS = frozenset({408, 429})


class RegistryUnreachable(requests.ConnectionError):
    """No node answered: every attempt failed to connect or timed out."""


def full_jitter(base_ms: float, max_ms: float, attempt: int) -> float:
    """Seconds to wait before retry `attempt` (0-based): uniform in [0, min(base * 2^attempt, max))."""
    return random.random() * min(base_ms * (2.0 ** attempt), max_ms) / 1000.0


def is_retriable(status: int) -> bool:
    """408, 429 and every 5xx: the same request may succeed later or on another node."""
    return status in _RETRIABLE_STATUS or 500 <= status <= 599


def error_from(response: requests.Response) -> SchemaRegistryError:
    """The registry's error answer as confluent-kafka's SchemaRegistryError (its code and
    message when the body is Confluent's error JSON, else UNKNOWN and the body's start)."""
    try:
        body = orjson.loads(response.content)
        return SchemaRegistryError(response.status_code, int(body["error_code"]), str(body["message"]))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        text = response.content[:500].decode("utf-8", "replace")
        return SchemaRegistryError(response.status_code, SchemaRegistryError.UNKNOWN,
                                   f"Unknown Schema Registry Error: {text}")


@dataclass
class Node:
    """One node and, while it refuses connections, the monotonic time it is skipped until."""

    url: str
    auth: Auth | None
    dead_until: float = 0.0
    # What requests would take from the environment for this URL on every request
    # (proxies and NO_PROXY, REQUESTS_CA_BUNDLE, ~/.netrc), taken once: see Transport.
    settings: dict[str, Any] = field(default_factory=dict)
    netrc: tuple[str, str] | None = None


def session_for(config: ClientConfig) -> requests.Session:
    """A pooled session with the TLS and proxy settings of `config`; retries are ours, not urllib3's."""
    session = requests.Session()
    adapter = requests.adapters.HTTPAdapter(pool_connections=8, pool_maxsize=32, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    if config.ca_location is not None:
        session.verify = config.ca_location
    if config.certificate_location is not None:
        key = config.key_location
        session.cert = (config.certificate_location, key) if key else config.certificate_location
    if config.proxy is not None:
        session.proxies = {"http": config.proxy, "https": config.proxy}
    return session


class Transport:
    """HTTP to a set of registry nodes over one pooled `requests.Session`.

    `request` blocks for at most (max_retries + 1) rounds over the nodes, each HTTP
    attempt bounded by `timeout`, with a jittered backoff sleep between rounds.
    Thread-safe.
    """

    def __init__(self, nodes: list[Node], session: requests.Session, *, timeout: float,
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
        if session.trust_env:
            # requests reads the environment on every request (proxy variables, the CA
            # bundle variables, and ~/.netrc from disk): half of a request's client-side
            # time. Read once per node here; requests then leaves the environment alone.
            for node in nodes:
                node.settings = session.merge_environment_settings(node.url, {}, None, None, None)
                if node.auth is None:
                    node.netrc = requests.utils.get_netrc_auth(node.url)
            session.trust_env = False

    @classmethod
    def from_config(cls, config: ClientConfig) -> Transport:
        return cls([Node(n.url, n.auth) for n in config.nodes], session_for(config),
                   timeout=config.timeout, max_retries=config.max_retries,
                   retries_wait_ms=config.retries_wait_ms, retries_max_wait_ms=config.retries_max_wait_ms,
                   dead_skip_s=config.dead_skip_s)

    def close(self) -> None:
        """Close the pooled connections. Safe to call more than once."""
        self.session.close()

    def order(self) -> list[Node]:
        """Nodes to try, in order: live ones from the preferred node on, then the dead
        ones whose skip period ends soonest, so that a fully dead cluster is still probed."""
        now = self._clock()
        with self._lock:
            start = self._preferred
        rotated = self.nodes[start:] + self.nodes[:start]
        live = [n for n in rotated if n.dead_until <= now]
        dead = sorted((n for n in rotated if n.dead_until > now), key=lambda n: n.dead_until)
        return live + dead

    def _mark_dead(self, node: Node) -> None:
        with self._lock:
            node.dead_until = self._clock() + self.dead_skip_s

    def _mark_alive(self, node: Node) -> None:
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
                                                    headers=headers, auth=node.auth or node.netrc, timeout=self.timeout,
                                                    **node.settings)
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
                    raise error_from(response)
                last_response, last_exc = response, None
            if attempt < self.max_retries:
                self._sleep(full_jitter(self.retries_wait_ms, self.retries_max_wait_ms, attempt))
        if last_response is not None:
            raise error_from(last_response)
        raise RegistryUnreachable(
            f"no schema registry node reachable or answering in time "
            f"({', '.join(n.url for n in self.nodes)}): {last_exc}"
        ) from last_exc
