"""Real clients against a secured registry process: Confluent's Python client
(confluent-kafka) and the JavaScript client (@kafkajs/confluent-schema-registry), each
with HTTP Basic and with mTLS; wrong passwords and denied subjects refused, with
nothing written. Users come from `schema-registry hash-password`, as an operator
would make them.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.api.support import CLI, RegistryFactory, RegistryProcess, free_port
from tests.pki import Pki

pytestmark = pytest.mark.integration

JS = Path(__file__).resolve().parent / "js"
SCHEMA = json.dumps({"type": "record", "name": "Client", "fields": [{"name": "a", "type": "int"}]},
                    separators=(",", ":"))
RULES = {"rules": [
    # `config` too: the JavaScript client sets a subject's level when it registers.
    {"principal": "alice", "operations": ["read", "write", "config"], "subject_prefix": "alice-"},
    {"principal": "admin", "operations": ["*"], "subject_regex": ".*", "global": True},
]}


def users_line(user: str, password: str) -> str:
    """A users-file line made by the CLI, the password given on standard input."""
    run = subprocess.run([str(CLI), "hash-password", user, "--time-cost", "1", "--memory-kib", "8192"],
                         input=password + "\n", capture_output=True, text=True, timeout=60, check=True)
    return run.stdout.strip()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Any:
    """One registry: Basic on http, certificates on https, the same rules for both."""
    directory = tmp_path_factory.mktemp("secured")
    users = directory / "users.properties"
    users.write_text(users_line("alice", "alice-pw") + "\n" + users_line("admin", "admin-pw") + "\n")
    rules = directory / "rules.json"
    rules.write_text(json.dumps(RULES))
    factory = RegistryFactory(directory)
    https_port = free_port()
    server = factory(start=False, env={
        "SCHEMA_REGISTRY_AUTHENTICATION_METHOD": "BASIC,CERTIFICATE",
        "SCHEMA_REGISTRY_AUTHENTICATION_USERS_FILE": str(users),
        "SCHEMA_REGISTRY_AUTHORIZATION_RULES_FILE": str(rules),
        "SCHEMA_REGISTRY_SSL_KEYSTORE_LOCATION": str(pki.issue("registry").pem_bundle()),
        "SCHEMA_REGISTRY_SSL_TRUSTSTORE_LOCATION": str(pki.ca_pem),
        "SCHEMA_REGISTRY_SSL_CLIENT_AUTHENTICATION": "REQUESTED",
        "SCHEMA_REGISTRY_SSL_PRINCIPAL_MAPPING_RULES": "RULE:^CN=([^,]*),.*$/$1/",
    })
    server.extra_env["SCHEMA_REGISTRY_LISTENERS"] = f"http://127.0.0.1:{server.port},https://127.0.0.1:{https_port}"
    server.session.auth = ("admin", "admin-pw")
    server.start()
    server.https_url = f"https://localhost:{https_port}"
    try:
        yield server
    finally:
        factory.close()


def subjects(server: RegistryProcess) -> list[str]:
    return server.get("/subjects").json()


# ---- Confluent's Python client -------------------------------------------------------------


def test_confluent_client_with_basic_auth(secured: RegistryProcess):
    client = SchemaRegistryClient({"url": secured.url, "basic.auth.user.info": "alice:alice-pw"})
    schema_id = client.register_schema("alice-basic", Schema(SCHEMA, "AVRO"))
    assert json.loads(client.get_schema(schema_id).schema_str) == json.loads(SCHEMA)
    serializer = AvroSerializer(client, SCHEMA, conf={"auto.register.schemas": False, "use.latest.version": True})
    deserializer = AvroDeserializer(client)
    context = SerializationContext("alice-topic", MessageField.VALUE)  # the subject alice-topic-value
    client.register_schema("alice-topic-value", Schema(SCHEMA, "AVRO"))
    assert deserializer(serializer({"a": 7}, context), context) == {"a": 7}, "a round trip with auth on"

    with pytest.raises(SchemaRegistryError) as wrong:
        SchemaRegistryClient({"url": secured.url, "basic.auth.user.info": "alice:wrong"}).register_schema(
            "alice-wrong", Schema(SCHEMA, "AVRO"))
    assert wrong.value.http_status_code == 401 and wrong.value.error_code == 401, wrong.value
    with pytest.raises(SchemaRegistryError) as denied:
        client.register_schema("bob-basic", Schema(SCHEMA, "AVRO"))
    assert denied.value.http_status_code == 403 and denied.value.error_code == 40301, denied.value
    listed = subjects(secured)
    assert "alice-wrong" not in listed and "bob-basic" not in listed, f"refused writes wrote nothing: {listed}"


def test_confluent_client_with_mtls(secured: RegistryProcess, pki: Pki):
    alice = pki.issue("alice")
    client = SchemaRegistryClient({"url": secured.https_url, "ssl.ca.location": str(pki.ca_pem),
                                   "ssl.certificate.location": str(alice.cert_pem),
                                   "ssl.key.location": str(alice.key_pem())})
    schema_id = client.register_schema("alice-mtls", Schema(SCHEMA, "AVRO"))
    assert client.get_schema(schema_id).schema_str == SCHEMA
    with pytest.raises(SchemaRegistryError) as denied:
        client.register_schema("bob-mtls", Schema(SCHEMA, "AVRO"))
    assert denied.value.http_status_code == 403, "the certificate's principal is authorized like a user"
    anonymous = SchemaRegistryClient({"url": secured.https_url, "ssl.ca.location": str(pki.ca_pem)})
    with pytest.raises(SchemaRegistryError) as unauthenticated:
        anonymous.register_schema("alice-anonymous", Schema(SCHEMA, "AVRO"))
    assert unauthenticated.value.http_status_code == 401
    other = Pki(pki.directory / "other", name="Other CA").issue("alice")
    forged = SchemaRegistryClient({"url": secured.https_url, "ssl.ca.location": str(pki.ca_pem),
                                   "ssl.certificate.location": str(other.cert_pem),
                                   "ssl.key.location": str(other.key_pem())})
    with pytest.raises(Exception):  # the handshake fails: the client's CA is not trusted
        forged.register_schema("alice-forged", Schema(SCHEMA, "AVRO"))
    listed = subjects(secured)
    assert "alice-mtls" in listed and not {"bob-mtls", "alice-anonymous", "alice-forged"} & set(listed), listed


# ---- the JavaScript client -----------------------------------------------------------------


def run_js(**config: Any) -> tuple[int, dict[str, Any]]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed for the JavaScript client tests (apt-get install -y nodejs)")
    if not (JS / "node_modules" / "@kafkajs" / "confluent-schema-registry").is_dir():
        pytest.fail("the JavaScript client is not installed: run `make js-fetch`", pytrace=False)
    run = subprocess.run([node, str(JS / "client.mjs"), json.dumps({"schema": SCHEMA, **config})],
                         capture_output=True, text=True, timeout=60, cwd=JS)
    assert run.stdout.strip(), f"the JS client printed nothing: {run.stderr[-2000:]}"
    return run.returncode, json.loads(run.stdout.strip().splitlines()[-1])


def test_js_client_with_basic_auth(secured: RegistryProcess):
    code, answer = run_js(url=secured.url, subject="alice-js", username="alice", password="alice-pw")
    assert code == 0 and answer["decoded"] == {"a": 42}, answer
    code, answer = run_js(url=secured.url, subject="alice-js-wrong", username="alice", password="nope")
    assert code == 3 and answer["status"] == 401, answer
    code, answer = run_js(url=secured.url, subject="bob-js", username="alice", password="alice-pw")
    assert code == 3 and answer["status"] == 403, answer
    listed = subjects(secured)
    assert "alice-js" in listed and "alice-js-wrong" not in listed and "bob-js" not in listed, listed


def test_js_client_with_mtls(secured: RegistryProcess, pki: Pki):
    alice = pki.issue("alice")
    code, answer = run_js(url=secured.https_url, subject="alice-js-mtls", ca=str(pki.ca_pem),
                          cert=str(alice.cert_pem), key=str(alice.key_pem()))
    assert code == 0 and answer["decoded"] == {"a": 42}, answer
    code, answer = run_js(url=secured.https_url, subject="bob-js-mtls", ca=str(pki.ca_pem),
                          cert=str(alice.cert_pem), key=str(alice.key_pem()))
    assert code == 3 and answer["status"] == 403, answer
    other = Pki(pki.directory / "other-js", name="Other CA").issue("alice")
    code, answer = run_js(url=secured.https_url, subject="alice-js-forged", ca=str(pki.ca_pem),
                          cert=str(other.cert_pem), key=str(other.key_pem()))
    # Refused in the handshake, before any HTTP (the client reports a dropped socket as 400).
    assert code == 3 and any(w in answer["error"] for w in ("socket hang up", "ECONNRESET")), answer
    listed = subjects(secured)
    assert "alice-js-mtls" in listed and not {"bob-js-mtls", "alice-js-forged"} & set(listed), listed
