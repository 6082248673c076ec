"""A forwarded write's original caller, carried from a follower to the leader.

    identity = ForwardedIdentity(secret, members, certificates)
    headers = identity.headers(principal, client, follower_url, method, raw_uri, body)  # follower
    claim = identity.claim(scope)             # leader, before the body: who, and is it a member's
    identity.check(claim, method, raw_uri, body)   # leader, with the body: the signature

A follower that forwards a write adds `X-Forwarded-Principal` (the caller's principal,
address and the follower's URL, as base64url JSON). The leader believes it only from a
cluster member, proven either way:
- a signature, `X-Forwarded-Signature: v1;<unix time>;<hex>`: HMAC-SHA256 with the
  shared `inter.instance.secret` over the claim, method, target, time and the body's
  SHA-256, fresh within two minutes: a client cannot name someone else, and a captured
  forward can only be replayed unchanged within that window;
- or the connection's verified client certificate (mTLS between nodes), whose mapped
  principal is listed in `inter.instance.principals`.
Anything else carrying the header is refused with a 401 (`Untrusted`): a claim is never
silently dropped, so a misconfigured cluster is seen at once.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import time
from dataclasses import dataclass
from typing import Any

import orjson

from registry.http.security.certificates import CertificatePrincipals
from registry.http.security.principal import Principal

PRINCIPAL_HEADER = "X-Forwarded-Principal"
SIGNATURE_HEADER = "X-Forwarded-Signature"
_PRINCIPAL_KEY = PRINCIPAL_HEADER.lower().encode()
_SIGNATURE_KEY = SIGNATURE_HEADER.lower().encode()
_WINDOW_SECONDS = 120.0
_MAX_CLAIM_BYTES = 8192


class Untrusted(Exception):
    """A forwarded identity that cannot be believed; the message says why, and
    `claimed` the name it claimed where one could be read (for the audit log only:
    nothing is decided on it)."""

    def __init__(self, message: str, claimed: str = "") -> None:
        super().__init__(message)
        self.claimed = claimed


@dataclass(frozen=True)
class Claim:
    principal: Principal
    client: str  # the original caller's address, as the follower saw it
    forwarded_by: str  # the follower's URL
    encoded: bytes  # the header as sent: what the signature covers
    signature: bytes | None  # None: trusted through the connection's certificate


class ForwardedIdentity:
    def __init__(self, secret: bytes, members: frozenset[str], certificates: CertificatePrincipals,
                 *, signs: bool) -> None:
        self._secret = secret
        self._members = members
        self._certificates = certificates
        self.signs = signs  # whether this node, as a follower, sends identities

    def headers(self, principal: Principal, client: str, forwarded_by: str, method: str, raw_uri: str,
                body: bytes) -> dict[str, str]:
        """The headers a follower adds to a write it forwards (a signature when a secret is set)."""
        encoded = base64.urlsafe_b64encode(orjson.dumps({
            **principal.to_json(), "client": client, "by": forwarded_by})).rstrip(b"=")
        headers = {PRINCIPAL_HEADER: encoded.decode("ascii")}
        if self._secret:
            stamp = str(int(time.time()))
            headers[SIGNATURE_HEADER] = f"v1;{stamp};{self._sign(encoded, method, raw_uri, stamp, body)}"
        return headers

    def claim(self, scope: dict[str, Any]) -> Claim | None:
        """The forwarded identity the request carries, or None without one. Raises
        Untrusted when it carries one that no member could have sent. Checks the
        signature's freshness only: `check` verifies it against the body."""
        encoded = signature = None
        for name, value in scope["headers"]:
            if name == _PRINCIPAL_KEY:
                encoded = value
            elif name == _SIGNATURE_KEY:
                signature = value
        if encoded is None:
            return None
        if len(encoded) > _MAX_CLAIM_BYTES:
            raise Untrusted("the forwarded identity is too large")
        try:
            data = orjson.loads(base64.urlsafe_b64decode(encoded + b"=" * (-len(encoded) % 4)))
            principal = Principal(str(data["name"]), str(data["method"]),
                                  frozenset(str(r) for r in data.get("roles", [])))
            client, by = str(data.get("client", "")), str(data.get("by", ""))
        except (ValueError, KeyError, TypeError, AttributeError):
            raise Untrusted("malformed forwarded identity") from None
        if not self._from_member_certificate(scope):
            if not self._secret or signature is None:
                raise Untrusted("a forwarded identity is accepted only from another node of this cluster "
                                "(inter.instance.secret or a certificate in inter.instance.principals)",
                                principal.name)
            parts = signature.split(b";")
            if len(parts) != 3 or parts[0] != b"v1" or not parts[1].isdigit() or len(parts[1]) > 12:
                raise Untrusted("malformed forwarded identity signature", principal.name)
            if abs(time.time() - int(parts[1])) > _WINDOW_SECONDS:
                raise Untrusted("the forwarded identity's signature is too old", principal.name)
        return Claim(principal, client, by, encoded, signature)

    def check(self, claim: Claim, method: str, raw_uri: str, body: bytes) -> None:
        """Raise Untrusted unless the claim's signature covers this very request."""
        if claim.signature is None:
            return
        _, stamp, digest = claim.signature.split(b";")
        expected = self._sign(claim.encoded, method, raw_uri, stamp.decode("ascii"), body)
        if not hmac.compare_digest(expected.encode("ascii"), digest):
            raise Untrusted("the forwarded identity's signature does not match the request")

    def _from_member_certificate(self, scope: dict[str, Any]) -> bool:
        if not self._members:
            return False
        tls = scope.get("extensions", {}).get("tls")
        subject = tls.get("client_cert_name") if tls else None
        return bool(subject) and self._certificates.name(subject) in self._members

    def _sign(self, encoded: bytes, method: str, raw_uri: str, stamp: str, body: bytes) -> str:
        message = b"\n".join([b"v1", encoded, method.encode("latin-1"), raw_uri.encode("latin-1"),
                              stamp.encode("ascii"), hashlib.sha256(body).hexdigest().encode("ascii")])
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()
