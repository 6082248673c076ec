"""The one place that reads configuration.

Confluent's property names and environment convention, so existing deployments carry
over: a Java-style `.properties` file, overridden by `SCHEMA_REGISTRY_<KEY>` variables
(upper case, dots become underscores; a double underscore stands for one underscore).
"""
from __future__ import annotations

import enum
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
    # Security and observability (docs/security.md). Confluent's names
    # where Confluent has them: ssl.*, authentication.*, the listeners' schemes.
    "ssl.keystore.location": "",
    "ssl.keystore.type": "",  # empty: PKCS12 for .p12/.pfx files, else PEM
    "ssl.keystore.password": "",
    "ssl.key.password": "",
    "ssl.truststore.location": "",
    "ssl.truststore.type": "",
    "ssl.truststore.password": "",
    "ssl.client.authentication": "NONE",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "ssl.endpoint.identification.algorithm": "https",
    "ssl.principal.mapping.rules": "DEFAULT",  # Kafka's syntax
    "authentication.method": "NONE",
    "authentication.realm": "SchemaRegistry",
    "authentication.roles": "*",
    "authentication.skip.paths": "/health,/ready",
    "authentication.users.file": "",
    "authentication.cache.ttl.ms": "60000",
    "oauthbearer.jwks.endpoint.url": "",
    "oauthbearer.jwks.endpoint.refresh.ms": "3600000",
    "oauthbearer.expected.issuer": "",
    "oauthbearer.expected.audience": "",
    "oauthbearer.sub.claim.name": "sub",
    "oauthbearer.groups.claim.name": "groups",
    "oauthbearer.clock.skew.seconds": "30",
    "authorization.rules.file": "",
    "inter.instance.secret": "",
    "inter.instance.principals": "",
    # Origins (scheme://host[:port]) whose pages may send changes; `*`: any
    # (Confluent's CORS property; see registry/http/security/cross_site.py).
    "access.control.allow.origin": "",
    "audit.log.file": "",
    "metrics.enabled": "true",
    "group.commit.enable": "",
    "zookeeper.ssl.client.enable": "false",
    "zookeeper.ssl.keystore.location": "",
    "zookeeper.ssl.keystore.password": "",
    "zookeeper.ssl.truststore.location": "",
    "zookeeper.ssl.endpoint.identification.algorithm": "https",
    "zookeeper.sasl.mechanism": "DIGEST-MD5",
    "zookeeper.sasl.jaas.config": "",
}


class ConfigError(ValueError):
    """A setting that cannot be used; the message names it."""


