"""The guarantees every request passes, tried as an attacker would (issue 47): a forged
forwarded identity, reads across contexts, references to subjects the caller may not
read, ambiguous credentials, changes a browser sends cross-site, and parsing or checking
on the event loop. In-process, through the real front end (AsgiBridge, its answers kept
ready, the direct views and Flask)."""
from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from registry.http.security.passwords import users_file_line
from registry.http.security.principal import Principal
from registry.service import RegistryService
from tests.asgi_client import Answer, NodeClient
from tests.unit.polling import wait_until
from tests.unit.registry.http.security.test_front_end import signed

CHEAP = {"time_cost": 1, "memory_kib": 8192}
RULES = {"rules": [
    {"principal": "alice", "operations": ["read", "write"], "subject_prefix": "team-a."},
    {"principal": "Group:ops", "operations": ["*"], "subject_regex": ".*", "global": True},
]}
RECORD = '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}'
SECRET = '{"type":"record","name":"Q","fields":[{"name":"pan","type":"string"}]}'


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


ALICE, ROOT = basic("alice", "a-pw"), basic("root", "r-pw")


def refused(answer: Answer, status: int, what: str) -> str:
    assert answer.status == status, f"{what}: expected {status}, got {answer.status}: {answer.body[:300]!r}"
    body = answer.json()
    assert set(body) == {"error_code", "message"}, f"{what}: Confluent's error body: {body}"
    assert body["error_code"] == (401 if status == 401 else 40301), f"{what}: {body}"
    return body["message"]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("guarantees")
    (directory / "users").write_text("\n".join([users_file_line("alice", "a-pw", [], **CHEAP),
                                                users_file_line("root", "r-pw", ["ops"], **CHEAP)]) + "\n")
    (directory / "rules").write_text(json.dumps(RULES))
    return {"users": directory / "users", "rules": directory / "rules", "audit": directory / "audit.log"}


@pytest.fixture(scope="module")
def node(files: dict[str, Path]) -> Iterator[NodeClient]:
    client = NodeClient(**{"authentication.method": "BASIC", "authentication.users.file": str(files["users"]),
                           "authorization.rules.file": str(files["rules"]), "audit.log.file": str(files["audit"]),
                           "inter.instance.secret": "cluster-secret"})
    try:
        for subject, schema in (("team-a.x", RECORD), (":.ctx:secret.sub", SECRET), ("secret.payments", SECRET)):
            answer = client.post(f"/subjects/{subject}/versions", {"schema": schema}, headers=ROOT)
            assert answer.status == 200, answer.body
        yield client
    finally:
        client.close()


def forged(name: str = "admin", signature: str | None = None) -> dict[str, str]:
    claim = base64.urlsafe_b64encode(json.dumps({"name": name, "method": "BASIC", "roles": ["ops"]}).encode())
    return {"X-Forwarded-Principal": claim.rstrip(b"=").decode(),
            "X-Forwarded-Signature": signature or f"v1;{int(time.time())};junk"}


# ---- 1. a forged forwarded identity -------------------------------------------------------


@pytest.mark.parametrize("target", ["/schemas/ids/1", "/schemas/ids/1/schema", "/subjects", "/schemas/ids/1/versions",
                                    "/subjects/team-a.x/versions/latest", "/config"])
def test_a_forwarded_identity_with_a_bad_signature_is_refused_on_every_route(node: NodeClient, target: str):
    for attempt in range(3):  # the second and third would be answered from what the first kept
        refused(node.get(target, headers=forged()), 401, f"{target}, attempt {attempt}")
    # The same read with a real signature (a follower's) is answered: the refusal is the signature's.
    good = node.get(target, headers=signed(Principal("root", "BASIC", frozenset({"ops"})), "GET", target, b"",
                                           secret=b"cluster-secret"))
    assert good.status == 200, f"{target} with a member's signature: {good.body[:200]!r}"


