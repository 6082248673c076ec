"""The pieces of security that need no node: password files, rules, certificate principal
mapping, the route policy map and forwarded identities."""
from __future__ import annotations

import time

import pytest

from registry.http.app import create_app
from registry.http.forward import Forwarder
from registry.http.openapi import served_operations
from registry.http.security.certificates import CertificatePrincipals
from registry.http.security.forwarded import ForwardedIdentity, Untrusted
from registry.http.security.operations import Operation
from registry.http.security.passwords import hash_password, parse_users, users_file_line
from registry.http.security.policy import ROUTE_POLICIES, policy_for
from registry.http.security.principal import Principal
from registry.http.security.rules import parse_rules
from registry.node import build_node
from registry.settings import ConfigError, load_settings
from store.memory_log import MemoryLog

CHEAP = {"time_cost": 1, "memory_kib": 8192}


# ---- users files -----------------------------------------------------------------------


def test_a_users_file_line_checks_its_password_and_carries_its_roles():
    line = users_file_line("alice", "s3cret: with, commas", ["developers", "admins"], **CHEAP)
    users = parse_users(line.encode())
    user = users.check("alice", "s3cret: with, commas")
    assert user is not None and user.roles == {"developers", "admins"}, "the right password admits, with roles"
    assert users.check("alice", "s3cret") is None, "a wrong password does not"
    assert users.check("mallory", "s3cret: with, commas") is None, "an unknown name does not"


def test_names_with_separators_and_non_ascii_survive_the_properties_format():
    for name in ("a user", "ops:team", "équipe", "x=y"):
        users = parse_users(users_file_line(name, "pw", **CHEAP).encode())
        assert users.check(name, "pw") is not None, f"{name!r} reads back as written"


@pytest.mark.parametrize("credential", ["plain-password", "MD5:5f4dcc3b5aa765d61d8327deb882cf99",
                                        "CRYPT:adpexzg3FUZAk", "$2b$12$abcdefghijklmnopqrstuv"])
def test_credentials_that_are_not_salted_argon2id_hashes_are_refused(credential: str):
    with pytest.raises(ConfigError, match="argon2id"):
        parse_users(f"alice: {credential},admins\n".encode())


def test_hashes_are_salted():
    assert hash_password("same", **CHEAP) != hash_password("same", **CHEAP), "each hash has a fresh salt"


# ---- rules -----------------------------------------------------------------------------

ALICE = Principal("alice", "BASIC")
OPS = Principal("olga", "BEARER", frozenset({"ops"}))


def rules(text: str):
    return parse_rules(text.encode())


def test_subjects_are_chosen_exactly_by_prefix_or_by_a_whole_name_regex():
    parsed = rules('{"rules": ['
                   '{"principal": "alice", "operations": ["read"], "subject": "exact"},'
                   '{"principal": "User:alice", "operations": ["write"], "subject_prefix": "team-a."},'
                   '{"principal": "alice", "operations": ["delete"], "subject_regex": "tmp-[0-9]+"}]}')
    assert parsed.allows(ALICE, Operation.READ, "exact") and not parsed.allows(ALICE, Operation.READ, "exact2")
    assert parsed.allows(ALICE, Operation.WRITE, "team-a.orders") and not parsed.allows(ALICE, Operation.WRITE,
                                                                                          "team-b.orders")
    assert parsed.allows(ALICE, Operation.DELETE, "tmp-12"), "the regex matches the whole name"
    assert not parsed.allows(ALICE, Operation.DELETE, "tmp-12x"), "not a prefix of it"
    assert not parsed.allows(ALICE, Operation.READ, "team-a.orders"), "rules grant only what they name"
    assert not parsed.allows(ALICE, Operation.WRITE, None), "no rule is global"


def test_groups_anyone_and_global_rules():
    parsed = rules('{"rules": ['
                   '{"principal": "Group:ops", "operations": ["*"], "subject_regex": ".*", "global": true},'
                   '{"principal": "*", "operations": ["read"], "subject": "shared"}]}')
    for operation in Operation:
        assert parsed.allows(OPS, operation, "anything") and parsed.allows(OPS, operation, None), operation
    assert parsed.allows(ALICE, Operation.READ, "shared"), "`*` is anyone"
    assert not parsed.allows(ALICE, Operation.READ, None) and not parsed.allows(ALICE, Operation.WRITE, "shared")


