"""Proof, not examples: every route the server answers, asked by every kind of caller,
reaches the same decision by every way a request can be answered (issue 47).

Routes come from the app's own URL map: a route without a sample here fails
`test_every_route_has_a_sample`. Callers: nobody, HTTP Basic, a bearer token, a client
certificate, a member's forwarded identity, and a forwarded identity with a bad
signature; each of the real ones as a principal the rules allow and as one they refuse.
Each request is sent several times, to the listener's answers at once and to the
bridge without them, so that whatever an earlier answer left ready (the id path's
answers, the read memo, remembered credentials and decisions) answers the later ones.
Every answer is attributed to the one way that gave it (`Recorder`): an answer given
by a way the recorder does not know fails the test, so a new shortcut must be added
here, and is then held to the same decisions."""
from __future__ import annotations

import base64
import inspect
import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import registry.http.asgi as asgi_module
from registry.http.security.certificates import CertificatePrincipals
from registry.http.security.forwarded import ForwardedIdentity
from registry.http.security.passwords import users_file_line
from registry.http.security.principal import Principal
from tests.asgi_client import Answer, AsgiClient, NodeClient
from tests.pki import Pki, TokenIssuer

SECRET = b"cluster-secret"
CHEAP = {"time_cost": 1, "memory_kib": 8192}
# allie may do anything to team-a.* and to the registry as a whole; rex may do nothing
# (a listing shows him what he may read: nothing).
RULES = {"rules": [{"principal": "allie", "operations": ["*"], "subject_prefix": "team-a.", "global": True},
                   {"principal": "allie", "operations": ["*"], "subject_prefix": ":.team-a:"}]}
RECORD = '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}'

# What a route acts on, as the expected decision for a refused principal follows from it:
# `subject`, `id` and `global` refuse him (403); `open` admits any authenticated caller;
# `skip` (authentication.skip.paths) admits anyone at all.
SUBJECT, ID, GLOBAL, OPEN, SKIP = "subject", "id", "global", "open", "skip"


@dataclass(frozen=True)
class Sample:
    method: str
    target: str
    body: Any
    acts_on: str


