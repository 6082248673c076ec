"""Confluent's `kafkastore.*` properties, read into a `KafkaLogConfig` for librdkafka.

Confluent Schema Registry hands every `kafkastore.*` property, prefix stripped, to its
Java Kafka clients. We do the same for librdkafka, which shares most names with the
Java client. The exceptions are these:

| `kafkastore.` property | what we do |
|---|---|
| `bootstrap.servers`, `topic`, `topic.replication.factor`, `timeout.ms`, `init.timeout.ms`, `topic.skip.validation` | read by the log itself (see `KafkaLogConfig`) |
| `topic.min.insync.replicas` (ours) | `min.insync.replicas` of a topic we create |
| `group.id`, `checkpoint.*`, `write.max.retries`, `update.handlers`, `connection.url`, `zk.*` | ignored: Confluent internals with no meaning here |
| `security.protocol` | passed, lower-cased (`SASL_SSL` -> `sasl_ssl`) |
| `sasl.jaas.config` | parsed: Plain/Scram `username`/`password` -> `sasl.username`/`sasl.password`; Krb5 `keyTab`/`principal` -> `sasl.kerberos.keytab`/`sasl.kerberos.principal`; OAuthBearer `clientId`/`clientSecret`/`scope` -> `sasl.oauthbearer.client.id`/`.client.secret`/`.scope` |
| `sasl.oauthbearer.token.endpoint.url` | passed, and sets `sasl.oauthbearer.method=oidc` |
| `ssl.truststore.location` with `ssl.truststore.type=PEM` | `ssl.ca.location` |
| `ssl.truststore.certificates` | `ssl.ca.pem` |
| `ssl.truststore.location` of a JKS or PKCS12 truststore | refused: librdkafka reads CA certificates as PEM only |
| `ssl.truststore.password`, `ssl.truststore.type` | consumed by the above |
| `ssl.keystore.location`/`.password` with `ssl.keystore.type=PKCS12` | passed (librdkafka reads PKCS#12 keystores) |
| `ssl.keystore.location` with `ssl.keystore.type=PEM` | `ssl.certificate.location` and `ssl.key.location` |
| `ssl.keystore.certificate.chain`, `ssl.keystore.key` | `ssl.certificate.pem`, `ssl.key.pem` |
| a JKS keystore | refused: convert it to PKCS12 |
| `ssl.endpoint.identification.algorithm` | passed; the Java "" (off) becomes `none` |
| `ssl.enabled.protocols`, `ssl.protocol`, `ssl.provider`, `ssl.keymanager.algorithm`, `ssl.trustmanager.algorithm`, `ssl.secure.random.implementation`, `ssl.engine.factory.class`, `sasl.login.*`, `sasl.client.callback.handler.class`, `sasl.kerberos.ticket.renew.*` | ignored with a warning: JVM-only |
| anything else (`ssl.ca.location`, `sasl.mechanism`, `sasl.username`, `client.id`, ...) | passed as is; librdkafka refuses unknown names at start-up, and the error names the property |
"""
from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from store.log import LogMisconfigured

log = logging.getLogger(__name__)

# Read by KafkaLogConfig itself, never handed to librdkafka.
_OWN = frozenset({
    "bootstrap.servers", "topic", "topic.replication.factor", "topic.min.insync.replicas",
    "timeout.ms", "init.timeout.ms", "topic.skip.validation",
})
_CONFLUENT_INTERNAL = ("group.id", "checkpoint.", "write.max.retries", "update.handlers",
                       "connection.url", "zk.")
_JVM_ONLY = ("ssl.enabled.protocols", "ssl.protocol", "ssl.provider", "ssl.keymanager.algorithm",
             "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
             "ssl.engine.factory.class", "sasl.login.", "sasl.client.callback.handler.class",
             "sasl.kerberos.ticket.renew.")