def test_a_refused_forwarded_identity_is_audited_with_what_it_claimed(node: NodeClient, files: dict[str, Path]):
    refused(node.get("/schemas/ids/1", headers=forged("mallory-claims-admin")), 401, "a forged identity")
    def audited() -> list[dict]:
        lines = [json.loads(line) for line in files["audit"].read_text().splitlines()] \
            if files["audit"].exists() else []
        return [e for e in lines if e.get("claimed") == "mallory-claims-admin"]

    found = wait_until(audited, "an audit line for the refused identity")
    event = found[0]
    assert event["result"] == "denied" and event["status"] == 401 and event["target"] == "/schemas/ids/1"
    assert event["principal"] == "", "nobody was authenticated: the claim is logged as claimed, never as the principal"
    assert "signature" in event["reason"], event


# ---- 2. reads across contexts -------------------------------------------------------------


@pytest.mark.parametrize("target", ["/schemas/ids/1?subject=:.ctx:", "/schemas/ids/1/schema?subject=:.ctx:secret.sub",
                                    "/schemas/ids/1?subject=%3A.ctx%3Asecret.sub",
                                    "/schemas/ids/1?%73ubject=:.ctx:secret.sub",
                                    "/schemas/ids/1/versions?subject=:.ctx:",
                                    "/schemas/ids/1/subjects?subject=:.ctx:"])
def test_a_schema_id_read_is_judged_in_the_context_it_answers_from(node: NodeClient, target: str):
    # Id 1 is team-a.x's in the default context (alice's), and secret.sub's in `.ctx` (not hers).
    assert node.get("/schemas/ids/1", headers=ALICE).status == 200, "her own id 1, in the default context"
    for attempt in range(2):
        refused(node.get(target, headers=ALICE), 403, f"{target}, attempt {attempt}")
    assert node.get(target, headers=ROOT).status == 200, f"{target} answers a reader of `.ctx`"


# ---- 3. references to subjects the caller may not read ------------------------------------


@pytest.mark.parametrize("route", ["/subjects/team-a.y/versions", "/subjects/team-a.x",
                                   "/compatibility/subjects/team-a.x/versions/latest",
                                   "/compatibility/subjects/team-a.x/versions"])
def test_referencing_a_subject_needs_read_permission_and_says_nothing_of_it(node: NodeClient, route: str):
    messages = []
    for subject in ("secret.payments", "secret.nothing-here", ":.ctx:secret.sub"):
        body = {"schema": '{"type":"record","name":"T","fields":[{"name":"q","type":"Q"}]}',
                "references": [{"name": "Q", "subject": subject, "version": 1}]}
        message = refused(node.post(route, body, headers=ALICE), 403, f"{route} referencing {subject}")
        messages.append(message.replace(subject, "<subject>"))
    assert len(set(messages)) == 1, f"the refusal is the same whether the subject exists or not: {messages}"
    listed = node.get("/subjects", headers=ROOT).json()
    assert "team-a.y" not in listed, "nothing was written"
    body = {"schema": '{"type":"record","name":"T","fields":[{"name":"r","type":"R"}]}',
            "references": [{"name": "R", "subject": "team-a.x", "version": 1}]}
    assert node.post("/subjects/team-a.refs/versions", body, headers=ALICE).status == 200, \
        "a reference to a subject she may read is fine"


# ---- 4. several Authorization headers -----------------------------------------------------


@pytest.mark.parametrize("target", ["/schemas/ids/1", "/subjects", "/subjects/team-a.x/versions/latest"])
def test_several_authorization_headers_are_refused_on_every_route(node: NodeClient, target: str):
    for attempt in range(3):  # alice's credential and decision are remembered after the first plain read
        assert node.get(target, headers=ALICE).status == 200, f"{target} read plainly by alice"
        for pair in ([ALICE, ROOT], [ROOT, ALICE], [ALICE, basic("alice", "wrong")], [basic("alice", "wrong"), ALICE]):
            both = [("Authorization", h["Authorization"]) for h in pair]
            message = refused(node.get(target, headers=both), 401, f"{target} with two credentials, {attempt}")
            assert "several Authorization" in message, message


# ---- 5. changes a browser sends cross-site ------------------------------------------------


