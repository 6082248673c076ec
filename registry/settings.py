"""The one place that reads configuration.

Confluent's property names and environment convention, so existing deployments carry
over: a Java-style `.properties` file, overridden by `SCHEMA_REGISTRY_<KEY>` variables
(upper case, dots become underscores; a double underscore stands for one underscore).
"""
from __future__ import annotations

import os
import socket
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from jproperties import ParseError, Properties

from registry.compatibility import CompatibilityLevel
from registry.modes import Mode

ENV_PREFIX = "SCHEMA_REGISTRY_"

DEFAULTS: dict[str, str] = {
    "listeners": "http://0.0.0.0:8081",
    "host.name": "",
    "schema.compatibility.level": "backward",
    "mode": "READWRITE",
    "kafkastore.bootstrap.servers": "",
    "kafkastore.topic": "_schemas",
    "kafkastore.topic.replication.factor": "3",
    "kafkastore.timeout.ms": "10000",
    # Empty: follows kafkastore.topic (see Settings.group_id).
    "schema.registry.group.id": "",
    "leader.eligibility": "true",
    "inter.instance.protocol": "http",
    # Our additions, in the same style.
    "leader.election.backend": "",  # static, zookeeper or kafka; empty: kafka with a Kafka store
    "leader.election.zookeeper.connect": "",
    "leader.election.zookeeper.root": "",  # empty: follows kafkastore.topic
    "leader.election.session.timeout.ms": "10000",
    "embedded.store.path": "./data",
    "max.request.bytes": str(16 * 1024 * 1024),
    "max.inflight.request.bytes": str(64 * 1024 * 1024),
    "request.body.timeout.ms": "30000",
    "server.threads": "8",
}


class ConfigError(ValueError):
    """A setting that cannot be used; the message names it."""


@dataclass(frozen=True)
class Settings:
    properties: dict[str, str] = field(default_factory=lambda: dict(DEFAULTS))

    def get(self, name: str) -> str:
        return self.properties.get(name, DEFAULTS.get(name, ""))

    @property
    def listener(self) -> tuple[str, str, int]:
        """(scheme, host, port) of the first listener."""
        first = self.get("listeners").split(",")[0].strip()
        parts = urlsplit(first if "://" in first else f"http://{first}")
        if parts.scheme != "http":
            raise ConfigError(f"listeners: only http is supported, got {first!r}")
        try:
            port = parts.port or 8081
        except ValueError:
            raise ConfigError(f"listeners: bad port in {first!r}") from None
        return parts.scheme, parts.hostname or "0.0.0.0", port

    @property
    def compatibility_level(self) -> str:
        value = self.get("schema.compatibility.level").upper()
        if value not in CompatibilityLevel.__members__:
            raise ConfigError(f"schema.compatibility.level: unknown level {value!r}")
        return value

    @property
    def mode(self) -> str:
        value = self.get("mode").upper()
        if value not in Mode.__members__:
            raise ConfigError(f"mode: unknown mode {value!r}")
        return value

    @property
    def kafka_bootstrap_servers(self) -> str:
        return self.get("kafkastore.bootstrap.servers").strip()

    @property
    def data_dir(self) -> str:
        return self.get("embedded.store.path")

    @property
    def store_timeout_seconds(self) -> float:
        return self._positive_int("kafkastore.timeout.ms") / 1000.0

    @property
    def max_request_bytes(self) -> int:
        return self._positive_int("max.request.bytes")

    @property
    def max_inflight_request_bytes(self) -> int:
        return self._positive_int("max.inflight.request.bytes")

    @property
    def request_body_timeout_seconds(self) -> float:
        return self._positive_int("request.body.timeout.ms") / 1000.0

    @property
    def server_threads(self) -> int:
        return self._positive_int("server.threads")

    @property
    def election_backend(self) -> str:
        """static, zookeeper or kafka. Unset: zookeeper if a ZooKeeper is named (as
        Confluent did with `kafkastore.connection.url`), kafka with a Kafka store, else static."""
        value = self.get("leader.election.backend").strip().lower()
        if not value:
            if self.zookeeper_connect:
                return "zookeeper"
            return "kafka" if self.kafka_bootstrap_servers else "static"
        if value not in ("static", "zookeeper", "kafka"):
            raise ConfigError(f"leader.election.backend: unknown backend {value!r}")
        if value == "zookeeper" and not self.zookeeper_connect:
            raise ConfigError("leader.election.backend=zookeeper needs leader.election.zookeeper.connect")
        if value == "kafka" and not self.kafka_bootstrap_servers:
            raise ConfigError("leader.election.backend=kafka needs kafkastore.bootstrap.servers")
        return value

    @property
    def zookeeper_connect(self) -> str:
        return (self.get("leader.election.zookeeper.connect") or self.get("kafkastore.connection.url")).strip()

    @property
    def group_id(self) -> str:
        """`schema.registry.group.id`; unset, it follows the topic (`schema-registry` for
        `_schemas`, Confluent's default, else `schema-registry-<topic>`), so that two
        registries on two topics never share an election by default."""
        configured = self.get("schema.registry.group.id").strip()
        if configured:
            return configured
        topic = self.get("kafkastore.topic")
        return "schema-registry" if topic == "_schemas" else f"schema-registry-{topic}"

    @property
    def zookeeper_root(self) -> str:
        """Where the ZooKeeper elector keeps its leader znode; unset, `/<group id>`."""
        configured = self.get("leader.election.zookeeper.root").strip()
        return configured or f"/{self.group_id}"

    @property
    def leader_eligible(self) -> bool:
        return self.get("leader.eligibility").strip().lower() != "false"

    @property
    def election_session_timeout_ms(self) -> int:
        return self._positive_int("leader.election.session.timeout.ms")

    @property
    def advertised_host(self) -> str:
        """The host other nodes reach this one at: `host.name`, else the listener's host."""
        configured = self.get("host.name").strip()
        if configured:
            return configured
        host = self.listener[1]
        return socket.getfqdn() if host in ("0.0.0.0", "::", "") else host

    def _positive_int(self, name: str) -> int:
        try:
            value = int(self.get(name))
        except ValueError:
            raise ConfigError(f"{name}: not an integer: {self.get(name)!r}") from None
        if value <= 0:
            raise ConfigError(f"{name}: must be positive")
        return value

    def prefixed(self, prefix: str) -> dict[str, str]:
        """Every property under `prefix`, with the prefix removed (e.g. kafkastore.*)."""
        return {k[len(prefix):]: v for k, v in self.properties.items() if k.startswith(prefix)}