@dataclass(frozen=True)
class Settings:
    properties: dict[str, str] = field(default_factory=lambda: dict(DEFAULTS))

    def get(self, name: str) -> str:
        return self.properties.get(name, DEFAULTS.get(name, ""))

    @property
    def listeners(self) -> list[Listener]:
        """Every listener, in the order given: `http://` and `https://` may be mixed."""
        found: list[Listener] = []
        for item in self.get("listeners").split(","):
            item = item.strip()
            if not item:
                continue
            parts = urlsplit(item if "://" in item else f"http://{item}")
            if parts.scheme not in ("http", "https"):
                raise ConfigError(f"listeners: only http and https are supported, got {item!r}")
            try:
                port = parts.port or 8081
            except ValueError:
                raise ConfigError(f"listeners: bad port in {item!r}") from None
            listener = Listener(parts.scheme, parts.hostname or "0.0.0.0", port)
            if any(other.port == port for other in found):
                raise ConfigError(f"listeners: port {port} is given twice")
            found.append(listener)
        if not found:
            raise ConfigError("listeners: none given")
        if any(item.scheme == "https" for item in found) and not self.get("ssl.keystore.location").strip():
            raise ConfigError("listeners: an https listener needs ssl.keystore.location")
        return found

    @property
    def listener(self) -> tuple[str, str, int]:
        """(scheme, host, port) of the listener other nodes reach this one at: the first
        whose scheme is `inter.instance.protocol`, else the first."""
        listeners = self.listeners
        wanted = self.get("inter.instance.protocol").strip().lower() or "http"
        chosen = next((item for item in listeners if item.scheme == wanted), listeners[0])
        return chosen.scheme, chosen.host, chosen.port

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


    # ---- security and observability -------------------------------------------------

    @property
    def tls(self) -> TlsSettings:
        """The `ssl.*` key material and policy: the https listeners', and the client side
        of node-to-node calls."""
        client_auth = self.get("ssl.client.authentication").strip().upper() or "NONE"
        if self.get("ssl.client.auth").strip().lower() == "true":  # Confluent's older switch
            client_auth = "REQUIRED"
        if client_auth not in ClientAuth.__members__:
            raise ConfigError(f"ssl.client.authentication: expected NONE, REQUESTED or REQUIRED, got {client_auth!r}")
        protocols = tuple(p.strip() for p in self.get("ssl.enabled.protocols").split(",") if p.strip())
        unknown = [p for p in protocols if p not in TLS_PROTOCOLS]
        if unknown or not protocols:
            raise ConfigError(f"ssl.enabled.protocols: expected some of {', '.join(TLS_PROTOCOLS)}, got "
                              f"{self.get('ssl.enabled.protocols')!r}")
        keystore = self.get("ssl.keystore.location").strip()
        truststore = self.get("ssl.truststore.location").strip()
        return TlsSettings(
            keystore=_store(keystore, self.get("ssl.keystore.type"), self.get("ssl.keystore.password"),
                            "ssl.keystore.type"),
            key_password=self.get("ssl.key.password") or self.get("ssl.keystore.password"),
            truststore=_store(truststore, self.get("ssl.truststore.type"), self.get("ssl.truststore.password"),
                              "ssl.truststore.type"),
            client_auth=ClientAuth[client_auth],
            protocols=protocols,
            check_hostname=self.get("ssl.endpoint.identification.algorithm").strip().lower() == "https",
            principal_mapping_rules=self.get("ssl.principal.mapping.rules").strip() or "DEFAULT",
        )

    @property
    def authentication(self) -> AuthenticationSettings:
        methods = frozenset(m.strip().upper() for m in self.get("authentication.method").split(",") if m.strip())
        methods -= {"NONE"}
        unknown = methods - AUTHENTICATION_METHODS
        if unknown:
            raise ConfigError(f"authentication.method: unknown {', '.join(sorted(unknown))}; expected NONE or "
                              f"some of {', '.join(sorted(AUTHENTICATION_METHODS))}")
        users_file = self.get("authentication.users.file").strip()
        if "BASIC" in methods and not users_file:
            raise ConfigError("authentication.method=BASIC needs authentication.users.file")
        jwks = self.get("oauthbearer.jwks.endpoint.url").strip()
        if "BEARER" in methods and not jwks:
            raise ConfigError("authentication.method=BEARER needs oauthbearer.jwks.endpoint.url")
        if "CERTIFICATE" in methods and self.tls.client_auth is ClientAuth.NONE:
            raise ConfigError("authentication.method=CERTIFICATE needs ssl.client.authentication "
                              "REQUESTED or REQUIRED (and an https listener)")
        roles = frozenset(r.strip() for r in self.get("authentication.roles").split(",") if r.strip())
        return AuthenticationSettings(
            methods=methods,
            realm=self.get("authentication.realm"),
            roles=None if not roles or "*" in roles else roles,
            skip_paths=frozenset(p.strip() for p in self.get("authentication.skip.paths").split(",") if p.strip()),
            users_file=users_file,
            cache_ttl_seconds=self._positive_int("authentication.cache.ttl.ms") / 1000.0,
            jwks=jwks,
            jwks_refresh_seconds=self._positive_int("oauthbearer.jwks.endpoint.refresh.ms") / 1000.0,
            issuer=self.get("oauthbearer.expected.issuer").strip(),
            audiences=tuple(a.strip() for a in self.get("oauthbearer.expected.audience").split(",") if a.strip()),
            subject_claim=self.get("oauthbearer.sub.claim.name").strip() or "sub",
            groups_claim=self.get("oauthbearer.groups.claim.name").strip(),
            clock_skew_seconds=self._non_negative_int("oauthbearer.clock.skew.seconds"),
        )

    @property
    def authorization_rules_file(self) -> str:
        """`authorization.rules.file`: per-principal rules; empty means every
        authenticated caller may do everything."""
        return self.get("authorization.rules.file").strip()

    @property
    def inter_instance_secret(self) -> bytes:
        """The secret nodes sign forwarded identities with; empty: none."""
        return self.get("inter.instance.secret").encode()

    @property
    def inter_instance_principals(self) -> frozenset[str]:
        """Certificate principals of the cluster's own nodes (mTLS between nodes)."""
        return frozenset(p.strip() for p in self.get("inter.instance.principals").split(";") if p.strip())

    @property
    def allowed_origins(self) -> frozenset[str]:
        """`access.control.allow.origin`: the other origins whose pages may send changes."""
        return frozenset(o.strip() for o in self.get("access.control.allow.origin").split(",") if o.strip())

    @property
    def audit_log_file(self) -> str:
        """Where audit lines go: a path, `stderr`, or empty for nowhere."""
        return self.get("audit.log.file").strip()

    @property
    def metrics_enabled(self) -> bool:
        return self.get("metrics.enabled").strip().lower() != "false"

    @property
    def group_commit(self) -> bool:
        """Whether concurrent registrations share appends (store.writer's group commit):
        one SQLite transaction and fsync, or one produce round trip, per batch, and the
        registration waits for it on the event loop. On by default for both stores;
        `false` makes each registration take a thread and append alone."""
        value = self.get("group.commit.enable").strip().lower()
        if value in ("true", "false"):
            return value == "true"
        if value:
            raise ConfigError(f"group.commit.enable must be true or false, not {value!r}")
        return True

    @property
    def zookeeper_security(self) -> ZooKeeperSecurity:
        keystore = self.get("zookeeper.ssl.keystore.location").strip()
        return ZooKeeperSecurity(
            use_ssl=self.get("zookeeper.ssl.client.enable").strip().lower() == "true",
            keystore=keystore,
            keystore_password=self.get("zookeeper.ssl.keystore.password"),
            truststore=self.get("zookeeper.ssl.truststore.location").strip(),
            check_hostname=self.get("zookeeper.ssl.endpoint.identification.algorithm").strip().lower() == "https",
            sasl_mechanism=self.get("zookeeper.sasl.mechanism").strip().upper() or "DIGEST-MD5",
            sasl_jaas_config=self.get("zookeeper.sasl.jaas.config").strip(),
        )

    def _non_negative_int(self, name: str) -> int:
        try:
            value = int(self.get(name))
        except ValueError:
            raise ConfigError(f"{name}: not an integer: {self.get(name)!r}") from None
        if value < 0:
            raise ConfigError(f"{name}: must not be negative")
        return value


