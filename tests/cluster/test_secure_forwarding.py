"""Authenticated writes through a follower, on a real cluster (ZooKeeper election, Kafka
store): the caller's identity reaches the leader, signed with the cluster's secret or
vouched for by mTLS between the nodes, and the leader authorizes that caller."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from registry.http.security.passwords import users_file_line
from tests.cluster.harness import Cluster, free_port, wait_for
from tests.pki import Pki

pytestmark = pytest.mark.integration

SCHEMA = json.dumps({"type": "record", "name": "Fwd", "fields": [{"name": "a", "type": "int"}]})
ALLOW_ALICE = {"rules": [
    {"principal": "alice", "operations": ["*"], "subject_prefix": "team-a."},
    {"principal": "admin", "operations": ["*"], "subject_regex": ".*", "global": True}]}


def write_rules(path: Path, document: dict) -> None:
    path.write_text(json.dumps(document))


def audit_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def secured_cluster(kafka_bootstrap: str, zookeeper_connect: str, workdir: Path, extra: dict[str, str]) -> Cluster:
    users = workdir / "users.properties"
    users.write_text("\n".join(users_file_line(name, f"{name}-pw", time_cost=1, memory_kib=8192)
                               for name in ("alice", "admin")) + "\n")
    cluster = Cluster(2, "zookeeper", kafka_bootstrap=kafka_bootstrap, zookeeper_connect=zookeeper_connect,
                      workdir=workdir, extra_env={
                          "SCHEMA_REGISTRY_AUTHENTICATION_USERS_FILE": str(users),
                          # The harness reads /leader without credentials.
                          "SCHEMA_REGISTRY_AUTHENTICATION_SKIP_PATHS": "/health,/ready,/leader", **extra})
    for node in cluster.nodes:  # each node its own rules and audit log
        write_rules(workdir / f"rules{node.index}.json", ALLOW_ALICE)
        node.env["SCHEMA_REGISTRY_AUTHORIZATION_RULES_FILE"] = str(workdir / f"rules{node.index}.json")
        node.env["SCHEMA_REGISTRY_AUDIT_LOG_FILE"] = str(workdir / f"audit{node.index}.log")
    return cluster


def test_a_follower_forwards_the_callers_identity_and_the_leader_authorizes_the_caller(
        kafka_bootstrap: str, zookeeper_connect: str, tmp_path: Path):
    cluster = secured_cluster(kafka_bootstrap, zookeeper_connect, tmp_path, {
        "SCHEMA_REGISTRY_AUTHENTICATION_METHOD": "BASIC", "SCHEMA_REGISTRY_INTER_INSTANCE_SECRET": "s3cret"})
    with cluster:
        leader = cluster.wait_for_leader()
        follower = next(n for n in cluster.nodes if n is not leader)
        alice = ("alice", "alice-pw")
        answer = requests.post(f"{follower.url}/subjects/team-a.fwd/versions", json={"schema": SCHEMA},
                               auth=alice, timeout=20)
        assert answer.status_code == 200, f"alice's write through the follower: {answer.text}"
        leader_audit = tmp_path / f"audit{leader.index}.log"
        wait_for(lambda: any(e["resource"] == "subject:team-a.fwd" for e in audit_lines(leader_audit)), 10,
                 "the leader's audit line")
        line = next(e for e in audit_lines(leader_audit) if e["resource"] == "subject:team-a.fwd")
        assert line["principal"] == "alice" and line["result"] == "accepted", line
        assert line["forwarded_by"] == follower.url, line
        assert line["client"].startswith("127.0.0.1:") and not line["client"].endswith(f":{follower.port}"), \
            f"the original caller's address: {line}"

        # The leader's rules now deny alice there; the follower's still allow her.
        write_rules(tmp_path / f"rules{leader.index}.json", {"rules": ALLOW_ALICE["rules"][1:]})
        wait_for(lambda: requests.post(f"{leader.url}/subjects/team-a.probe/versions", json={"schema": SCHEMA},
                                       auth=alice, timeout=10).status_code == 403, 10,
                 "the leader to read its new rules")
        denied = requests.post(f"{follower.url}/subjects/team-a.denied/versions", json={"schema": SCHEMA},
                               auth=alice, timeout=20)
        assert denied.status_code == 403 and denied.json()["error_code"] == 40301, \
            f"the leader authorizes alice, not the follower that admitted her: {denied.text}"
        wrong = requests.post(f"{follower.url}/subjects/team-a.wrong/versions", json={"schema": SCHEMA},
                              auth=("alice", "nope"), timeout=20)
        assert wrong.status_code == 401, wrong.text
        forged = requests.post(f"{leader.url}/subjects/team-a.forged/versions", json={"schema": SCHEMA},
                               headers={"X-Forwarded-Principal": "eyJuYW1lIjoiYWRtaW4ifQ",
                                        "X-Forwarded-Signature": "v1;0;00"}, timeout=20)
        assert forged.status_code == 401, f"a client cannot claim to be a forward: {forged.text}"
        listed = requests.get(f"{leader.url}/subjects", auth=("admin", "admin-pw"), timeout=10).json()
        assert "team-a.fwd" in listed and not {"team-a.denied", "team-a.wrong", "team-a.forged"} & set(listed), \
            listed
        denial = next(e for e in audit_lines(leader_audit) if e["resource"] == "subject:team-a.denied")
        assert denial["principal"] == "alice" and denial["result"] == "denied" and denial["forwarded_by"], denial


def test_nodes_forward_over_mtls_and_vouch_for_certificate_callers(
        kafka_bootstrap: str, zookeeper_connect: str, tmp_path: Path):
    pki = Pki(tmp_path / "pki")
    node_cert = pki.issue("node", hosts=("127.0.0.1", "localhost"))
    cluster = secured_cluster(kafka_bootstrap, zookeeper_connect, tmp_path, {
        "SCHEMA_REGISTRY_AUTHENTICATION_METHOD": "CERTIFICATE,BASIC",
        "SCHEMA_REGISTRY_INTER_INSTANCE_PROTOCOL": "https",
        "SCHEMA_REGISTRY_INTER_INSTANCE_PRINCIPALS": "node",
        "SCHEMA_REGISTRY_SSL_KEYSTORE_LOCATION": str(node_cert.pem_bundle()),
        "SCHEMA_REGISTRY_SSL_TRUSTSTORE_LOCATION": str(pki.ca_pem),
        "SCHEMA_REGISTRY_SSL_CLIENT_AUTHENTICATION": "REQUESTED",
        "SCHEMA_REGISTRY_SSL_PRINCIPAL_MAPPING_RULES": "RULE:^CN=([^,]*),.*$/$1/"})
    https: dict[int, str] = {}
    for node in cluster.nodes:  # http for the harness's probes, https between nodes and for clients
        port = free_port()
        https[node.index] = f"https://127.0.0.1:{port}"
        node.env["SCHEMA_REGISTRY_LISTENERS"] = f"http://127.0.0.1:{node.port},{https[node.index]}"
    with cluster:
        leader = cluster.wait_for_leader()
        follower = next(n for n in cluster.nodes if n is not leader)
        view = requests.get(f"{follower.url}/leader", timeout=5).json()
        assert view["leader"] == https[leader.index], f"nodes reach the leader over https: {view}"
        alice = pki.issue("alice")
        cert = (str(alice.cert_pem), str(alice.key_pem()))
        answer = requests.post(f"{https[follower.index]}/subjects/team-a.mtls/versions", json={"schema": SCHEMA},
                               cert=cert, verify=str(pki.ca_pem), timeout=20)
        assert answer.status_code == 200, f"a certificate caller's write through the follower: {answer.text}"
        leader_audit = tmp_path / f"audit{leader.index}.log"
        wait_for(lambda: any(e["resource"] == "subject:team-a.mtls" for e in audit_lines(leader_audit)), 10,
                 "the leader's audit line")
        line = next(e for e in audit_lines(leader_audit) if e["resource"] == "subject:team-a.mtls")
        assert line["principal"] == "alice" and line["authentication"] == "CERTIFICATE", line
        assert line["forwarded_by"] == https[follower.index], line
        denied = requests.post(f"{https[follower.index]}/subjects/team-b.mtls/versions", json={"schema": SCHEMA},
                               cert=cert, verify=str(pki.ca_pem), timeout=20)
        assert denied.status_code == 403, denied.text
        # A client with a valid certificate that is not a member's cannot vouch for anyone.
        forged = requests.post(f"{https[leader.index]}/subjects/team-b.forged/versions", json={"schema": SCHEMA},
                               cert=cert, verify=str(pki.ca_pem), timeout=20,
                               headers={"X-Forwarded-Principal": "eyJuYW1lIjoiYWRtaW4iLCJtZXRob2QiOiJCQVNJQyJ9"})
        assert forged.status_code == 401, forged.text