def test_karapace_permissions_read_as_karapace_matches_them():
    parsed = rules('{"users": [], "permissions": ['
                   '{"username": "alice", "operation": "Write", "resource": "Subject:team-a.*"},'
                   '{"username": "alice", "operation": "Read", "resource": "Config:"},'
                   '{"username": "root", "operation": "Write", "resource": ".*"}]}')
    assert parsed.allows(ALICE, Operation.WRITE, "team-a.x") and parsed.allows(ALICE, Operation.READ, "team-a.x")
    assert parsed.allows(ALICE, Operation.CONFIG, "team-a.x"), "Karapace's Write covers a subject's config"
    assert not parsed.allows(ALICE, Operation.IMPORT, "team-a.x"), "but not imports (Karapace has none)"
    assert parsed.allows(ALICE, Operation.WRITE, "team-a.x.y"), "Karapace matches from the start, not whole"
    assert parsed.allows(ALICE, Operation.READ, None) and not parsed.allows(ALICE, Operation.CONFIG, None), \
        "Config: with Read is a global read"
    root = Principal("root", "BASIC")
    assert parsed.allows(root, Operation.CONFIG, None) and parsed.allows(root, Operation.DELETE, "x")


@pytest.mark.parametrize("text, problem", [
    ('{"rules": [{"principal": "a", "operations": ["fly"], "subject": "x"}]}', "unknown operation"),
    ('{"rules": [{"principal": "a", "operations": ["read"]}]}', "say what the rule applies to"),
    ('{"rules": [{"principal": "a", "operations": ["read"], "subject": "x", "subject_prefix": "y"}]}', "not several"),
    ('{"rules": [{"principal": "a", "operations": ["read"], "subject_regex": "(a"}]}', "bad regex"),
    ('{"rules": [{"principal": "", "operations": ["read"], "subject": "x"}]}', "principal"),
    ('{"rules": [{"principal": "a", "operations": ["read"], "subject": "x", "subjects": "y"}]}', "unknown keys"),
    ('{"permissions": [{"username": "a", "operation": "Admin", "resource": ".*"}]}', "Read or Write"),
    ('{"rule": []}', "unknown top-level"),
    ('[]', "JSON object"),
    ('{', "not JSON"),
])
def test_unusable_rules_are_refused_with_the_entry_named(text: str, problem: str):
    with pytest.raises(ConfigError, match=problem):
        rules(text)


def test_regexes_run_in_linear_time_on_hostile_subjects():
    parsed = rules('{"rules": [{"principal": "alice", "operations": ["read"], "subject_regex": "(a+)+$"}]}')
    began = time.perf_counter()
    assert not parsed.allows(ALICE, Operation.READ, "a" * 5000 + "!")
    assert time.perf_counter() - began < 0.5, "RE2: no catastrophic backtracking on a caller's subject"


# ---- certificate principals ----------------------------------------------------------------


def test_kafkas_principal_mapping_rules():
    mapper = CertificatePrincipals(r"RULE:^CN=([^,]*),OU=Service.*$/svc-$1/L, RULE:^CN=([^,]*),.*$/$1/, DEFAULT")
    assert mapper.name("CN=Orders,OU=Services,O=Acme") == "svc-orders", "the first matching rule, lower-cased"
    assert mapper.name("CN=alice,O=Acme") == "alice"
    assert mapper.name("O=Acme") == "O=Acme", "DEFAULT keeps the subject"
    assert CertificatePrincipals("RULE:^CN=(.*)$/$1/U").name("O=Acme") is None, "no rule, no principal"
    assert CertificatePrincipals("DEFAULT").name("CN=a,O=b") == "CN=a,O=b"
    with pytest.raises(ConfigError):
        CertificatePrincipals("RULE:[/x/")


# ---- the route policy map ----------------------------------------------------------------


@pytest.fixture(scope="module")
def url_map():
    node = build_node(load_settings(environ={}), MemoryLog())
    forwarder = Forwarder(1.0)
    try:
        yield create_app(node, forwarder).url_map
    finally:
        forwarder.close()
        node.close()