@pytest.mark.parametrize("headers", [{"Sec-Fetch-Site": "cross-site"}, {"Origin": "https://evil.example"},
                                     {"Origin": "null"}, {"Origin": "http://localhost:8081.evil.example"}])
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_a_change_a_browser_marks_cross_site_is_refused(node: NodeClient, headers: dict[str, str], method: str):
    targets = {"POST": "/subjects/team-a.csrf/versions", "PUT": "/config/team-a.csrf", "DELETE": "/subjects/team-a.x"}
    body = {"POST": {"schema": RECORD}, "PUT": {"compatibility": "NONE"}, "DELETE": None}[method]
    answer = node.request(method, targets[method], body, headers={**ALICE, **headers})
    refused(answer, 403, f"{method} with {headers}")
    assert "team-a.csrf" not in node.get("/subjects", headers=ROOT).json(), "nothing written"
    assert node.get("/subjects/team-a.x/versions", headers=ROOT).json() == [1], "nothing deleted"


def test_api_clients_and_the_registrys_own_pages_keep_writing(node: NodeClient):
    for extra in ({}, {"Origin": "http://localhost:8081", "Host": "localhost:8081", "Sec-Fetch-Site": "same-origin"},
                  {"Sec-Fetch-Site": "same-site"}, {"Sec-Fetch-Site": "none"}):
        answer = node.post("/subjects/team-a.api/versions", {"schema": RECORD}, headers={**ALICE, **extra})
        assert answer.status == 200, f"with {extra}: {answer.body!r}"
    reads = node.get("/subjects", headers={**ALICE, "Sec-Fetch-Site": "cross-site", "Origin": "https://x.example"})
    assert reads.status == 200, "reads are not changes (a browser cannot read the answer cross-site anyway)"


def test_allowed_origins_may_send_changes(tmp_path: Path):
    with NodeClient(**{"access.control.allow.origin": "https://ui.example.com, https://other.example"}) as client:
        ok = client.post("/subjects/s/versions", {"schema": RECORD}, headers={"Origin": "https://ui.example.com"})
        assert ok.status == 200, ok.body
        refused(client.post("/subjects/s/versions", {"schema": RECORD}, headers={"Origin": "https://evil.example"}),
                403, "an origin not listed, even with authentication off")
        memo = client.post("/subjects/s", {"schema": RECORD})  # a lookup, kept ready by the memo after this
        assert memo.status == 200 and client.post("/subjects/s", {"schema": RECORD}).status == 200
        refused(client.post("/subjects/s", {"schema": RECORD}, headers={"Sec-Fetch-Site": "cross-site"}), 403,
                "a kept answer is refused the same way")


# ---- 8. no parse or check on the event loop -----------------------------------------------


def test_registrations_and_formatted_reads_parse_off_the_event_loop(monkeypatch: pytest.MonkeyPatch):
    """AsgiClient runs the bridge's event loop on this (the main) thread: whatever parses
    or checks must run on another one, whatever the size of the body."""
    where: list[str] = []
    parse, formatted = RegistryService._prepare_registration, RegistryService.formatted

    def recording_parse(self, *args, **kwargs):
        where.append(threading.current_thread().name)
        return parse(self, *args, **kwargs)

    def recording_formatted(self, *args, **kwargs):
        where.append(threading.current_thread().name)
        return formatted(self, *args, **kwargs)

    monkeypatch.setattr(RegistryService, "_prepare_registration", recording_parse)
    monkeypatch.setattr(RegistryService, "formatted", recording_formatted)
    for commit in ("true", "false"):
        with NodeClient(**{"group.commit.enable": commit}) as client:
            where.clear()
            assert client.post("/subjects/small/versions", {"schema": '"int"'}).status == 200
            assert client.post("/subjects/small/versions", {"schema": '"long"'}).status == 200, "int -> long"
            for target in ("/schemas/ids/1?format=resolved", "/schemas/ids/1/schema?%66ormat=serialized",
                           "/subjects/small/versions/1?format=resolved"):
                assert client.get(target).status == 200, target
            assert len(where) >= 5, where
            loop_thread = threading.main_thread().name
            assert loop_thread not in where, f"group.commit.enable={commit}: parsed on the event loop: {where}"