@dataclass(frozen=True)
class Listener:
    scheme: str  # http or https
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"


class ClientAuth(enum.Enum):
    """`ssl.client.authentication`: whether an https listener asks for a client certificate."""

    NONE = "NONE"
    REQUESTED = "REQUESTED"  # asked for; one that is sent must verify
    REQUIRED = "REQUIRED"  # no certificate, no connection


TLS_PROTOCOLS = ("TLSv1.2", "TLSv1.3")
AUTHENTICATION_METHODS = frozenset({"BASIC", "BEARER", "CERTIFICATE"})


@dataclass(frozen=True)
class KeyStore:
    location: str  # empty: none
    type: str  # PEM or PKCS12
    password: str = field(repr=False, default="")


@dataclass(frozen=True)
class TlsSettings:
    keystore: KeyStore
    key_password: str = field(repr=False)
    truststore: KeyStore
    client_auth: ClientAuth
    protocols: tuple[str, ...]
    check_hostname: bool  # node-to-node calls check the leader's name against its certificate
    principal_mapping_rules: str


@dataclass(frozen=True)
class AuthenticationSettings:
    methods: frozenset[str]  # empty: no authentication, every caller is ANONYMOUS
    realm: str
    roles: frozenset[str] | None  # None: any role
    skip_paths: frozenset[str]
    users_file: str
    cache_ttl_seconds: float
    jwks: str  # a URL or a file path
    jwks_refresh_seconds: float
    issuer: str
    audiences: tuple[str, ...]
    subject_claim: str
    groups_claim: str
    clock_skew_seconds: int


@dataclass(frozen=True)
class ZooKeeperSecurity:
    use_ssl: bool
    keystore: str  # PEM: certificate chain and key
    keystore_password: str = field(repr=False)
    truststore: str  # PEM CA certificates
    check_hostname: bool
    sasl_mechanism: str
    sasl_jaas_config: str = field(repr=False)


def _store(location: str, kind: str, password: str, name: str) -> KeyStore:
    kind = kind.strip().upper()
    if not kind:
        kind = "PKCS12" if location.lower().endswith((".p12", ".pfx")) else "PEM"
    if kind == "JKS":
        raise ConfigError(f"{name}: JKS stores cannot be read here; convert with "
                          "`keytool -importkeystore -deststoretype PKCS12` and use PKCS12")
    if kind not in ("PEM", "PKCS12"):
        raise ConfigError(f"{name}: expected PEM or PKCS12, got {kind!r}")
    return KeyStore(location, kind, password)


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
         settings.election_session_timeout_ms, settings.tls, settings.authentication)
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
    backslashes continues; the last of duplicate keys wins (tests/unit/registry/test_settings.py
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