_TRUSTSTORE_AND_KEYSTORE = frozenset({
    "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type",
    "ssl.truststore.certificates", "ssl.keystore.location", "ssl.keystore.password",
    "ssl.keystore.type", "ssl.keystore.certificate.chain", "ssl.keystore.key",
})
_JAAS_OPTIONS = {
    "PlainLoginModule": {"username": "sasl.username", "password": "sasl.password"},
    "ScramLoginModule": {"username": "sasl.username", "password": "sasl.password"},
    "Krb5LoginModule": {"keyTab": "sasl.kerberos.keytab", "principal": "sasl.kerberos.principal"},
    "OAuthBearerLoginModule": {"clientId": "sasl.oauthbearer.client.id",
                               "clientSecret": "sasl.oauthbearer.client.secret",
                               "scope": "sasl.oauthbearer.scope"},
}
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class KafkaLogConfig:
    """Everything a `KafkaLog` needs. `client` holds librdkafka properties shared by its
    producer, consumer and admin client (bootstrap servers and security)."""

    bootstrap_servers: str
    topic: str = "_schemas"
    replication_factor: int = 3
    min_insync_replicas: int | None = None
    timeout: float = 10.0  # seconds: one append, one end-offset query
    init_timeout: float = 60.0  # seconds: reaching Kafka and checking the topic at start-up
    skip_validation: bool = False
    client: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_kafkastore(cls, properties: Mapping[str, str]) -> KafkaLogConfig:
        """Read `kafkastore.*` properties given without their prefix.

        Raises LogMisconfigured for a value that cannot be used (see the module table).
        """
        servers = properties.get("bootstrap.servers", "").strip()
        if not servers:
            raise LogMisconfigured("kafkastore.bootstrap.servers is not set")
        # Confluent accepts PLAINTEXT://host:port; librdkafka wants host:port.
        servers = ",".join(s.strip().split("://", 1)[-1] for s in servers.split(",") if s.strip())
        min_isr = properties.get("topic.min.insync.replicas", "").strip()
        return cls(
            bootstrap_servers=servers,
            topic=properties.get("topic", "_schemas").strip() or "_schemas",
            replication_factor=_positive(properties, "topic.replication.factor", 3),
            min_insync_replicas=_positive(properties, "topic.min.insync.replicas", 1) if min_isr else None,
            timeout=_positive(properties, "timeout.ms", 10_000) / 1000.0,
            init_timeout=_positive(properties, "init.timeout.ms", 60_000) / 1000.0,
            skip_validation=properties.get("topic.skip.validation", "false").strip().lower() == "true",
            client={"bootstrap.servers": servers, **client_properties(properties)},
        )


def client_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """librdkafka properties for `kafkastore.*` properties given without their prefix,
    translated as the module table says. Raises LogMisconfigured."""
    out: dict[str, str] = {}
    for name, value in properties.items():
        if name in _OWN or name in _TRUSTSTORE_AND_KEYSTORE or name == "sasl.jaas.config":
            continue
        if name.startswith(_CONFLUENT_INTERNAL):
            continue
        if name.startswith(_JVM_ONLY):
            log.warning("kafkastore.%s is a JVM-only setting; librdkafka has no equivalent, ignored", name)
            continue
        if name == "security.protocol":
            value = value.strip().lower()
        elif name == "ssl.endpoint.identification.algorithm" and not value.strip():
            value = "none"
        elif name == "sasl.oauthbearer.token.endpoint.url":
            out.setdefault("sasl.oauthbearer.method", "oidc")
        out[name] = value
    _translate_stores(properties, out)
    if properties.get("sasl.jaas.config"):
        for name, value in _jaas(properties["sasl.jaas.config"]).items():
            out.setdefault(name, value)  # an explicit librdkafka property wins
    return out


def _translate_stores(properties: Mapping[str, str], out: dict[str, str]) -> None:
    trust_type = properties.get("ssl.truststore.type", "JKS").strip().upper()
    if properties.get("ssl.truststore.location"):
        if trust_type != "PEM":
            raise LogMisconfigured(
                f"kafkastore.ssl.truststore.location: librdkafka cannot read a {trust_type} truststore; "
                "export its CA certificates to a PEM file and set kafkastore.ssl.truststore.type=PEM "
                "(or kafkastore.ssl.ca.location)")
        out["ssl.ca.location"] = properties["ssl.truststore.location"]
    if properties.get("ssl.truststore.certificates"):
        out["ssl.ca.pem"] = properties["ssl.truststore.certificates"]
    key_type = properties.get("ssl.keystore.type", "JKS").strip().upper()
    if properties.get("ssl.keystore.location"):
        location = properties["ssl.keystore.location"]
        if key_type == "PKCS12":
            out["ssl.keystore.location"] = location
            if properties.get("ssl.keystore.password"):
                out["ssl.keystore.password"] = properties["ssl.keystore.password"]
        elif key_type == "PEM":
            out["ssl.certificate.location"] = location
            out["ssl.key.location"] = location
        else:
            raise LogMisconfigured(
                f"kafkastore.ssl.keystore.location: librdkafka cannot read a {key_type} keystore; "
                "convert it to PKCS12 and set kafkastore.ssl.keystore.type=PKCS12")
    if properties.get("ssl.keystore.certificate.chain"):
        out["ssl.certificate.pem"] = properties["ssl.keystore.certificate.chain"]
    if properties.get("ssl.keystore.key"):
        out["ssl.key.pem"] = properties["ssl.keystore.key"]


def _jaas(text: str) -> dict[str, str]:
    """librdkafka properties from a Java JAAS line such as
    `...PlainLoginModule required username="u" password="p";`."""
    module = next((m for m in _JAAS_OPTIONS if m in text), None)
    if module is None:
        raise LogMisconfigured(
            "kafkastore.sasl.jaas.config: unsupported login module; use librdkafka's sasl.* "
            "properties under kafkastore. instead")
    options = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _JAAS_OPTION.findall(text)}
    return {target: options[source] for source, target in _JAAS_OPTIONS[module].items() if source in options}


def _positive(properties: Mapping[str, str], name: str, default: int) -> int:
    raw = properties.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise LogMisconfigured(f"kafkastore.{name}: not an integer: {raw!r}") from None
    if value <= 0:
        raise LogMisconfigured(f"kafkastore.{name}: must be positive")
    return value