# One request for each (endpoint, method) the URL map serves. Changes act on subjects of
# their own, so that the reads keep finding what they read.
SAMPLES: dict[tuple[str, str], Sample] = {
    ("cluster.root", "GET"): Sample("GET", "/", None, OPEN),
    ("cluster.root", "POST"): Sample("POST", "/", {}, OPEN),
    ("cluster.health", "GET"): Sample("GET", "/health", None, SKIP),
    ("cluster.ready", "GET"): Sample("GET", "/ready", None, SKIP),
    ("cluster.leader", "GET"): Sample("GET", "/leader", None, GLOBAL),
    ("cluster.metadata_id", "GET"): Sample("GET", "/v1/metadata/id", None, OPEN),
    ("cluster.metadata_version", "GET"): Sample("GET", "/v1/metadata/version", None, OPEN),
    ("cluster.metadata_deployment", "GET"): Sample("GET", "/v1/metadata/deployment", None, OPEN),
    ("observability.metrics_text", "GET"): Sample("GET", "/metrics", None, GLOBAL),
    ("observability.openapi", "GET"): Sample("GET", "/openapi.json", None, OPEN),
    ("ui.ui_index", "GET"): Sample("GET", "/ui", None, OPEN),
    ("ui.ui_file", "GET"): Sample("GET", "/ui/app.js", None, OPEN),
    ("associations.create", "POST"): Sample("POST", "/associations", {
        "resourceName": "orders", "resourceNamespace": "lkc-1", "resourceId": "team-a.res", "resourceType": "topic",
        "associations": [{"subject": "team-a.assoc", "associationType": "value"}]}, GLOBAL),
    ("associations.by_resource_name", "GET"): Sample("GET", "/associations/resources/lkc-1/orders", None, OPEN),
    ("associations.by_resource_id", "GET"): Sample("GET", "/associations/resources/team-a.res", None, OPEN),
    ("associations.delete", "DELETE"): Sample("DELETE", "/associations/resources/team-a.gone", None, GLOBAL),
    ("associations.not_served", "PUT"): Sample("PUT", "/associations/resources/team-a.res", {}, GLOBAL),
    ("associations.not_served", "POST"): Sample("POST", "/associations:batch", {}, GLOBAL),
    ("associations.by_subject", "GET"): Sample("GET", "/associations/subjects/team-a.orders", None, SUBJECT),
    ("subjects.check_all_versions", "POST"): Sample(
        "POST", "/compatibility/subjects/team-a.orders/versions", {"schema": RECORD}, SUBJECT),
    ("subjects.check_version", "POST"): Sample(
        "POST", "/compatibility/subjects/team-a.orders/versions/latest", {"schema": RECORD}, SUBJECT),
    ("config.get_config", "GET"): Sample("GET", "/config/team-a.orders", None, SUBJECT),
    ("config.put_config", "PUT"): Sample("PUT", "/config/team-a.cfg", {"compatibility": "NONE"}, SUBJECT),
    ("config.delete_config", "DELETE"): Sample("DELETE", "/config/team-a.cfg", None, SUBJECT),
    ("config.get_mode", "GET"): Sample("GET", "/mode", None, GLOBAL),
    ("config.put_mode", "PUT"): Sample("PUT", "/mode/team-a.mode", {"mode": "READWRITE"}, SUBJECT),
    ("config.delete_mode", "DELETE"): Sample("DELETE", "/mode/team-a.mode", None, SUBJECT),
    ("contexts.list_contexts", "GET"): Sample("GET", "/contexts", None, GLOBAL),
    ("contexts.delete_context", "DELETE"): Sample("DELETE", "/contexts/.empty", None, GLOBAL),
    ("imports.import_schemas", "POST"): Sample("POST", "/import/schemas", {"schemas": []}, GLOBAL),
    ("imports.import_settings", "POST"): Sample("POST", "/import/settings", {"settings": []}, GLOBAL),
    ("schemas.list_schemas", "GET"): Sample("GET", "/schemas", None, OPEN),
    ("schemas.schema_types", "GET"): Sample("GET", "/schemas/types", None, OPEN),
    ("schemas.get_schema_by_guid", "GET"): Sample("GET", "/schemas/guids/00000000-0000-0000-0000-000000000000",
                                                  None, GLOBAL),
    ("schemas.get_ids_of_guid", "GET"): Sample("GET", "/schemas/guids/00000000-0000-0000-0000-000000000000/ids",
                                               None, GLOBAL),
    ("schemas.get_schema", "GET"): Sample("GET", "/schemas/ids/1", None, ID),
    ("schemas.get_schema_text", "GET"): Sample("GET", "/schemas/ids/1/schema", None, ID),
    ("schemas.get_schema_subjects", "GET"): Sample("GET", "/schemas/ids/1/subjects", None, ID),
    ("schemas.get_schema_versions", "GET"): Sample("GET", "/schemas/ids/1/versions", None, ID),
    ("subjects.list_subjects", "GET"): Sample("GET", "/subjects", None, OPEN),
    ("subjects.lookup_schema", "POST"): Sample("POST", "/subjects/team-a.orders", {"schema": RECORD}, SUBJECT),
    ("subjects.delete_subject", "DELETE"): Sample("DELETE", "/subjects/team-a.del", None, SUBJECT),
    ("subjects.latest_with_metadata", "GET"): Sample("GET", "/subjects/team-a.orders/metadata", None, SUBJECT),
    ("subjects.list_versions", "GET"): Sample("GET", "/subjects/team-a.orders/versions", None, SUBJECT),
    ("subjects.register", "POST"): Sample("POST", "/subjects/team-a.orders/versions", {"schema": RECORD}, SUBJECT),
    ("subjects.get_version", "GET"): Sample("GET", "/subjects/team-a.orders/versions/1", None, SUBJECT),
    ("subjects.delete_version", "DELETE"): Sample("DELETE", "/subjects/team-a.del/versions/1", None, SUBJECT),
    ("subjects.referenced_by", "GET"): Sample("GET", "/subjects/team-a.orders/versions/1/referencedby", None,
                                              SUBJECT),
    ("subjects.get_version_schema", "GET"): Sample("GET", "/subjects/team-a.orders/versions/1/schema", None,
                                                   SUBJECT),
    ("subjects.modify_tags", "POST"): Sample("POST", "/subjects/team-a.orders/versions/1/tags", {}, SUBJECT),
}
# Requests under `/contexts/{context}/`, which stand for the qualified ones they are
# rewritten to before routing (Confluent's ContextFilter): decided on that one.
CONTEXT_SAMPLES = [
    Sample("POST", "/contexts/.team-a/subjects/orders/versions", {"schema": RECORD}, SUBJECT),
    Sample("GET", "/contexts/.team-a/subjects/orders/versions/latest", None, SUBJECT),
    Sample("GET", "/contexts/.team-a/schemas/ids/1", None, ID),
    Sample("GET", "/contexts/.team-a/config", None, SUBJECT),
    Sample("POST", "/contexts/.team-a/subjects/orders", {"schema": RECORD}, SUBJECT),
]
# Routes whose view answers several methods, each sampled above under its own method.
_METHODS_SERVED = {"GET", "POST", "PUT", "DELETE"}


