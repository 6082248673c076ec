"""kazoo's connection options from the ZooKeeper security settings: TLS and SASL.

    ZooKeeperElector(identity, hosts, client_options=kazoo_options(settings.zookeeper_security))

Kafka's property names for a ZooKeeper client's TLS, as Confluent users set them:
`zookeeper.ssl.client.enable`, `zookeeper.ssl.keystore.location` (a PEM file with the
certificate and its key: the client certificate, when the server asks for one),
`zookeeper.ssl.keystore.password` (the key's), `zookeeper.ssl.truststore.location` (PEM
CA certificates; the system's when unset) and
`zookeeper.ssl.endpoint.identification.algorithm` (`https`, the default, checks the
server's name against its certificate; empty does not). SASL: Java clients read a JAAS
`Client` section; here `zookeeper.sasl.jaas.config` holds that section's module line,
`org.apache.zookeeper.server.auth.DigestLoginModule required username="..." password="...";`,
with `zookeeper.sasl.mechanism` DIGEST-MD5 (the default, through pure-sasl).
"""
from __future__ import annotations

import re
from typing import Any

from registry.settings import ConfigError, ZooKeeperSecurity

_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def kazoo_options(security: ZooKeeperSecurity) -> dict[str, Any]:
    """Keyword arguments for `KazooClient`. Raises ConfigError for unusable settings."""
    options: dict[str, Any] = {}
    if security.use_ssl:
        options.update(use_ssl=True, verify_certs=True, check_hostname=security.check_hostname,
                       ca=security.truststore or None,
                       # Never None: OpenSSL would prompt on the terminal for an encrypted key.
                       keyfile_password=security.keystore_password)
        if security.keystore:
            options.update(certfile=security.keystore, keyfile=security.keystore)
    elif security.keystore or security.truststore:
        raise ConfigError("zookeeper.ssl.keystore/truststore.location are set but zookeeper.ssl.client.enable "
                          "is not true")
    if security.sasl_jaas_config:
        found = {k: v.replace('\\"', '"').replace("\\\\", "\\")
                 for k, v in _JAAS_OPTION.findall(security.sasl_jaas_config)}
        if "username" not in found or "password" not in found:
            raise ConfigError("zookeeper.sasl.jaas.config: expected username=\"...\" password=\"...\"")
        options["sasl_options"] = {"mechanism": security.sasl_mechanism, "username": found["username"],
                                   "password": found["password"]}
    return options
