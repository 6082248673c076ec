"""Real TLS on a real registry process: https beside http, PEM and PKCS12 key material,
mTLS (REQUIRED and REQUESTED), certificate principals, TLS versions, and the process
guarantees of a TLS listener (SIGTERM, kill -9, busy port).

Certificates are made in the test (tests/pki.py); every process started is killed at
the end (tests/api/conftest.py).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
from pathlib import Path

import pytest
import requests

from tests.api.support import CLI, RegistryFactory, RegistryProcess, free_port, pid_alive, wait_until
from tests.pki import Pki

pytestmark = pytest.mark.integration

SCHEMA = json.dumps({"type": "record", "name": "Tls", "fields": [{"name": "a", "type": "int"}]}, separators=(",", ":"))
RULES = {"rules": [
    {"principal": "alice", "operations": ["*"], "subject_prefix": "alice."},
    {"principal": "admin", "operations": ["*"], "subject_regex": ".*", "global": True},
]}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def other_pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("other-pki"), name="Another CA")


def https_env(pki: Pki, **extra: str) -> dict[str, str]:
    server = pki.issue("registry")
    return {"SCHEMA_REGISTRY_SSL_KEYSTORE_LOCATION": str(server.pem_bundle(password="key-pw")),
            "SCHEMA_REGISTRY_SSL_KEY_PASSWORD": "key-pw", **extra}


def test_http_and_https_listeners_serve_one_registry(start_registry: RegistryFactory, pki: Pki):
    https_port = free_port()
    server = start_registry(env=https_env(pki), start=False)
    server.extra_env["SCHEMA_REGISTRY_LISTENERS"] = f"http://127.0.0.1:{server.port},https://127.0.0.1:{https_port}"
    server.start()
    https = f"https://localhost:{https_port}"
    answer = requests.post(f"{https}/subjects/both/versions", json={"schema": SCHEMA}, verify=str(pki.ca_pem),
                           timeout=10)
    assert answer.status_code == 200, f"registered over https: {answer.text}"
    schema_id = answer.json()["id"]
    assert server.get(f"/schemas/ids/{schema_id}").json()["schema"] == SCHEMA, "and read over http"
    fast = requests.get(f"{https}/schemas/ids/{schema_id}", verify=str(pki.ca_pem), timeout=10)
    assert fast.status_code == 200 and fast.json()["schema"] == SCHEMA, "the id fast path over https"
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"{https}/subjects", timeout=10)  # the system CAs do not know our test CA
    head = requests.head(f"{https}/subjects", verify=str(pki.ca_pem), timeout=10)
    assert head.status_code == 200 and head.content == b"", "HEAD answers headers only"
    keep_alive = requests.Session()
    keep_alive.trust_env = False  # else REQUESTS_CA_BUNDLE overrides `verify`
    keep_alive.verify = str(pki.ca_pem)
    for _ in range(3):
        assert keep_alive.get(f"{https}/subjects", timeout=10).json() == ["both"], "requests on one connection"


def test_mtls_required_with_pkcs12_stores_and_certificate_principals(start_registry: RegistryFactory, pki: Pki,
                                                                   other_pki: Pki, tmp_path: Path):
    server_cert = pki.issue("registry")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(RULES))
    alice, admin, stranger = pki.issue("alice"), pki.issue("admin"), other_pki.issue("admin")
    server = start_registry(scheme="https", ca=pki.ca_pem, client_cert=(admin.cert_pem, admin.key_pem()), env={
        "SCHEMA_REGISTRY_SSL_KEYSTORE_LOCATION": str(server_cert.pkcs12("store-pw")),
        "SCHEMA_REGISTRY_SSL_KEYSTORE_PASSWORD": "store-pw",
        "SCHEMA_REGISTRY_SSL_TRUSTSTORE_LOCATION": str(pki.ca_pkcs12("trust-pw")),
        "SCHEMA_REGISTRY_SSL_TRUSTSTORE_PASSWORD": "trust-pw",
        "SCHEMA_REGISTRY_SSL_CLIENT_AUTHENTICATION": "REQUIRED",
        "SCHEMA_REGISTRY_AUTHENTICATION_METHOD": "CERTIFICATE",
        "SCHEMA_REGISTRY_SSL_PRINCIPAL_MAPPING_RULES": "RULE:^CN=([^,]*),.*$/$1/",
        "SCHEMA_REGISTRY_AUTHORIZATION_RULES_FILE": str(rules),
    })
    url = server.url.replace("127.0.0.1", "localhost")

    def as_(identity, method: str, path: str, **kwargs) -> requests.Response:
        cert = (str(identity.cert_pem), str(identity.key_pem())) if identity else None
        return requests.request(method, url + path, verify=str(pki.ca_pem), cert=cert, timeout=10, **kwargs)

    assert as_(alice, "POST", "/subjects/alice.orders/versions", json={"schema": SCHEMA}).status_code == 200
    denied = as_(alice, "POST", "/subjects/bob.orders/versions", json={"schema": SCHEMA})
    assert denied.status_code == 403 and denied.json()["error_code"] == 40301, denied.text
    for who, what in ((None, "no certificate"), (stranger, "a certificate from another CA")):
        with pytest.raises((requests.exceptions.SSLError, requests.exceptions.ConnectionError)):
            as_(who, "POST", "/subjects/alice.refused/versions", json={"schema": SCHEMA})
    subjects = as_(admin, "GET", "/subjects").json()
    assert "alice.orders" in subjects and "bob.orders" not in subjects and "alice.refused" not in subjects, \
        f"refused callers wrote nothing: {subjects}"
    assert as_(alice, "GET", "/subjects").json() == ["alice.orders"], "listings follow the certificate's rights"


def test_mtls_requested_takes_callers_with_or_without_a_certificate(start_registry: RegistryFactory, pki: Pki,
                                                                   other_pki: Pki):
    server = start_registry(scheme="https", ca=pki.ca_pem, env=https_env(
        pki, SCHEMA_REGISTRY_SSL_TRUSTSTORE_LOCATION=str(pki.ca_pem),
        SCHEMA_REGISTRY_SSL_CLIENT_AUTHENTICATION="REQUESTED"))
    assert server.get("/subjects").status_code == 200, "no certificate is fine when only requested"
    alice = pki.issue("alice")
    answer = server.get("/subjects", cert=(str(alice.cert_pem), str(alice.key_pem())))
    assert answer.status_code == 200, "a good certificate is fine"
    stranger = other_pki.issue("mallory")
    with pytest.raises((requests.exceptions.SSLError, requests.exceptions.ConnectionError)):
        server.get("/subjects", cert=(str(stranger.cert_pem), str(stranger.key_pem())))


def test_enabled_protocols_bound_the_tls_version(start_registry: RegistryFactory, pki: Pki):
    server = start_registry(scheme="https", ca=pki.ca_pem, env=https_env(
        pki, SCHEMA_REGISTRY_SSL_ENABLED_PROTOCOLS="TLSv1.3"))
    context = ssl.create_default_context(cafile=str(pki.ca_pem))
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    with pytest.raises(ssl.SSLError):
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="localhost"):
                pass
    context.maximum_version = ssl.TLSVersion.TLSv1_3
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version() == "TLSv1.3", "TLS 1.3 is served"


def test_https_alone_keeps_the_process_guarantees(start_registry: RegistryFactory, pki: Pki, tmp_path: Path):
    # With no http listener granian serves a Unix socket in a private directory of TMPDIR.
    server = start_registry(scheme="https", ca=pki.ca_pem, env=https_env(pki, TMPDIR=str(tmp_path)))
    killed_pid = server.proc.pid
    assert [p.name.split("-")[2] for p in tmp_path.glob("schema-registry-*")] == [str(killed_pid)]
    assert server.post("/subjects/only-https/versions", {"schema": SCHEMA}).status_code == 200
    # A second registry on the same https port is refused at start.
    busy = subprocess.run([str(CLI), "serve"], env={**os.environ, **https_env(pki),
                                                   "SCHEMA_REGISTRY_LISTENERS": server.url,
                                                   "SCHEMA_REGISTRY_EMBEDDED_STORE_PATH": str(server.data_dir) + "2"},
                          capture_output=True, text=True, timeout=60)
    assert busy.returncode == 1 and "already in use" in busy.stderr, busy.stderr[-2000:]
    # kill -9 of the supervisor takes the worker (and its TLS listener) down with it.
    workers = server.kill9()
    assert workers, "granian runs a worker even with no http listener"
    wait_until(lambda: not any(pid_alive(w) for w in workers), 10, "the worker to die with its supervisor")
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(f"{server.url}/subjects", verify=str(pki.ca_pem), timeout=2)
    assert list(tmp_path.glob(f"schema-registry-{killed_pid}-*")), "kill -9 leaves the directory behind"
    # Started again, SIGTERM stops it cleanly (exit code 0) and the data is there.
    server.start()
    assert server.get("/subjects").json() == ["only-https"], "restarted on the same data"
    assert server.proc is not None
    assert [p.name.split("-")[2] for p in tmp_path.glob("schema-registry-*")] == [str(server.proc.pid)], \
        "the killed registry's directory is removed at the next start"
    os.kill(server.proc.pid, signal.SIGTERM)
    assert server.proc.wait(timeout=20) == 0, server.log_tail()
    assert not list(tmp_path.glob("schema-registry-*")), "a clean stop removes its own"


def test_unusable_key_material_is_refused_at_start(tmp_path: Path, pki: Pki):
    cases = {
        "no key password": {"SCHEMA_REGISTRY_SSL_KEYSTORE_LOCATION": str(pki.issue("a").pem_bundle("pw"))},
        "wrong store password": {"SCHEMA_REGISTRY_SSL_KEYSTORE_LOCATION": str(pki.issue("b").pkcs12("pw")),
                                 "SCHEMA_REGISTRY_SSL_KEYSTORE_PASSWORD": "nope"},
        "JKS": {"SCHEMA_REGISTRY_SSL_KEYSTORE_LOCATION": str(tmp_path / "x.jks"),
                "SCHEMA_REGISTRY_SSL_KEYSTORE_TYPE": "JKS"},
        "mTLS without a truststore": {"SCHEMA_REGISTRY_SSL_KEYSTORE_LOCATION": str(pki.issue("c").pem_bundle()),
                                      "SCHEMA_REGISTRY_SSL_CLIENT_AUTHENTICATION": "REQUIRED"},
    }
    for what, env in cases.items():
        run = subprocess.run([str(CLI), "serve"], env={
            **{k: v for k, v in os.environ.items() if not k.startswith("SCHEMA_REGISTRY_")}, **env,
            "SCHEMA_REGISTRY_LISTENERS": f"https://127.0.0.1:{free_port()}",
            "SCHEMA_REGISTRY_EMBEDDED_STORE_PATH": str(tmp_path / "data")}, capture_output=True, text=True,
            timeout=60)
        assert run.returncode == 2, f"{what}: refused with a configuration error, got {run.returncode}: " \
                                    f"{run.stderr[-1500:]}"
        assert "ssl." in run.stderr, f"{what}: the message names the setting: {run.stderr[-1500:]}"