class Recorder:
    """Which way answered each request: every way the bridge has of answering is wrapped,
    and each answer must come from exactly one of them."""

    WAYS = ("at_once", "lane", "fast", "memo", "direct", "flask", "refused")

    def __init__(self, client: NodeClient, monkeypatch: pytest.MonkeyPatch) -> None:
        self.marks: list[str] = []
        self.seen: Counter[str] = Counter()
        bridge = client.bridge
        self._inside_at_once = False

        def wrap(owner: Any, name: str, way: str, answered: Callable[[Any], bool]) -> None:
            original = getattr(owner, name)

            def wrapped(*args: Any, **kwargs: Any) -> Any:
                result = original(*args, **kwargs)
                if not self._inside_at_once and answered(result):
                    self.marks.append(way)
                return result

            async def wrapped_async(*args: Any, **kwargs: Any) -> Any:
                result = await original(*args, **kwargs)
                if not self._inside_at_once and answered(result):
                    self.marks.append(way)
                return result

            monkeypatch.setattr(owner, name, wrapped_async if inspect.iscoroutinefunction(original) else wrapped)

        at_once = bridge.answer_at_once

        def recorded_at_once(*args: Any) -> Any:
            self._inside_at_once = True
            try:
                result = at_once(*args)
            finally:
                self._inside_at_once = False
            if result is not None:
                self.marks.append("at_once")
            return result

        client.at_once = recorded_at_once
        wrap(bridge, "_plain_read", "lane", lambda r: r is not None)
        wrap(bridge, "_answer_fast", "fast", bool)
        if bridge._memo is not None:
            wrap(bridge._memo, "get", "memo", lambda r: r is not None)
        if bridge._direct is not None:
            wrap(bridge._direct, "answer", "direct", lambda r: r is not None)
            wrap(bridge._direct, "answer_on_loop", "direct", lambda r: r is not None)
        wrap(bridge, "_call_wsgi", "flask", lambda r: True)
        wrap(asgi_module, "_send_error", "refused", lambda r: True)

    def answered(self, ask: Callable[[], Answer], what: str) -> Answer:
        self.marks.clear()
        answer = ask()
        assert len(self.marks) == 1, f"{what}: answered by {self.marks or 'a way this test does not know'}"
        self.seen[self.marks[0]] += 1
        return answer


@dataclass(frozen=True)
class Caller:
    name: str
    headers: Callable[[Sample], dict[str, str]]
    extensions: dict[str, Any] | None
    expect: str  # "admitted" | "refused" | "unauthenticated"


def decision(status: int) -> str:
    return {401: "unauthenticated", 403: "refused"}.get(status, "admitted")


def expected(caller: Caller, sample: Sample) -> str:
    if sample.acts_on == SKIP:
        return "admitted"
    if caller.expect == "refused" and sample.acts_on == OPEN:
        return "admitted"
    return caller.expect


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NodeClient, list[Caller]]]:
    directory = tmp_path_factory.mktemp("every-path")
    users, rules = directory / "users", directory / "rules.json"
    users.write_text("\n".join([users_file_line("allie", "allie-pw", **CHEAP),
                                users_file_line("rex", "rex-pw", **CHEAP)]) + "\n")
    rules.write_text(json.dumps(RULES))
    (directory / "pki").mkdir()
    (directory / "oauth").mkdir()
    pki, issuer = Pki(directory / "pki"), TokenIssuer(directory / "oauth")
    server = pki.issue("registry")
    client = NodeClient(**{
        "listeners": "https://127.0.0.1:8443", "ssl.keystore.location": str(server.pem_bundle()),
        "ssl.truststore.location": str(pki.ca_pem), "ssl.client.authentication": "REQUESTED",
        "authentication.method": "BASIC,BEARER,CERTIFICATE", "authentication.users.file": str(users),
        "oauthbearer.jwks.endpoint.url": str(issuer.jwks_path), "oauthbearer.expected.issuer": issuer.issuer,
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/",
        "authorization.rules.file": str(rules), "inter.instance.secret": SECRET.decode()})
    identity = ForwardedIdentity(SECRET, frozenset(), CertificatePrincipals("DEFAULT"), signs=True)
    forger = ForwardedIdentity(b"guessed", frozenset(), CertificatePrincipals("DEFAULT"), signs=True)

    def body_of(sample: Sample) -> bytes:
        return b"" if sample.body is None else json.dumps(sample.body).encode()

    def forwarded(name: str, by: ForwardedIdentity) -> Callable[[Sample], dict[str, str]]:
        return lambda s: by.headers(Principal(name, "BASIC"), "192.0.2.1:1", "http://follower:8081", s.method,
                                    s.target, body_of(s))

    def basic(user: str) -> Callable[[Sample], dict[str, str]]:
        value = "Basic " + base64.b64encode(f"{user}:{user}-pw".encode()).decode()
        return lambda s: {"Authorization": value}

    def bearer(user: str) -> Callable[[Sample], dict[str, str]]:
        value = f"Bearer {issuer.token(user, lifetime=3600)}"
        return lambda s: {"Authorization": value}

    def certificate(user: str) -> dict[str, Any]:
        return {"tls": {"client_cert_name": f"CN={user},O=Registry Tests", "client_cert_chain": []}}

    def nothing(sample: Sample) -> dict[str, str]:
        return {}

    callers = [Caller("nobody", nothing, None, "unauthenticated"),
               Caller("forged forwarded allie", forwarded("allie", forger), None, "unauthenticated")]
    for user, outcome in (("allie", "admitted"), ("rex", "refused")):
        callers += [Caller(f"basic {user}", basic(user), None, outcome),
                    Caller(f"bearer {user}", bearer(user), None, outcome),
                    Caller(f"certificate {user}", nothing, certificate(user), outcome),
                    Caller(f"forwarded {user}", forwarded(user, identity), None, outcome)]
    try:
        # What the reads read: id 1 is team-a.orders' alone; team-a.del is there to be deleted.
        for subject in ("team-a.orders", "team-a.del"):
            answer = client.post(f"/subjects/{subject}/versions", {"schema": RECORD}, headers=basic("allie")(None))
            assert answer.status == 200, answer.body
        yield client, callers
    finally:
        client.close()


