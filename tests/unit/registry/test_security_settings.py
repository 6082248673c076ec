"""Security settings: listeners, `ssl.*`, `authentication.*` and ZooKeeper's TLS and
SASL, read and refused at start-up with the setting named."""
from __future__ import annotations

import pytest

from registry.settings import ClientAuth, ConfigError, Listener, load_settings
from registry.zookeeper_options import kazoo_options


def settings(**properties: str):
    return load_settings(environ={}, overrides=properties)


def test_http_and_https_listeners_together():
    loaded = settings(**{"listeners": "http://0.0.0.0:8081, https://0.0.0.0:8443",
                         "ssl.keystore.location": "/k.pem"})
    assert loaded.listeners == [Listener("http", "0.0.0.0", 8081), Listener("https", "0.0.0.0", 8443)]
    assert loaded.listener == ("http", "0.0.0.0", 8081), "other nodes reach the inter.instance.protocol one"
    https = settings(**{"listeners": "http://h:8081,https://h:8443", "ssl.keystore.location": "/k.pem",
                        "inter.instance.protocol": "https"})
    assert https.listener == ("https", "h", 8443)


@pytest.mark.parametrize("properties, named", [
    ({"listeners": "https://0.0.0.0:8443"}, "ssl.keystore.location"),
    ({"listeners": "http://a:1,https://b:1", "ssl.keystore.location": "/k"}, "twice"),
    ({"listeners": "ftp://a:1"}, "listeners"),
    ({"ssl.client.authentication": "SOMETIMES"}, "ssl.client.authentication"),
    ({"ssl.enabled.protocols": "TLSv1.1"}, "ssl.enabled.protocols"),
    ({"ssl.keystore.type": "JKS", "ssl.keystore.location": "/k.jks"}, "PKCS12"),
    ({"authentication.method": "DIGEST"}, "authentication.method"),
    ({"authentication.method": "BASIC"}, "authentication.users.file"),
    ({"authentication.method": "BEARER"}, "oauthbearer.jwks.endpoint.url"),
    ({"authentication.method": "CERTIFICATE"}, "ssl.client.authentication"),
    ({"authentication.cache.ttl.ms": "0"}, "authentication.cache.ttl.ms"),
])
def test_unusable_security_settings_are_refused_naming_the_setting(properties: dict[str, str], named: str):
    with pytest.raises(ConfigError, match=named):
        settings(**properties)


def test_tls_settings():
    tls = settings(**{"ssl.keystore.location": "/s.p12", "ssl.keystore.password": "pw",
                      "ssl.truststore.location": "/ca.pem", "ssl.client.auth": "true"}).tls
    assert tls.keystore.type == "PKCS12" and tls.truststore.type == "PEM", "types follow the file names"
    assert tls.key_password == "pw", "the store's password opens the key when ssl.key.password is unset"
    assert tls.client_auth is ClientAuth.REQUIRED, "Confluent's older ssl.client.auth=true"
    assert tls.check_hostname, "node-to-node calls check names by default"
    assert not settings(**{"ssl.endpoint.identification.algorithm": ""}).tls.check_hostname


def test_authentication_settings():
    auth = settings(**{"authentication.method": "basic, bearer", "authentication.users.file": "/u",
                       "oauthbearer.jwks.endpoint.url": "https://idp/jwks", "authentication.roles": "a, b",
                       "oauthbearer.expected.audience": "x,y"}).authentication
    assert auth.methods == {"BASIC", "BEARER"} and auth.roles == {"a", "b"} and auth.audiences == ("x", "y")
    assert auth.skip_paths == {"/health", "/ready"}, "probes stay open by default"
    assert settings(**{"authentication.method": "NONE"}).authentication.methods == frozenset()
    assert settings().authentication.roles is None, "* means any role"


def test_zookeeper_tls_and_sasl_become_kazoo_options():
    options = kazoo_options(settings(**{
        "zookeeper.ssl.client.enable": "true", "zookeeper.ssl.keystore.location": "/c.pem",
        "zookeeper.ssl.truststore.location": "/ca.pem",
        "zookeeper.sasl.jaas.config": 'org.apache.zookeeper.server.auth.DigestLoginModule required '
                                      'username="reg" password="p\\"w";'}).zookeeper_security)
    assert options["use_ssl"] and options["ca"] == "/ca.pem" and options["certfile"] == "/c.pem"
    assert options["check_hostname"] and options["keyfile_password"] == "", "never None: no terminal prompt"
    assert options["sasl_options"] == {"mechanism": "DIGEST-MD5", "username": "reg", "password": 'p"w'}
    assert kazoo_options(settings().zookeeper_security) == {}, "nothing set, plain connections"
    with pytest.raises(ConfigError, match="zookeeper.ssl.client.enable"):
        kazoo_options(settings(**{"zookeeper.ssl.truststore.location": "/ca.pem"}).zookeeper_security)
    with pytest.raises(ConfigError, match="username"):
        kazoo_options(settings(**{"zookeeper.sasl.jaas.config": "Digest required;"}).zookeeper_security)
