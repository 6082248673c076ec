"""Who a node is, as far as the election is concerned: where its HTTP API listens.

The leader publishes its identity through the election backend (a ZooKeeper node's data,
a Kafka group member's ``client.id``) so that followers know where to forward writes.
The JSON form follows Confluent Schema Registry's ``SchemaRegistryIdentity``::

    >>> LeaderIdentity("http", "sr-1", 8081).to_json()
    '{"host":"sr-1","port":8081,"scheme":"http","version":1}'

A ``node_id``, when set, is added as ``"node_id"``, and a ``store``, when set, as
``"store"``: the log the node serves (say ``kafka:<cluster id>:_schemas``), so that a
node elected in a group shared by two clusters by mistake is never followed by nodes
of the other one. Decoding ignores fields it does not know (Confluent's
``master_eligibility`` among them), so identities written by other implementations of
the same format are read without fuss.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urlsplit

IDENTITY_VERSION = 1
_SCHEMES = ("http", "https")


@dataclass(frozen=True, slots=True)
class LeaderIdentity:
    """The address of a node's HTTP API, plus an optional id naming the node.

    Two identities are equal when all fields are: two nodes behind one address can be
    told apart by ``node_id``. Construction raises ValueError for an unknown scheme, an
    empty host or a port outside 1..65535.
    """

    scheme: str
    host: str
    port: int
    node_id: str | None = None
    store: str | None = None

    def __post_init__(self) -> None:
        if self.scheme not in _SCHEMES:
            raise ValueError(f"identity scheme must be one of {_SCHEMES}, not {self.scheme!r}")
        if not isinstance(self.host, str) or not self.host:
            raise ValueError(f"identity host must be a non-empty string, not {self.host!r}")
        # bool is an int subclass; a JSON `true` is not a port.
        if not isinstance(self.port, int) or isinstance(self.port, bool):
            raise ValueError(f"identity port must be an integer, not {self.port!r}")
        if not 0 < self.port < 65536:
            raise ValueError(f"identity port must be in 1..65535, not {self.port}")
        if self.node_id is not None and (not isinstance(self.node_id, str) or not self.node_id):
            raise ValueError(f"identity node_id must be a non-empty string or None, not {self.node_id!r}")
        if self.store is not None and (not isinstance(self.store, str) or not self.store):
            raise ValueError(f"identity store must be a non-empty string or None, not {self.store!r}")

    @property
    def url(self) -> str:
        """Base URL of the node's API, e.g. ``http://sr-1:8081`` (IPv6 hosts bracketed)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    @classmethod
    def from_url(cls, url: str, node_id: str | None = None) -> LeaderIdentity:
        """Parse a listener URL such as ``http://0.0.0.0:8081`` or ``https://[::1]:8443``.

        The port defaults to 80/443 by scheme. Raises ValueError for anything else.
        """
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError as e:  # non-numeric or out-of-range port
            raise ValueError(f"bad port in listener URL {url!r}") from e
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError(f"listener URL {url!r} must not have a path, query or fragment")
        if port is None:
            port = 443 if parts.scheme == "https" else 80
        return cls(parts.scheme, parts.hostname or "", port, node_id)

    def to_json(self) -> str:
        """Compact JSON with keys in the order Confluent's registry writes them."""
        doc: dict[str, object] = {
            "host": self.host,
            "port": self.port,
            "scheme": self.scheme,
            "version": IDENTITY_VERSION,
        }
        if self.node_id is not None:
            doc["node_id"] = self.node_id
        if self.store is not None:
            doc["store"] = self.store
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> LeaderIdentity:
        """Decode ``to_json``'s form; unknown keys are ignored.

        Raises ValueError if the text is not a JSON object, lacks host or port, has a
        version other than 1 or holds values the constructor rejects. A missing scheme
        means ``http``, as in Confluent's older identities.
        """
        try:
            doc = json.loads(text)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"leader identity is not JSON: {text!r}") from e
        if not isinstance(doc, dict):
            raise ValueError(f"leader identity must be a JSON object: {text!r}")
        version = doc.get("version", IDENTITY_VERSION)
        if type(version) is not int or version != IDENTITY_VERSION:
            raise ValueError(f"unsupported leader identity version {version!r}: {text!r}")
        if "host" not in doc or "port" not in doc:
            raise ValueError(f"leader identity lacks host or port: {text!r}")
        return cls(doc.get("scheme", "http"), doc["host"], doc["port"], doc.get("node_id"), doc.get("store"))

    def __str__(self) -> str:
        return self.url if self.node_id is None else f"{self.url} ({self.node_id})"