def test_every_route_has_a_sample(secured: tuple[NodeClient, list[Caller]]):
    client, _ = secured
    app = client.bridge._wsgi_app.__self__
    served = {(rule.endpoint, method) for rule in app.url_map.iter_rules()
              for method in rule.methods & _METHODS_SERVED if rule.endpoint != "static"}
    assert served == set(SAMPLES), (f"routes without a sample: {sorted(served - set(SAMPLES))}; "
                                    f"samples without a route: {sorted(set(SAMPLES) - served)}")


def test_every_caller_gets_one_decision_on_every_route_by_every_way(
        secured: tuple[NodeClient, list[Caller]], monkeypatch: pytest.MonkeyPatch):
    client, callers = secured
    recorder = Recorder(client, monkeypatch)
    without_at_once = AsgiClient(client.bridge, None)
    failures = []
    samples = [(endpoint, sample) for (endpoint, _), sample in SAMPLES.items()]
    samples += [("subjects.lookup_schema" if s.target.endswith("orders") and s.method == "POST" else "rewritten", s)
                for s in CONTEXT_SAMPLES]
    for endpoint, sample in samples:
        for caller in callers:
            want = expected(caller, sample)
            statuses = []
            for attempt, via in enumerate((client, client, client, without_at_once, client)):
                what = f"{sample.method} {sample.target} as {caller.name} (attempt {attempt})"
                answer = recorder.answered(lambda: via.request(
                    sample.method, sample.target, sample.body, headers=caller.headers(sample),
                    extensions=caller.extensions), what)
                statuses.append(answer.status)
                if decision(answer.status) != want:
                    failures.append(f"{what}: {answer.status} {answer.body[:120]!r}, expected {want}")
            if want != "admitted" or sample.method in ("GET", "HEAD") or endpoint == "subjects.lookup_schema":
                # Nothing changed between the attempts: every way gives the very same status.
                if len(set(statuses)) != 1:
                    failures.append(f"{sample.method} {sample.target} as {caller.name}: statuses {statuses}")
    assert not failures, "\n".join(failures[:40]) + f"\n({len(failures)} in all)"
    for way in ("at_once", "fast", "memo", "direct", "flask", "refused"):
        assert recorder.seen[way], f"no request was answered by {way}: the proof does not cover it ({recorder.seen})"


def test_without_authentication_every_way_answers_alike(monkeypatch: pytest.MonkeyPatch):
    """The plain lane and the answers at once of a node with no guard: the same answers."""
    with NodeClient() as client:
        assert client.post("/subjects/team-a.orders/versions", {"schema": RECORD}).status == 200
        recorder = Recorder(client, monkeypatch)
        without_at_once = AsgiClient(client.bridge, None)
        for (endpoint, _), sample in SAMPLES.items():
            if sample.method != "GET" and endpoint != "subjects.lookup_schema":
                continue
            statuses = [recorder.answered(lambda: via.request(sample.method, sample.target, sample.body),
                                          f"{sample.target}").status
                        for via in (client, client, without_at_once, without_at_once, client)]
            assert len(set(statuses)) == 1 and decision(statuses[0]) == "admitted", (sample.target, statuses)
        for way in ("at_once", "lane", "memo", "flask"):
            assert recorder.seen[way], f"no request was answered by {way} ({recorder.seen})"