def test_every_route_the_app_serves_has_an_authorization_policy(url_map):
    served = {(endpoint, method) for _, method, endpoint in served_operations(url_map)}
    unmapped = sorted(served - set(ROUTE_POLICIES))
    assert not unmapped, f"routes without a policy are denied to everyone; map them in policy.py: {unmapped}"
    stale = sorted(set(ROUTE_POLICIES) - served)
    assert not stale, f"policies for routes the app does not serve: {stale}"


def test_an_unmapped_route_has_no_policy_and_head_and_options_have_one():
    assert policy_for("subjects.brand_new_route", "POST") is None, "unmapped: no policy, so denied"
    assert policy_for("subjects.list_versions", "HEAD") == policy_for("subjects.list_versions", "GET")
    assert policy_for("subjects.register", "OPTIONS").operation is Operation.READ


# ---- forwarded identities -----------------------------------------------------------------


def _scope(headers: dict[str, str]) -> dict:
    return {"headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}


def test_a_signed_identity_is_believed_and_covers_the_very_request():
    identity = ForwardedIdentity(b"cluster-secret", frozenset(), CertificatePrincipals("DEFAULT"), signs=True)
    headers = identity.headers(ALICE, "10.0.0.1:5555", "http://follower:8081", "POST", "/subjects/a/versions",
                               b'{"schema": "x"}')
    claim = identity.claim(_scope(headers))
    assert claim is not None and claim.principal == ALICE and claim.client == "10.0.0.1:5555"
    identity.check(claim, "POST", "/subjects/a/versions", b'{"schema": "x"}')
    for method, target, body in (("POST", "/subjects/a/versions", b'{"schema": "y"}'),
                                 ("DELETE", "/subjects/a/versions", b'{"schema": "x"}'),
                                 ("POST", "/subjects/b/versions", b'{"schema": "x"}')):
        with pytest.raises(Untrusted, match="does not match"):
            identity.check(claim, method, target, body)


def test_a_claim_without_a_members_proof_is_refused():
    member = ForwardedIdentity(b"cluster-secret", frozenset(), CertificatePrincipals("DEFAULT"), signs=True)
    headers = member.headers(ALICE, "", "", "POST", "/x", b"")
    outsider = ForwardedIdentity(b"another-secret", frozenset(), CertificatePrincipals("DEFAULT"), signs=True)
    claim = outsider.claim(_scope(headers))
    with pytest.raises(Untrusted):
        outsider.check(claim, "POST", "/x", b"")
    unsigned = {k: v for k, v in headers.items() if k != "X-Forwarded-Signature"}
    with pytest.raises(Untrusted, match="only from another node"):
        member.claim(_scope(unsigned))
    no_secret = ForwardedIdentity(b"", frozenset(), CertificatePrincipals("DEFAULT"), signs=False)
    with pytest.raises(Untrusted):
        no_secret.claim(_scope(headers))


def test_an_old_signature_is_refused(monkeypatch: pytest.MonkeyPatch):
    identity = ForwardedIdentity(b"cluster-secret", frozenset(), CertificatePrincipals("DEFAULT"), signs=True)
    headers = identity.headers(ALICE, "", "", "POST", "/x", b"")
    later = time.time() + 600
    monkeypatch.setattr("registry.http.security.forwarded.time.time", lambda: later)
    with pytest.raises(Untrusted, match="too old"):
        identity.claim(_scope(headers))


def test_a_member_certificate_vouches_without_a_signature():
    mapper = CertificatePrincipals(r"RULE:^CN=([^,]*),.*$/$1/")
    identity = ForwardedIdentity(b"", frozenset({"node-2"}), mapper, signs=True)
    headers = identity.headers(ALICE, "", "", "POST", "/x", b"")
    assert "X-Forwarded-Signature" not in headers, "no secret, no signature"
    member = {**_scope(headers), "extensions": {"tls": {"client_cert_name": "CN=node-2,O=Acme"}}}
    claim = identity.claim(member)
    assert claim is not None and claim.principal == ALICE
    identity.check(claim, "POST", "/x", b"anything")  # the connection itself is the proof
    stranger = {**_scope(headers), "extensions": {"tls": {"client_cert_name": "CN=alice,O=Acme"}}}
    with pytest.raises(Untrusted):
        identity.claim(stranger)