def load_settings(path: str | None = None, environ: Mapping[str, str] | None = None,
                  overrides: Mapping[str, str] | None = None) -> Settings:
    """Defaults, then the properties file at `path`, then the environment, then `overrides`."""
    properties = dict(DEFAULTS)
    if path:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from None
        properties.update(parse_properties(data, source=path))
    env = os.environ if environ is None else environ
    for name, value in env.items():
        if name.startswith(ENV_PREFIX) and len(name) > len(ENV_PREFIX):
            properties[env_to_property(name)] = value
    properties.update(overrides or {})
    settings = Settings(properties)
    # Fail at start-up, not on the first request.
    _ = (settings.listener, settings.compatibility_level, settings.mode, settings.store_timeout_seconds,
         settings.max_request_bytes, settings.max_inflight_request_bytes,
         settings.request_body_timeout_seconds, settings.server_threads, settings.election_backend,
         settings.election_session_timeout_ms)
    return settings


def env_to_property(name: str) -> str:
    """SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS -> kafkastore.bootstrap.servers."""
    body = name[len(ENV_PREFIX):].lower()
    return ".".join(part.replace("\0", "_") for part in body.replace("__", "\0").split("_"))


def parse_properties(data: bytes, source: str = "properties") -> dict[str, str]:
    """The key/value pairs of a `.properties` file, read exactly as Confluent reads its
    configuration: ``java.util.Properties.load(InputStream)``.

    That decodes the bytes as ISO-8859-1 (one byte, one character); other characters
    belong in ``\\uXXXX`` escapes. ASCII, and so every usual configuration, reads the
    same in any encoding; raw UTF-8 bytes read as Java reads them (``é`` as ``Ã©``),
    and no file fails to decode. Keys end at the first unescaped ``=``, ``:`` or
    whitespace; ``#``/``!`` lines are comments; a line ending in an odd number of
    backslashes continues; the last of duplicate keys wins (tests/unit/test_settings.py
    holds Java's own answers).

    Raises ConfigError, naming ``source``, on a malformed ``\\uXXXX`` escape (Java
    refuses those too, but three it refuses are read here as the digits they hold: a
    ``+``, a space or an ``_`` among them, which Python's ``int()`` allows) and on an
    unpaired UTF-16 surrogate escape (Java keeps one; no usable setting holds one).
    Linear in the size of ``data``.
    """
    parser = _JavaProperties()
    try:
        parser.load(data, encoding="iso-8859-1")
    except ParseError as exc:
        raise ConfigError(f"{source}, line {exc.line_number}: {exc.message or _MALFORMED}") from None
    except struct.error:  # jproperties' answer to a signed escape such as \u-0e9
        raise ConfigError(f"{source}: {_MALFORMED}") from None
    return dict(parser.properties)


_MALFORMED = "malformed \\uXXXX escape"


class _JavaProperties(Properties):
    """jproperties' parser without its one extension to the format.

    jproperties reads a ``#:``/``!:`` comment as a ``key=value`` of metadata for the
    next property, and refuses one with no key (``#:`` alone); ``java.util.Properties``
    skips every comment line, whatever follows the marker.
    """

    def _parse_comment(self) -> None:
        self._getc()  # the comment marker
        self._skip_natural_line()
