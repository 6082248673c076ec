"""Who a request comes from: the one place a caller is authenticated.

    authenticator = Authenticator(settings.authentication, settings.tls)
    principal = await authenticator.authenticate(scope)   # raises Unauthenticated

Methods (`authentication.method`, several may be listed):
- BASIC: `Authorization: Basic ...` checked against the users file (argon2id);
- BEARER: `Authorization: Bearer <JWT>` checked against the JWKS (`bearer`);
- CERTIFICATE: the verified client certificate of an https connection, its subject
  mapped by `ssl.principal.mapping.rules` (`certificates`).
An `Authorization` header, when sent, decides; a certificate counts only without one.
Several `Authorization` headers are refused (401): no path picks one of them.
With no method configured every caller is ANONYMOUS.

Speed: verifying a password or a token costs far more than serving a read, so a
verified header is remembered (a TTL cache keyed by a keyed BLAKE2 hash of the header,
so the cache never holds the credential itself) for `authentication.cache.ttl.ms`, a
token never past its expiry. A rejected header is remembered for a few seconds, so a
client retrying a wrong password does not cost an argon2 verification each time, and
requests arriving together with the same new header share one verification.
Verifications that miss the cache run on a small pool of their own, never on the
event loop, and at most two at once: a flood of wrong passwords costs two cores at
most, not the server's memory.
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from cachetools import TTLCache

from registry.http.security.bearer import BearerTokens, InvalidToken
from registry.http.security.certificates import CertificatePrincipals
from registry.http.security.passwords import Users, parse_users
from registry.http.security.principal import ANONYMOUS, Principal
from registry.http.security.watched_file import WatchedFile
from registry.settings import AuthenticationSettings, TlsSettings

_REJECTED_SECONDS = 5.0
_CACHE_ENTRIES = 10_000
_VERIFIERS = 2


class _Verified:
    """Verified credentials by keyed hash, each until its deadline (monotonic clock).

    Written here rather than taken from cachetools because this lookup runs on every
    authenticated request: a dict read measured 0.6 us against 4.2 us for
    TLRUCache.get (8.7 us for TTLCache.get) on this machine, a few per cent of a whole
    id fast-path read. Reads take no lock (a dict read is atomic); writes are made
    under the authenticator's lock. Bounded: past `size` entries the oldest goes.
    """

    def __init__(self, size: int) -> None:
        self._entries: dict[bytes, tuple[Principal, float]] = {}
        self._size = size

    def get(self, key: bytes) -> Principal | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[1] <= time.monotonic():
            self._entries.pop(key, None)
            return None
        return entry[0]

    def put(self, key: bytes, principal: Principal, ttl: float) -> None:
        if ttl <= 0:
            return
        if len(self._entries) >= self._size:
            try:
                self._entries.pop(next(iter(self._entries)), None)
            except (RuntimeError, StopIteration):  # a lock-free read dropped an expired entry meanwhile
                pass
        self._entries[key] = (principal, time.monotonic() + ttl)

    def clear(self) -> None:
        self._entries.clear()


class Unauthenticated(Exception):
    """The caller did not prove who it is: a 401. `challenge` is the WWW-Authenticate value."""

    def __init__(self, message: str, challenge: str) -> None:
        super().__init__(message)
        self.message = message
        self.challenge = challenge


class Authenticator:
    def __init__(self, settings: AuthenticationSettings, tls: TlsSettings) -> None:
        self._settings = settings
        self.methods = settings.methods
        self.required = bool(settings.methods)
        challenges = []
        if "BASIC" in settings.methods:
            challenges.append(f'Basic realm="{settings.realm}"')
        if "BEARER" in settings.methods:
            challenges.append(f'Bearer realm="{settings.realm}"')
        self._challenge = ", ".join(challenges)
        self._hash_key = os.urandom(32)
        self._lock = threading.Lock()  # the caches are used from every serving loop
        self._verified = _Verified(_CACHE_ENTRIES)
        self._rejected: TTLCache[bytes, str] = TTLCache(_CACHE_ENTRIES, _REJECTED_SECONDS)
        # Verifications under way: a client opening many connections at once with the
        # same new credentials waits for one verification, not one per connection.
        self._pending: dict[bytes, Future[tuple[Principal, float]]] = {}
        self._pool = ThreadPoolExecutor(max_workers=_VERIFIERS, thread_name_prefix="verify-credentials")
        self._users: WatchedFile[Users] | None = None
        if "BASIC" in settings.methods:
            self._users = WatchedFile(settings.users_file, parse_users, what="users file",
                                      on_change=self.forget)
        self._tokens = BearerTokens(settings) if "BEARER" in settings.methods else None
        self._certificates = CertificatePrincipals(tls.principal_mapping_rules)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._users is not None:
            self._users.close()
        if self._tokens is not None:
            self._tokens.close()

    def forget(self) -> None:
        """Drop every remembered verification (the users file changed)."""
        with self._lock:
            self._verified.clear()
            self._rejected.clear()

    def remembered(self, header: bytes) -> Principal | None:
        """The principal of an Authorization header verified recently, else None. Never
        blocks: the id fast path's shortcut (`Guard.admits_remembered_read`)."""
        return self._verified.get(hashlib.blake2b(header, key=self._hash_key, digest_size=20).digest())

    async def authenticate(self, scope: dict[str, Any]) -> Principal:
        """The caller's principal. Raises Unauthenticated. Never blocks the event loop."""
        if not self.required:
            return ANONYMOUS
        header = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                if header is not None:
                    # Which one would count differs between servers and proxies: refuse
                    # the ambiguity, as Confluent's Jetty does (every path reads this rule).
                    raise Unauthenticated("Unauthorized: several Authorization headers; send one",
                                          self._challenge)
                header = value
        if header is None:
            principal = self._from_certificate(scope)
            if principal is not None:
                return principal
            raise Unauthenticated("Authentication is required", self._challenge)
        key = hashlib.blake2b(header, key=self._hash_key, digest_size=20).digest()
        known = self._verified.get(key)
        if known is not None:
            return known
        with self._lock:
            refused = self._rejected.get(key)
            pending = self._pending.get(key) if refused is None else None
            if refused is None and pending is None:
                pending = self._pending[key] = self._pool.submit(self._verify_and_remember, key, header)
        if refused is not None:
            raise Unauthenticated(refused, self._challenge)
        assert pending is not None
        principal, _ = await asyncio.wrap_future(pending)
        return principal

    def _verify_and_remember(self, key: bytes, header: bytes) -> tuple[Principal, float]:
        """Verify on the pool and remember the outcome (either way) before anyone waiting sees it."""
        try:
            principal, expires = self._verify(header)
        except Unauthenticated as exc:
            with self._lock:
                self._rejected[key] = exc.message
                del self._pending[key]
            raise
        except BaseException:
            with self._lock:
                del self._pending[key]
            raise
        with self._lock:
            self._verified.put(key, principal, min(self._settings.cache_ttl_seconds, expires - time.time()))
            del self._pending[key]
        return principal, expires

    def _verify(self, header: bytes) -> tuple[Principal, float]:
        """(principal, expiry) for an Authorization header; runs on the verifying pool."""
        scheme, _, credentials = header.partition(b" ")
        scheme_name = scheme.decode("latin-1").lower()
        credentials = credentials.strip()
        if scheme_name == "basic" and self._users is not None:
            return self._basic(credentials), float("inf")
        if scheme_name == "bearer" and self._tokens is not None:
            try:
                return self._tokens.verify(credentials.decode("latin-1"))
            except InvalidToken as exc:
                raise Unauthenticated(f"Unauthorized: {exc}", self._challenge) from None
        raise Unauthenticated(f"Unauthorized: the {scheme_name or 'empty'} authorization scheme is not accepted "
                              "here", self._challenge)

    def _basic(self, credentials: bytes) -> Principal:
        assert self._users is not None
        try:
            decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise Unauthenticated("Unauthorized: malformed Basic credentials", self._challenge) from None
        name, sep, password = decoded.partition(":")
        user = self._users.current.check(name, password) if sep else None
        del decoded, password
        if user is None:
            raise Unauthenticated("Unauthorized: wrong user name or password", self._challenge)
        return Principal(user.name, "BASIC", user.roles)

    def _from_certificate(self, scope: dict[str, Any]) -> Principal | None:
        if "CERTIFICATE" not in self.methods:
            return None
        tls = scope.get("extensions", {}).get("tls")
        subject = tls.get("client_cert_name") if tls else None
        if not subject:
            return None
        name = self._certificates.name(subject)
        if name is None:
            raise Unauthenticated(f"Unauthorized: no ssl.principal.mapping.rules rule maps {subject!r}",
                                  self._challenge)
        return Principal(name, "CERTIFICATE")
