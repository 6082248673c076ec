"""Authentication, authorization, the audit log and metrics through the real front end
(AsgiBridge, the id fast path and Flask), in-process on the in-memory log."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from registry.http.security.forwarded import ForwardedIdentity
from registry.http.security.certificates import CertificatePrincipals
from registry.http.security.passwords import users_file_line
from registry.http.security.principal import Principal
from tests.asgi_client import Answer, NodeClient
from tests.pki import Pki, TokenIssuer

CHEAP = {"time_cost": 1, "memory_kib": 8192}
PASSWORDS = {"alice": "alice-pw", "bob": "bob-pw", "root": "root-pw"}
RULES = {"rules": [
    {"principal": "alice", "operations": ["read", "write", "delete", "config", "mode"], "subject_prefix": "team-a."},
    {"principal": "bob", "operations": ["read"], "subject_regex": "team-[ab]\\..*"},
    {"principal": "Group:admins", "operations": ["*"], "subject_regex": ".*", "global": True},
    {"principal": "*", "operations": ["read"], "subject": "shared"},
]}
SCHEMA = '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}'


def basic(user: str, password: str | None = None) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password or PASSWORDS[user]}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def schema_of(tag: str) -> str:
    return json.dumps({"type": "record", "name": f"R_{tag}", "fields": [{"name": "a", "type": "int"}]})


def assert_refused(answer: Answer, status: int, what: str) -> dict:
    assert answer.status == status, f"{what}: expected {status}, got {answer.status}: {answer.body[:300]!r}"
    body = answer.json()
    assert set(body) == {"error_code", "message"}, f"{what}: Confluent's error body: {body}"
    assert body["error_code"] == (401 if status == 401 else 40301), f"{what}: {body}"
    return body


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("security")
    users = directory / "users.properties"
    users.write_text("\n".join([users_file_line("alice", PASSWORDS["alice"], ["developers"], **CHEAP),
                                users_file_line("bob", PASSWORDS["bob"], **CHEAP),
                                users_file_line("root", PASSWORDS["root"], ["admins"], **CHEAP)]) + "\n")
    rules = directory / "rules.json"
    rules.write_text(json.dumps(RULES))
    return {"users": users, "rules": rules, "audit": directory / "audit.log", "dir": directory}


@pytest.fixture(scope="module")
def secured(files: dict[str, Path]) -> Iterator[NodeClient]:
    client = NodeClient(**{"authentication.method": "BASIC", "authentication.users.file": str(files["users"]),
                           "authorization.rules.file": str(files["rules"]),
                           "audit.log.file": str(files["audit"]), "inter.instance.secret": "cluster-secret"})
    try:
        yield client
    finally:
        client.close()


def subjects_as(client: NodeClient, user: str) -> list[str]:
    answer = client.get("/subjects", headers=basic(user))
    assert answer.status == 200, answer.body
    return answer.json()


def register(client: NodeClient, subject: str, schema: str = SCHEMA, user: str = "root") -> int:
    answer = client.post(f"/subjects/{subject}/versions", {"schema": schema}, headers=basic(user))
    assert answer.status == 200, f"{user} registers under {subject}: {answer.body!r}"
    return answer.json()["id"]


# ---- authentication ------------------------------------------------------------------------


def test_no_credentials_get_401_with_a_basic_challenge(secured: NodeClient):
    answer = secured.get("/subjects")
    assert_refused(answer, 401, "no credentials")
    assert answer.headers.get("www-authenticate") == 'Basic realm="SchemaRegistry"', answer.headers
    assert_refused(secured.get("/schemas/ids/1"), 401, "the id fast path asks for credentials too")


def test_a_wrong_password_gets_401_and_writes_nothing(secured: NodeClient):
    for headers in (basic("alice", "wrong"), basic("nobody", "alice-pw"),
                    {"Authorization": "Basic not-base64!"}, {"Authorization": "Bearer abc"}):
        answer = secured.post("/subjects/team-a.wrong/versions", {"schema": SCHEMA}, headers=headers)
        assert_refused(answer, 401, f"register with {headers}")
    assert "team-a.wrong" not in subjects_as(secured, "root"), "a refused write leaves nothing behind"


def test_the_right_password_reads_and_writes(secured: NodeClient):
    schema_id = register(secured, "team-a.orders", user="alice")
    answer = secured.get(f"/schemas/ids/{schema_id}", headers=basic("alice"))
    assert answer.status == 200 and answer.json()["schema"] == SCHEMA, "the fast path serves an admitted read"
    again = secured.get(f"/schemas/ids/{schema_id}", headers=basic("alice"))
    assert again.status == 200, "a remembered credential is admitted again"


def test_health_and_ready_stay_open_and_metrics_do_not(secured: NodeClient):
    assert secured.get("/health").status == 200 and secured.get("/ready").status == 200
    assert_refused(secured.get("/metrics"), 401, "metrics need credentials unless listed in skip paths")
    assert secured.get("/metrics", headers=basic("root")).status == 200


# ---- authorization -------------------------------------------------------------------------


def test_a_denied_subject_gets_403_and_nothing_is_written(secured: NodeClient):
    body = assert_refused(secured.post("/subjects/team-b.orders/versions", {"schema": SCHEMA},
                                       headers=basic("alice")), 403, "alice writes team-b")
    assert "alice" in body["message"] and "team-b.orders" in body["message"], body
    assert_refused(secured.post("/subjects/team-a.x/versions", {"schema": SCHEMA}, headers=basic("bob")),
                   403, "bob may only read")
    assert "team-b.orders" not in subjects_as(secured, "root") and "team-a.x" not in subjects_as(secured, "root")
    register(secured, "team-a.del", user="alice")
    assert_refused(secured.delete("/subjects/team-a.del", headers=basic("bob")), 403, "bob deletes")
    assert "team-a.del" in subjects_as(secured, "root"), "a refused delete deletes nothing"


def test_listings_show_only_what_the_caller_may_read(secured: NodeClient):
    ids = {s: register(secured, s, schema_of(s.replace(".", "_").replace("-", "_")))
           for s in ("team-a.list", "team-b.list", "other.list", "shared")}
    alice, bob = set(subjects_as(secured, "alice")), set(subjects_as(secured, "bob"))
    assert {"team-a.list", "shared"} <= alice and not alice & {"team-b.list", "other.list"}, alice
    assert {"team-a.list", "team-b.list", "shared"} <= bob and "other.list" not in bob, bob
    assert {"other.list"} <= set(subjects_as(secured, "root"))
    listed = {v["subject"] for v in secured.get("/schemas", headers=basic("alice")).json()}
    assert "team-a.list" in listed and not listed & {"team-b.list", "other.list"}, listed
    page = secured.get("/schemas?limit=1", headers=basic("alice")).json()
    assert len(page) == 1 and page[0]["subject"] in alice, "pages are cut from what the caller may see"
    # One id, used by a subject alice may read and one she may not.
    shared_id = register(secured, "other.list2", schema_of("team_a_list"))
    assert shared_id == ids["team-a.list"], "same content, same id"
    assert secured.get(f"/schemas/ids/{shared_id}/subjects", headers=basic("alice")).json() == ["team-a.list"]
    versions = secured.get(f"/schemas/ids/{shared_id}/versions", headers=basic("alice")).json()
    assert versions == [{"subject": "team-a.list", "version": 1}], versions


def test_a_schema_id_is_readable_through_any_subject_that_uses_it(secured: NodeClient):
    b_id = register(secured, "team-b.ids", schema_of("team_b_ids"))
    assert secured.get(f"/schemas/ids/{b_id}", headers=basic("bob")).status == 200, "bob reads team-b"
    for path in (f"/schemas/ids/{b_id}", f"/schemas/ids/{b_id}/schema", f"/schemas/ids/{b_id}?fetchMaxId=true"):
        assert_refused(secured.get(path, headers=basic("alice")), 403, f"alice reads {path}")
    assert_refused(secured.get("/schemas/ids/99999", headers=basic("alice")), 403,
                   "an id no subject uses is for global readers")
    assert secured.get("/schemas/ids/99999", headers=basic("root")).json()["error_code"] == 40403


def test_global_config_and_mode_need_a_global_rule(secured: NodeClient):
    assert_refused(secured.put("/config", {"compatibility": "FULL"}, headers=basic("alice")), 403, "global level")
    assert_refused(secured.get("/config", headers=basic("alice")), 403, "global read")
    assert_refused(secured.put("/mode", {"mode": "READONLY"}, headers=basic("alice")), 403, "global mode")
    answer = secured.put("/config/team-a.cfg", {"compatibility": "FULL"}, headers=basic("alice"))
    assert answer.status == 200, f"alice sets her own subject's level: {answer.body!r}"
    assert secured.get("/config", headers=basic("root")).status == 200


def test_registering_with_an_explicit_id_needs_the_import_operation(secured: NodeClient):
    answer = secured.put("/mode/team-a.import", {"mode": "IMPORT"}, headers=basic("alice"))
    assert answer.status == 200, answer.body
    body = {"schema": schema_of("imported"), "id": 5000, "version": 1}
    assert_refused(secured.post("/subjects/team-a.import/versions", body, headers=basic("alice")), 403,
                   "alice may write but not import")
    assert "import" in secured.post("/subjects/team-a.import/versions", body,
                                    headers=basic("alice")).json()["message"]
    answer = secured.post("/subjects/team-a.import/versions", body, headers=basic("root"))
    assert answer.status == 200 and answer.json()["id"] == 5000, answer.body
    plain = secured.post("/subjects/team-a.import2/versions", {"schema": schema_of("p"), "id": -1},
                         headers=basic("alice"))
    assert plain.status == 200, "id -1 is no id: a plain write"


def test_a_bulk_import_needs_the_import_operation_on_the_whole_registry(secured: NodeClient):
    # Its entries may name any subjects: only a global import rule admits it.
    entry = {"subject": "team-a.bulk", "schema": schema_of("bulk"), "id": 5100, "version": 1}
    assert secured.put("/mode/team-a.bulk", {"mode": "IMPORT"}, headers=basic("alice")).status == 200
    assert_refused(secured.post("/import/schemas", {"schemas": [entry]}, headers=basic("alice")), 403,
                   "alice may write her subjects but not import into the registry")
    assert_refused(secured.post("/import/schemas", {"schemas": [entry]}), 401, "no credentials")
    assert secured.get("/subjects/team-a.bulk/versions", headers=basic("root")).status == 404, "nothing written"
    answer = secured.post("/import/schemas", {"schemas": [entry]}, headers=basic("root"))
    assert answer.status == 200 and answer.json()["results"] == [
        {"subject": "team-a.bulk", "version": 1, "id": 5100}], answer.body


def test_bulk_settings_need_the_import_operation_on_the_whole_registry(secured: NodeClient):
    # Its entries may name any subject, or the global config: only a global import rule admits it.
    body = {"settings": [{"subject": "team-a.bulkcfg", "config": {"compatibility": "NONE"}}]}
    assert secured.put("/config/team-a.bulkcfg", {"compatibility": "FULL"}, headers=basic("alice")).status == 200
    assert_refused(secured.post("/import/settings", body, headers=basic("alice")), 403,
                   "alice may configure her subjects but not import settings into the registry")
    assert_refused(secured.post("/import/settings", body), 401, "no credentials")
    assert secured.get("/config/team-a.bulkcfg", headers=basic("root")).json()["compatibilityLevel"] == "FULL", \
        "nothing written"
    answer = secured.post("/import/settings", body, headers=basic("root"))
    assert answer.status == 200 and answer.json()["results"][0]["config"]["compatibility"] == "NONE", answer.body


def test_rules_and_users_take_effect_when_their_files_change(files: dict[str, Path]):
    directory = files["dir"] / "reload"
    directory.mkdir()
    users, rules = directory / "users.properties", directory / "rules.json"
    users.write_text(users_file_line("carol", "old-pw", **CHEAP) + "\n")
    rules.write_text(json.dumps({"rules": [{"principal": "carol", "operations": ["read"], "subject": "x"}]}))
    with NodeClient(**{"authentication.method": "BASIC", "authentication.users.file": str(users),
                       "authorization.rules.file": str(rules)}) as client:
        old = {"Authorization": "Basic " + base64.b64encode(b"carol:old-pw").decode()}
        new = {"Authorization": "Basic " + base64.b64encode(b"carol:new-pw").decode()}
        assert_refused(client.post("/subjects/x/versions", {"schema": SCHEMA}, headers=old), 403, "read only")
        rules.write_text(json.dumps({"rules": [{"principal": "carol", "operations": ["*"], "subject": "x"}]}))
        wait_for(lambda: client.post("/subjects/x/versions", {"schema": SCHEMA}, headers=old).status == 200,
                 "the new rules to take effect")
        watched = client.bridge._door.guard.rules
        failures = watched.failed_reloads
        rules.write_text("{ not json")
        wait_for(lambda: watched.failed_reloads > failures, "the watcher to read the broken file")
        assert client.get("/subjects/x/versions", headers=old).status == 200, "a broken file keeps the old rules"
        users.write_text(users_file_line("carol", "new-pw", **CHEAP) + "\n")
        wait_for(lambda: client.get("/subjects/x/versions", headers=old).status == 401,
                 "the old password, remembered as verified, to be forgotten")
        assert client.get("/subjects/x/versions", headers=new).status == 200


def test_authentication_roles_limit_who_gets_in(files: dict[str, Path]):
    with NodeClient(**{"authentication.method": "BASIC", "authentication.users.file": str(files["users"]),
                       "authentication.roles": "admins"}) as client:
        assert_refused(client.get("/subjects", headers=basic("alice")), 403, "alice has no allowed role")
        assert client.get("/subjects", headers=basic("root")).status == 200


def wait_for(predicate, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


# ---- bearer tokens -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def issuer(tmp_path_factory: pytest.TempPathFactory) -> TokenIssuer:
    return TokenIssuer(tmp_path_factory.mktemp("oauth"))


@pytest.fixture(scope="module")
def bearer(issuer: TokenIssuer, files: dict[str, Path]) -> Iterator[NodeClient]:
    client = NodeClient(**{"authentication.method": "BEARER", "oauthbearer.jwks.endpoint.url": str(issuer.jwks_path),
                           "oauthbearer.expected.issuer": issuer.issuer,
                           "oauthbearer.expected.audience": "schema-registry,other",
                           "authorization.rules.file": str(files["rules"])})
    try:
        yield client
    finally:
        client.close()


def token_header(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_valid_token_names_its_subject_and_groups(bearer: NodeClient, issuer: TokenIssuer):
    alice = token_header(issuer.token("alice"))
    assert bearer.post("/subjects/team-a.jwt/versions", {"schema": SCHEMA}, headers=alice).status == 200
    assert_refused(bearer.post("/subjects/team-b.jwt/versions", {"schema": SCHEMA}, headers=alice), 403,
                   "the token's subject is authorized, not more")
    admin = token_header(issuer.token("olga", groups=["admins"], audience=["other"]))
    assert bearer.put("/config", {"compatibility": "NONE"}, headers=admin).status == 200, "groups are roles"


@pytest.mark.parametrize("case", ["expired", "issuer", "audience", "unknown key", "foreign key", "hs256",
                                  "no exp", "garbage", "basic"])
def test_tokens_that_cannot_be_trusted_get_401_and_write_nothing(bearer: NodeClient, issuer: TokenIssuer,
                                                                 case: str):
    headers = _untrusted(issuer, case)
    subject = f"team-a.bad-{case.replace(' ', '-')}"
    body = assert_refused(bearer.post(f"/subjects/{subject}/versions", {"schema": SCHEMA}, headers=headers),
                          401, case)
    if case == "expired":
        assert "expired" in body["message"], body
    root = token_header(issuer.token("olga", groups=["admins"]))
    assert subject not in bearer.get("/subjects", headers=root).json(), f"{case}: nothing written"


def _untrusted(issuer: TokenIssuer, case: str) -> dict[str, str]:
    if case == "expired":
        return token_header(issuer.token("alice", lifetime=-120))
    if case == "issuer":
        return token_header(issuer.token("alice", issuer="https://evil.test"))
    if case == "audience":
        return token_header(issuer.token("alice", audience="someone-else"))
    if case == "unknown key":
        return token_header(issuer.token("alice", kid="key-9"))
    if case == "foreign key":
        return token_header(issuer.token("alice", key=rsa.generate_private_key(public_exponent=65537,
                                                                              key_size=2048)))
    if case == "hs256":
        # Algorithm confusion: an HMAC token keyed with the issuer's public key, which a
        # verifier trusting the token's `alg` would accept. Made by hand: PyJWT refuses to.
        public_pem = issuer.key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
        head = _b64({"alg": "HS256", "typ": "JWT", "kid": issuer.kid})
        claims = _b64({"sub": "alice", "iss": issuer.issuer, "aud": "schema-registry",
                       "exp": int(time.time()) + 300})
        mac = hmac.new(public_pem, f"{head}.{claims}".encode(), hashlib.sha256).digest()
        return token_header(f"{head}.{claims}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}")
    if case == "no exp":
        return token_header(jwt.encode({"sub": "alice", "iss": issuer.issuer, "aud": "schema-registry"},
                                       issuer.key, algorithm="RS256", headers={"kid": issuer.kid}))
    if case == "garbage":
        return token_header("not.a.token")
    assert case == "basic"
    return basic("alice")


def _b64(document: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(document).encode()).rstrip(b"=").decode()


# ---- certificates --------------------------------------------------------------------------


def test_a_verified_client_certificate_is_a_principal(tmp_path: Path, files: dict[str, Path]):
    pki = Pki(tmp_path)
    server = pki.issue("registry")
    with NodeClient(**{"listeners": "https://127.0.0.1:8443", "ssl.keystore.location": str(server.pem_bundle()),
                       "ssl.truststore.location": str(pki.ca_pem), "ssl.client.authentication": "REQUIRED",
                       "authentication.method": "CERTIFICATE,BASIC",
                       "authentication.users.file": str(files["users"]),
                       "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/",
                       "authorization.rules.file": str(files["rules"])}) as client:
        alice = {"tls": {"client_cert_name": "CN=alice,O=Registry Tests", "client_cert_chain": []}}
        assert client.post("/subjects/team-a.cert/versions", {"schema": SCHEMA}, extensions=alice).status == 200
        assert_refused(client.post("/subjects/team-b.cert/versions", {"schema": SCHEMA}, extensions=alice), 403,
                       "the certificate's principal is authorized")
        assert_refused(client.get("/subjects"), 401, "no certificate, no header")
        answer = client.get("/subjects", headers=basic("bob"), extensions=alice)
        assert answer.status == 200 and "team-a.cert" in answer.json(), "a header, when sent, decides"


# ---- forwarded identities ------------------------------------------------------------------


def signed(principal: Principal, method: str, target: str, body: bytes, secret: bytes = b"cluster-secret"
           ) -> dict[str, str]:
    identity = ForwardedIdentity(secret, frozenset(), CertificatePrincipals("DEFAULT"), signs=True)
    return identity.headers(principal, "192.0.2.7:4242", "http://follower:8081", method, target, body)


def test_the_leader_authorizes_the_forwarded_caller_not_the_follower(secured: NodeClient):
    body = json.dumps({"schema": SCHEMA}).encode()
    alice = Principal("alice", "BASIC", frozenset({"developers"}))
    ok = secured.post("/subjects/team-a.fwd/versions", body,
                      headers=signed(alice, "POST", "/subjects/team-a.fwd/versions", body))
    assert ok.status == 200, f"a member's claim for alice, on her subject: {ok.body!r}"
    denied = secured.post("/subjects/team-b.fwd/versions", body,
                          headers=signed(alice, "POST", "/subjects/team-b.fwd/versions", body))
    assert_refused(denied, 403, "alice's rights decide, not the forwarding node's")
    forged = secured.post("/subjects/team-b.fwd/versions", body,
                          headers=signed(Principal("root", "BASIC", frozenset({"admins"})), "POST",
                                         "/subjects/team-b.fwd/versions", body, secret=b"guessed"))
    assert_refused(forged, 401, "a client naming root without the cluster's secret")
    bare = {"X-Forwarded-Principal": signed(alice, "POST", "/x", b"")["X-Forwarded-Principal"]}
    assert_refused(secured.post("/subjects/team-a.fwd2/versions", body, headers={**bare, **basic("alice")}), 401,
                   "a claim without proof is refused, even beside valid credentials")
    tampered = signed(alice, "POST", "/subjects/team-a.fwd3/versions", body)
    assert_refused(secured.post("/subjects/team-a.fwd3/versions", json.dumps({"schema": "\"int\""}).encode(),
                                headers=tampered), 401, "the signature covers the body")
    listed = subjects_as(secured, "root")
    assert "team-b.fwd" not in listed and "team-a.fwd2" not in listed and "team-a.fwd3" not in listed


# ---- audit and metrics ---------------------------------------------------------------------


def test_every_accepted_or_denied_change_is_audited(secured: NodeClient, files: dict[str, Path]):
    register(secured, "team-a.audit", user="alice")
    secured.post("/subjects/team-b.audit/versions", {"schema": SCHEMA}, headers=basic("alice"))
    secured.delete("/subjects/team-a.audit", headers=basic("alice", "wrong"))
    secured.get("/subjects/team-a.audit/versions", headers=basic("alice"))  # a read: not audited
    body = json.dumps({"schema": SCHEMA}).encode()
    secured.post("/subjects/team-a.audit-fwd/versions", body,
                 headers=signed(Principal("alice", "BASIC"), "POST", "/subjects/team-a.audit-fwd/versions", body))

    def lines() -> list[dict]:
        return [json.loads(line) for line in files["audit"].read_text().splitlines()]

    wait_for(lambda: any(e["resource"] == "subject:team-a.audit-fwd" for e in lines()), "the audit lines")
    events = {(e["resource"], e["result"]): e for e in lines()}
    accepted = events[("subject:team-a.audit", "accepted")]
    assert accepted["principal"] == "alice" and accepted["authentication"] == "BASIC" and accepted["status"] == 200
    assert accepted["operation"] == "write" and accepted["method"] == "POST" and accepted["client"]
    assert accepted["target"] == "/subjects/team-a.audit/versions" and accepted["time"].endswith("Z")
    forbidden = events[("subject:team-b.audit", "denied")]
    assert forbidden["principal"] == "alice" and forbidden["status"] == 403
    unauthenticated = events[("subject:team-a.audit", "denied")]
    assert unauthenticated["principal"] == "" and unauthenticated["status"] == 401
    assert unauthenticated["operation"] == "delete"
    forwarded = events[("subject:team-a.audit-fwd", "accepted")]
    assert forwarded["principal"] == "alice" and forwarded["forwarded_by"] == "http://follower:8081"
    assert forwarded["client"] == "192.0.2.7:4242", "the original caller's address, not the follower's"
    assert not any(e["method"] == "GET" for e in lines()), "reads are not audited"


def test_metrics_count_requests_and_rejections(secured: NodeClient):
    secured.get("/subjects")
    # Its own id read: the node is shared by the module's tests, and run alone this one
    # read no id before (it relied on the tests before it).
    schema_id = register(secured, "team-a.metrics")
    assert secured.get(f"/schemas/ids/{schema_id}", headers=basic("alice")).status == 200
    secured.post("/subjects/team-b.m/versions", {"schema": SCHEMA}, headers=basic("alice"))
    text = secured.get("/metrics", headers=basic("root")).body.decode()
    assert 'schema_registry_http_rejected_requests_total{reason="unauthenticated"}' in text
    assert 'schema_registry_http_rejected_requests_total{reason="forbidden"}' in text
    assert 'schema_registry_http_requests_total{method="POST",route="subjects.register",status="403"}' in text
    assert 'schema_registry_http_request_duration_seconds_count{method="GET",route="schemas.get_schema"}' in text
    assert 'schema_registry_versions{schema_type="AVRO"}' in text and "schema_registry_leader 1.0" in text


def under_rules(files: dict[str, Path], name: str) -> tuple[NodeClient, Path]:
    """A node of its own with Basic and `RULES` in a rules file of its own (which the
    test may change)."""
    rules = files["dir"] / f"{name}-rules.json"
    rules.write_text(json.dumps(RULES))
    return NodeClient(**{"authentication.method": "BASIC", "authentication.users.file": str(files["users"]),
                         "authorization.rules.file": str(rules)}), rules


def test_remembered_fast_path_decisions_follow_the_log_and_the_rules(files: dict[str, Path]):
    client, rules = under_rules(files, "shortcut")
    with client:
        schema_id = register(client, "team-b.short", schema_of("short"))
        for _ in range(2):  # the second read is answered from what the first one remembered
            assert_refused(client.get(f"/schemas/ids/{schema_id}", headers=basic("alice")), 403, "not hers yet")
            assert client.get(f"/schemas/ids/{schema_id}", headers=basic("bob")).status == 200
        register(client, "team-a.short", schema_of("short"))  # the same id, now under alice's subject too
        assert client.get(f"/schemas/ids/{schema_id}", headers=basic("alice")).status == 200, \
            "a decision made before the log moved is not reused"
        rules.write_text(json.dumps({"rules": RULES["rules"][2:]}))  # bob and alice lose their rules
        wait_for(lambda: client.get(f"/schemas/ids/{schema_id}", headers=basic("bob")).status == 403,
                 "the new rules to revoke a remembered decision")
        assert_refused(client.get(f"/schemas/ids/{schema_id}", headers=basic("alice")), 403, "revoked")


def test_only_a_reader_the_guard_remembers_admitting_is_answered_at_once(files: dict[str, Path]):
    client, _ = under_rules(files, "at-once")
    with client:
        schema_id = register(client, "team-b.once", schema_of("once"))
        given: list[bool] = []
        at_once = client.at_once

        def recording(*request):
            answer = at_once(*request)
            given.append(answer is not None)
            return answer

        client.at_once = recording
        for user, status in (("bob", 200), ("alice", 403)):
            for _ in range(2):
                assert client.get(f"/schemas/ids/{schema_id}", headers=basic(user)).status == status
        assert given == [False, True, False, False], "bob's second read only: his credential and decision remembered"
        assert_refused(client.get(f"/schemas/ids/{schema_id}", headers=basic("bob", "wrong")), 401, "a wrong password")
        assert_refused(client.get(f"/schemas/ids/{schema_id}"), 401, "no credential")
        for _ in range(2):  # a kept read answer goes by the guard's whole way in with authentication on
            assert client.get("/subjects", headers=basic("bob")).status == 200
        assert given[4:] == [False] * 4
