"""The store and the election over secured connections, against real servers: a Kafka
broker with a SASL_SSL listener (PLAIN over TLS), and a ZooKeeper that serves TLS only
to certificate holders and requires SASL (DIGEST-MD5) of every session. A registry
process is configured with Confluent's `kafkastore.*` and Kafka's `zookeeper.ssl.*`
names and must register, read and elect through them; wrong credentials are refused.
"""
from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from kazoo.client import KazooClient

import infra
from registry.settings import load_settings
from registry.zookeeper_options import kazoo_options
from tests.api.support import CLI, RegistryFactory, free_port, wait_until
from tests.pki import Pki

pytestmark = pytest.mark.integration

SCHEMA = json.dumps({"type": "record", "name": "Secure", "fields": [{"name": "a", "type": "int"}]},
                    separators=(",", ":"))
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"{}\" password=\"{}\";"
DIGEST = "org.apache.zookeeper.server.auth.DigestLoginModule required username=\"{}\" password=\"{}\";"


@pytest.fixture
def start_registry(tmp_path: Path) -> Iterator[RegistryFactory]:
    """Registry processes of the test's own; every one killed at the end."""
    factory = RegistryFactory(tmp_path)
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def secure_kafka(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[infra.KafkaServer]:
    if not infra.jars_ready():
        pytest.fail("Kafka jars are missing: run `make infra-fetch`", pytrace=False)
    broker = pki.issue("broker", hosts=("127.0.0.1", "localhost"))
    server = infra.KafkaServer(tmp_path_factory.mktemp("kafka-sasl-ssl"), extra_listeners={"SASL_SSL": "SASL_SSL"},
                               extra_config={
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config":
            "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"broker\" "
            "password=\"broker-pw\" user_broker=\"broker-pw\" user_registry=\"registry-pw\";",
        "listener.name.sasl_ssl.ssl.keystore.type": "PEM",
        "listener.name.sasl_ssl.ssl.keystore.location": str(broker.pem_bundle()),
    })
    try:
        server.start()
        yield server
    finally:
        server.stop(timeout=15)


def kafka_env(server: infra.KafkaServer, pki: Pki, password: str = "registry-pw") -> dict[str, str]:
    return {
        "SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS": f"SASL_SSL://127.0.0.1:{server.listener_port('SASL_SSL')}",
        "SCHEMA_REGISTRY_KAFKASTORE_SECURITY_PROTOCOL": "SASL_SSL",
        "SCHEMA_REGISTRY_KAFKASTORE_SASL_MECHANISM": "PLAIN",
        "SCHEMA_REGISTRY_KAFKASTORE_SASL_JAAS_CONFIG": PLAIN.format("registry", password),
        "SCHEMA_REGISTRY_KAFKASTORE_SSL_TRUSTSTORE_LOCATION": str(pki.ca_pem),
        "SCHEMA_REGISTRY_KAFKASTORE_SSL_TRUSTSTORE_TYPE": "PEM",
        "SCHEMA_REGISTRY_KAFKASTORE_TOPIC": f"_schemas_sasl_{free_port()}",
        "SCHEMA_REGISTRY_KAFKASTORE_TOPIC_REPLICATION_FACTOR": "1",
        "SCHEMA_REGISTRY_KAFKASTORE_INIT_TIMEOUT_MS": "10000",
    }


def test_a_registry_stores_and_elects_through_a_sasl_ssl_listener(secure_kafka: infra.KafkaServer, pki: Pki,
                                                                 start_registry: RegistryFactory):
    env = kafka_env(secure_kafka, pki)
    server = start_registry(env=env)
    answer = server.post("/subjects/over-sasl-ssl/versions", {"schema": SCHEMA})
    assert answer.status_code == 200, f"registered through SASL_SSL: {answer.text}"
    assert server.get("/leader").json()["is_leader"], "the Kafka group election runs over SASL_SSL too"
    server.restart()
    assert server.get("/subjects").json() == ["over-sasl-ssl"], "read back from the topic after a restart"


def test_wrong_kafka_credentials_are_refused_at_start(secure_kafka: infra.KafkaServer, pki: Pki, tmp_path: Path):
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SCHEMA_REGISTRY_")},
           **kafka_env(secure_kafka, pki, password="wrong"),
           "SCHEMA_REGISTRY_LISTENERS": f"http://127.0.0.1:{free_port()}",
           "SCHEMA_REGISTRY_KAFKASTORE_INIT_TIMEOUT_MS": "5000"}
    run = subprocess.run([str(CLI), "serve"], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0, "a registry that cannot authenticate to Kafka does not serve"
    assert "cannot start" in run.stderr and "SASL" in run.stderr.upper(), run.stderr[-2000:]


# ---- ZooKeeper: TLS and SASL -------------------------------------------------------------------


@pytest.fixture(scope="module")
def secure_zookeeper(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[infra.ZooKeeperServer]:
    if not infra.jars_ready():
        pytest.fail("ZooKeeper jars are missing: run `make infra-fetch`", pytrace=False)
    directory = tmp_path_factory.mktemp("zookeeper-tls")
    jaas = directory / "jaas.conf"
    jaas.write_text("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
                    "  user_registry=\"zk-pw\";\n};\n")
    server_cert = pki.issue("zookeeper", hosts=("127.0.0.1", "localhost"))
    server = infra.ZooKeeperServer(directory, secure=True, extra_config={
        "ssl.keyStore.location": str(server_cert.pem_bundle()), "ssl.keyStore.type": "PEM",
        "ssl.trustStore.location": str(pki.ca_pem), "ssl.trustStore.type": "PEM",
        "ssl.clientAuth": "need",
        "authProvider.sasl": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
        "enforce.auth.enabled": "true", "enforce.auth.schemes": "sasl",
    }, jvm_options=[f"-Djava.security.auth.login.config={jaas}"])
    try:
        server.start()
        yield server
    finally:
        server.stop(timeout=15)


def zookeeper_env(server: infra.ZooKeeperServer, pki: Pki, password: str = "zk-pw") -> dict[str, str]:
    client = pki.issue("registry-zk")
    return {
        "SCHEMA_REGISTRY_LEADER_ELECTION_BACKEND": "zookeeper",
        "SCHEMA_REGISTRY_LEADER_ELECTION_ZOOKEEPER_CONNECT": server.secure_connect,
        "SCHEMA_REGISTRY_LEADER_ELECTION_ZOOKEEPER_ROOT": f"/secure-{free_port()}",
        "SCHEMA_REGISTRY_ZOOKEEPER_SSL_CLIENT_ENABLE": "true",
        "SCHEMA_REGISTRY_ZOOKEEPER_SSL_KEYSTORE_LOCATION": str(client.pem_bundle()),
        "SCHEMA_REGISTRY_ZOOKEEPER_SSL_TRUSTSTORE_LOCATION": str(pki.ca_pem),
        "SCHEMA_REGISTRY_ZOOKEEPER_SASL_JAAS_CONFIG": DIGEST.format("registry", password),
    }


def test_a_registry_elects_through_zookeeper_over_tls_with_sasl(secure_zookeeper: infra.ZooKeeperServer,
                                                               pki: Pki, start_registry: RegistryFactory):
    env = zookeeper_env(secure_zookeeper, pki)
    server = start_registry(env=env)
    assert server.get("/leader").json()["is_leader"], "elected through the TLS port with SASL"
    assert server.post("/subjects/zk-secure/versions", {"schema": SCHEMA}).status_code == 200
    # The leader's znode is there, for a client with the same credentials.
    settings = load_settings(environ=env)
    zk = KazooClient(hosts=secure_zookeeper.secure_connect, **kazoo_options(settings.zookeeper_security))
    zk.start(timeout=15)
    try:
        data, _ = zk.get(f"{env['SCHEMA_REGISTRY_LEADER_ELECTION_ZOOKEEPER_ROOT']}/leader")
        assert json.loads(data)["port"] == server.port, data
    finally:
        zk.stop()
        zk.close()


def test_zookeeper_refuses_wrong_credentials_and_plain_connections(secure_zookeeper: infra.ZooKeeperServer,
                                                                  pki: Pki, start_registry: RegistryFactory):
    wrong = start_registry(env=zookeeper_env(secure_zookeeper, pki, password="wrong"), start=False)
    wrong.proc = subprocess.Popen([str(CLI), "serve"], env={
        **{k: v for k, v in os.environ.items() if not k.startswith("SCHEMA_REGISTRY_")},
        **wrong.extra_env, "SCHEMA_REGISTRY_LISTENERS": wrong.url,
        "SCHEMA_REGISTRY_EMBEDDED_STORE_PATH": str(wrong.data_dir)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_until(lambda: _answers(wrong.url), 20, "the registry to serve reads")
    assert requests.get(f"{wrong.url}/ready", timeout=5).status_code == 503, \
        "no leader while ZooKeeper refuses the session's credentials"
    assert requests.get(f"{wrong.url}/leader", timeout=5).json()["is_leader"] is False
    plain = KazooClient(hosts=secure_zookeeper.secure_connect)
    with pytest.raises(Exception):
        plain.start(timeout=5)  # no TLS on a TLS port: no session
    plain.close()


def _answers(url: str) -> bool:
    try:
        return requests.get(f"{url}/subjects", timeout=1).status_code == 200
    except requests.RequestException:
        return False
