"""The one door every request passes, on the fast path and on Flask's: who is calling,
and may they do what the route does.

    guard = build_guard(settings, subjects_of_id)
    access = await guard.admit(scope, method, path, route)     # before the body is read
    guard.admit_body(access, method, raw_uri, body)              # once it is, before dispatch

`admit` authenticates (or believes a member's forwarded identity, see `forwarded`),
then decides by the route's policy (`policy`) against the rules (`rules`); it raises
`Denied` (401 or 403, Confluent's body) before any body is read, so a caller who may
not write cannot make the node buffer one. `admit_body` checks what only the body can
tell: a forwarded identity's signature, and whether a write is an import. The
`Access` it returns travels with the request (`ACCESS_KEY` in the WSGI environ) to
the views that list subjects, the forwarder and the audit log.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import orjson

from registry.http.routing import Route
from registry.http.security.authenticator import Authenticator, Unauthenticated
from registry.http.security.certificates import CertificatePrincipals
from registry.http.security.forwarded import (
    PRINCIPAL_HEADER,
    SIGNATURE_HEADER,
    Claim,
    ForwardedIdentity,
    Untrusted,
)
from registry.http.security.operations import Operation
from registry.http.security.policy import SCHEMA_ID_ARGUMENT, SUBJECT_ARGUMENT, Policy, Target, policy_for
from registry.http.security.principal import ANONYMOUS, Principal
from registry.http.security.rules import Rules, parse_rules
from registry.http.security.watched_file import WatchedFile
from registry.http.security.passwords import parse_users
from registry.settings import ConfigError, Settings
from registry.subjects import normalize_subject
from store.cache import qualify_reference

ACCESS_KEY = "registry.access"
_FORWARD_HEADERS = frozenset({PRINCIPAL_HEADER.lower().encode(), SIGNATURE_HEADER.lower().encode()})
_ID_DECISIONS = 100_000


class Denied(Exception):
    """A refused request: `status` 401 or 403, with Confluent's body; `reason` labels metrics."""

    def __init__(self, status: int, message: str, reason: str, challenge: str = "",
                 access: Access | None = None, claimed: str = "", operation: Operation | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = 401 if status == 401 else 40301
        self.message = message
        self.reason = reason
        self.challenge = challenge
        self.access = access  # who was refused, when known (a 403)
        self.claimed = claimed  # the name a refused forwarded identity claimed, for the audit
        self.operation = operation  # what was refused, where not the route's own operation (an import)


@dataclass(slots=True)
class Access:
    """An admitted request: who, and what the route does. (Not frozen: made on every
    request, and a frozen dataclass's __init__ costs several times a plain one's.)"""

    principal: Principal
    route: Route | None
    policy: Policy | None
    peer: Any  # the ASGI scope's `client`: (host, port) of the connection
    claim: Claim | None = None

    @property
    def client(self) -> str:
        """The original caller's address (the follower saw it, for a forwarded write)."""
        return self.claim.client if self.claim is not None else _address(self.peer)

    @property
    def forwarded_by(self) -> str:
        """The follower that forwarded the request, when one did."""
        return self.claim.forwarded_by if self.claim is not None else ""


def resource_of(route: Route) -> str:
    """What a route acts on, for audit lines: `subject:<name>`, `schema:<id>` or `global`."""
    arguments = route.arguments
    if SUBJECT_ARGUMENT in arguments:
        return f"subject:{arguments[SUBJECT_ARGUMENT]}"
    if SCHEMA_ID_ARGUMENT in arguments:
        return f"schema:{arguments[SCHEMA_ID_ARGUMENT]}"
    return "global"


class Guard:
    def __init__(self, authenticator: Authenticator, rules: WatchedFile[Rules] | None,
                 roles: frozenset[str] | None, skip_paths: frozenset[str], forwarded: ForwardedIdentity,
                 subjects_of_id: Callable[[int, str | None], list[str]], log_position: Callable[[], int]) -> None:
        """`subjects_of_id(id, subject)` names the subjects holding a schema id in the
        context a read of it with `?subject=subject` answers from (None: no such query);
        `log_position` is the applied log's position, which they cannot change without."""
        self._authenticator = authenticator
        self._rules = rules
        self._roles = roles
        self._skip_paths = skip_paths
        self.forwarded = forwarded
        self._subjects_of_id = subjects_of_id
        self._log_position = log_position
        # Decisions on schema ids, each with the log position and rules it was made
        # under: the fast path's read is then one dict read. (The subjects using an id
        # change only with the applied log: the cache is a function of it.)
        self._id_decisions: dict[tuple[Principal, Operation, str, str | None], tuple[int, Rules, bool]] = {}

    @property
    def rules(self) -> WatchedFile[Rules] | None:
        """The rules file, when one is configured."""
        return self._rules

    @property
    def enforcing(self) -> bool:
        """Whether any caller can be refused at all."""
        return self._authenticator.required or self._rules is not None

    def close(self) -> None:
        self._authenticator.close()
        if self._rules is not None:
            self._rules.close()

    async def admit(self, scope: dict[str, Any], method: str, path: str, route: Route | None) -> Access:
        """The request's access, or Denied. Never blocks the event loop."""
        peer = scope.get("client")
        if path in self._skip_paths:
            return Access(ANONYMOUS, route, None, peer)
        try:
            claim = self.forwarded.claim(scope)
        except Untrusted as exc:
            raise Denied(401, f"Unauthorized: {exc}", "untrusted_forward", claimed=exc.claimed) from None
        if claim is not None:
            principal = claim.principal
        else:
            try:
                principal = await self._authenticator.authenticate(scope)
            except Unauthenticated as exc:
                raise Denied(401, exc.message, "unauthenticated", exc.challenge) from None
        access = Access(principal, route, None, peer, claim)
        if route is None:
            return access  # no route: Flask answers 404 or 405, nothing runs
        policy = access.policy = policy_for(route.endpoint, method)
        if policy is None:
            raise Denied(403, f"Forbidden: no authorization policy covers {method} {route.endpoint}",
                         "unmapped_route", access=access)
        if self._roles is not None and principal.method in ("BASIC", "BEARER") \
                and not (principal.roles & self._roles):
            raise Denied(403, f"Forbidden: {principal.name} has none of the roles allowed here",
                         "role", access=access)
        if not self._allowed(principal, policy.operation, policy.target, route, _subject_asked(scope)):
            raise Denied(403, _denial(principal, policy.operation, route), "forbidden", access=access)
        return access

    def admits_remembered_read(self, headers: list[tuple[bytes, bytes]], digits: str) -> bool:
        """True when what is remembered alone shows `admit` would let this caller read the
        schema id `digits`: a credential verified recently and a decision made under the
        current log position and rules. False means only "ask `admit`". The id fast
        path's shortcut: three dict reads and a hash instead of the whole way in."""
        header = None
        for name, value in headers:
            if name == b"authorization":
                if header is not None:
                    return False  # ambiguous credentials: `admit` refuses them
                header = value
            elif name in _FORWARD_HEADERS:
                return False
        if header is None:
            return False
        principal = self._authenticator.remembered(header)
        if principal is None:
            return False
        if self._roles is not None and not (principal.roles & self._roles):
            return False
        if self._rules is None:
            return True
        known = self._id_decisions.get((principal, Operation.READ, digits, None))
        return known is not None and known[2] and known[1] is self._rules.current \
            and known[0] == self._log_position()

    def viewer(self, access: Access | None) -> Hashable:
        """What, besides the request and the applied log, an answer to `access` may depend
        on: who asks, and under which rules (a listing shows what they may read)."""
        if access is None:
            return None
        return access.principal, self._rules.current if self._rules is not None else None

    def admit_body(self, access: Access, method: str, raw_uri: str, body: bytes) -> None:
        """Raise Denied unless the body keeps the request admitted: a forwarded identity's
        signature must cover it, a write setting an explicit id is also an import, and
        every subject the body's schema references must be readable by the caller (a
        reference would otherwise tell whether a subject exists, and what it holds).
        Parses the body (JSON): call it off the event loop for a large one."""
        if access.claim is not None:
            try:
                self.forwarded.check(access.claim, method, raw_uri, body)
            except Untrusted as exc:
                raise Denied(401, f"Unauthorized: {exc}", "untrusted_forward",
                             claimed=access.claim.principal.name) from None
        policy = access.policy
        if policy is None or not (policy.import_fields or policy.references) or self._rules is None:
            return
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError:
            return  # the view refuses it
        if not isinstance(document, dict):
            return
        route = access.route
        assert route is not None
        if any(document.get(f) not in (None, 0, -1) for f in policy.import_fields):
            if not self._allowed(access.principal, Operation.IMPORT, policy.target, route):
                raise Denied(403, _denial(access.principal, Operation.IMPORT, route), "forbidden",
                             access=access, operation=Operation.IMPORT)
        references = document.get("references") if policy.references else None
        if isinstance(references, list) and references:
            rules = self._rules.current
            referrer = route.arguments.get(SUBJECT_ARGUMENT) or ""
            for reference in references:
                named = reference.get("subject") if isinstance(reference, dict) else None
                if not isinstance(named, str):
                    continue  # the view refuses a malformed reference
                subject = qualify_reference(referrer, normalize_subject(named))
                if not rules.allows(access.principal, Operation.READ, subject):
                    # Said before anything is looked up: the same whether it exists or not.
                    raise Denied(403, f"Forbidden: {access.principal.name} may not read the referenced "
                                      f"subject {named!r}", "forbidden", access=access)

    def readable(self, access: Access | None, subjects: Iterable[str]) -> list[str]:
        """The subjects `access` may read, in order (all of them without rules)."""
        rules = self._rules.current if self._rules is not None else None
        if rules is None or access is None or access.policy is None:
            return list(subjects)
        return [s for s in subjects if rules.allows(access.principal, Operation.READ, s)]

    def _allowed(self, principal: Principal, operation: Operation, target: Target, route: Route,
                 asked: str | None = None) -> bool:
        """Whether the rules let `principal` do `operation` on what `route` answers;
        `asked` is the request's `?subject=`, which picks the context of a schema id."""
        if self._rules is None or target in (Target.LISTING, Target.AUTHENTICATED):
            return True
        rules = self._rules.current
        if target is Target.GLOBAL:
            return rules.allows(principal, operation, None)
        if target is Target.SUBJECT:
            return rules.allows(principal, operation, route.arguments.get(SUBJECT_ARGUMENT))
        text = route.arguments.get(SCHEMA_ID_ARGUMENT, "")
        if not text.isascii() or not text.isdigit() or len(text) > 10:
            return True  # not an id: the view answers 4xx, and shows nothing
        position = self._log_position()
        key = (principal, operation, text, asked)
        known = self._id_decisions.get(key)
        if known is not None and known[0] == position and known[1] is rules:
            return known[2]
        subjects = self._subjects_of_id(int(text), asked)
        # An id no subject uses (unknown, or all its versions deleted for good) is for global readers.
        decided = rules.allows_any(principal, operation, subjects) if subjects else \
            rules.allows(principal, operation, None)
        if len(self._id_decisions) >= _ID_DECISIONS:
            self._id_decisions.clear()
        self._id_decisions[key] = (position, rules, decided)
        return decided


def _subject_asked(scope: dict[str, Any]) -> str | None:
    """The request's first `?subject=` (as Werkzeug's `request.args.get` reads it), or
    None: a read of a schema id answers from the context it names."""
    query: bytes = scope.get("query_string", b"")
    if not query:
        return None
    # Keys are decoded too (`%73ubject` is `subject`): no cheaper test on the raw bytes.
    for name, value in parse_qsl(query.decode("utf-8", "replace"), keep_blank_values=True, errors="replace"):
        if name == "subject":
            return value
    return None


def _denial(principal: Principal, operation: Operation, route: Route) -> str:
    subject = route.arguments.get(SUBJECT_ARGUMENT)
    what = f"subject {subject!r}" if subject is not None else (
        f"schema id {route.arguments[SCHEMA_ID_ARGUMENT]}" if SCHEMA_ID_ARGUMENT in route.arguments
        else "the registry")
    return f"Forbidden: {principal.name} may not {operation.value} {what}"


def _address(client: Any) -> str:
    if not client:
        return ""
    host, port = client[0], client[1]
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"


def check_files(settings: Settings) -> None:
    """Read every security file the settings name once, without watching them: raises
    ConfigError for one that cannot be used (a supervisor checks before forking)."""
    authentication = settings.authentication
    CertificatePrincipals(settings.tls.principal_mapping_rules)
    for path, parse, what in ((authentication.users_file if "BASIC" in authentication.methods else "",
                               parse_users, "users file"),
                              (settings.authorization_rules_file, parse_rules, "authorization rules file")):
        if path:
            try:
                with open(path, "rb") as handle:
                    parse(handle.read())
            except (OSError, ValueError) as exc:
                raise ConfigError(f"{what} {path}: {exc}") from None


def build_guard(settings: Settings, subjects_of_id: Callable[[int, str | None], list[str]],
                log_position: Callable[[], int]) -> Guard | None:
    """The guard the settings describe, or None when there is nothing to guard (no
    authentication, no rules, no forwarded identities). Raises ConfigError for files
    it cannot use."""
    authentication = settings.authentication
    if not (authentication.methods or settings.authorization_rules_file or settings.inter_instance_secret
            or settings.inter_instance_principals):
        return None
    tls = settings.tls
    certificates = CertificatePrincipals(tls.principal_mapping_rules)
    authenticator = Authenticator(authentication, tls)
    rules_file = settings.authorization_rules_file
    rules = WatchedFile(rules_file, parse_rules, what="authorization rules file") if rules_file else None
    secret, members = settings.inter_instance_secret, settings.inter_instance_principals
    # Followers send the caller's identity when the leader can believe it: signed with
    # the shared secret, or over mTLS between member nodes.
    forwarded = ForwardedIdentity(secret, members, certificates, signs=bool(secret or members))
    return Guard(authenticator, rules, authentication.roles, authentication.skip_paths, forwarded, subjects_of_id,
                 log_position)
