"""Bearer tokens: JWTs (OAuth 2 / OIDC access tokens) verified against a JWKS.

    tokens = BearerTokens(settings.authentication)
    principal, expires_at = tokens.verify(token)   # raises InvalidToken

The keys come from `oauthbearer.jwks.endpoint.url`: an `https://` (or `http://`) URL,
fetched by PyJWT's `PyJWKClient` and cached for `oauthbearer.jwks.endpoint.refresh.ms`
(a token naming an unknown key id fetches the set again, at most every 30 s), or a
local file (a path or `file://` URL), read again when it changes. A token must be
signed with an asymmetric algorithm by one of those keys, carry `exp`, not be used
before `nbf`, and match `oauthbearer.expected.issuer` and one of
`oauthbearer.expected.audience` when they are set, with
`oauthbearer.clock.skew.seconds` of leeway. The principal is the
`oauthbearer.sub.claim.name` claim; its roles the `oauthbearer.groups.claim.name`
claim (a list of strings, or one string of space-separated names).
"""
from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from registry.http.security.principal import Principal
from registry.http.security.watched_file import WatchedFile
from registry.settings import AuthenticationSettings, ConfigError

if TYPE_CHECKING:
    from jwt import PyJWK, PyJWKClient, PyJWKSet

# PyJWT (and the `cryptography` it loads, ~60 ms) is imported when a registry verifies
# bearer tokens, not by every registry at start-up (bench/cold_start.py).

# Asymmetric only: with public keys from a JWKS, an HS* token would be forged with the
# public key as its secret (algorithm confusion), and "none" is no signature at all.
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]


class InvalidToken(Exception):
    """The token cannot be trusted; the message says why (safe to show the caller)."""


class BearerTokens:
    def __init__(self, settings: AuthenticationSettings, ssl_context: ssl.SSLContext | None = None) -> None:
        from jwt import PyJWKClient

        self._settings = settings
        location = settings.jwks
        scheme = urlsplit(location).scheme.lower()
        self._client: PyJWKClient | None = None
        self._file: WatchedFile[PyJWKSet] | None = None
        if scheme in ("http", "https"):
            self._client = PyJWKClient(location, cache_jwk_set=True, lifespan=settings.jwks_refresh_seconds,
                                       timeout=10, ssl_context=ssl_context)
        else:
            path = location[len("file://"):] if scheme == "file" else location
            self._file = WatchedFile(path, _parse_jwks, what="JWKS file")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def verify(self, token: str) -> tuple[Principal, float]:
        """The token's principal and its expiry (epoch seconds). Blocks while the key set
        is fetched. Raises InvalidToken."""
        import jwt

        settings = self._settings
        try:
            key = self._key_for(token)
            claims: dict[str, Any] = jwt.decode(
                token, key.key, algorithms=ALGORITHMS,
                audience=list(settings.audiences) or None,
                issuer=settings.issuer or None,
                leeway=settings.clock_skew_seconds,
                options={"require": ["exp"], "verify_aud": bool(settings.audiences)},
            )
        except jwt.ExpiredSignatureError:
            raise InvalidToken("the bearer token has expired") from None
        except jwt.InvalidAudienceError:
            raise InvalidToken("the bearer token is not meant for this registry (audience)") from None
        except jwt.InvalidIssuerError:
            raise InvalidToken("the bearer token comes from an issuer this registry does not trust") from None
        except jwt.PyJWKClientConnectionError:
            raise InvalidToken("the signing keys cannot be fetched at the moment") from None
        except (jwt.PyJWTError, ValueError, KeyError) as exc:
            raise InvalidToken(f"the bearer token is not valid: {exc}") from None
        name = claims.get(settings.subject_claim)
        if not isinstance(name, str) or not name:
            raise InvalidToken(f"the bearer token has no {settings.subject_claim!r} claim naming its subject")
        groups = claims.get(settings.groups_claim) if settings.groups_claim else None
        if isinstance(groups, str):
            roles = frozenset(groups.split())
        elif isinstance(groups, list):
            roles = frozenset(g for g in groups if isinstance(g, str))
        else:
            roles = frozenset()
        return Principal(name, "BEARER", roles), float(claims["exp"])

    def _key_for(self, token: str) -> PyJWK:
        if self._client is not None:
            return self._client.get_signing_key_from_jwt(token)
        assert self._file is not None
        import jwt

        keys = self._file.current
        kid = jwt.get_unverified_header(token).get("kid")
        if kid is None:
            if len(keys.keys) != 1:
                raise InvalidToken("the bearer token names no key id (kid) and the key set holds several keys")
            return keys.keys[0]
        try:
            return keys[kid]
        except KeyError:
            raise InvalidToken(f"the bearer token is signed with an unknown key {kid!r}") from None


def _parse_jwks(data: bytes) -> PyJWKSet:
    import jwt
    from jwt import PyJWKSet

    try:
        return PyJWKSet.from_dict(orjson.loads(data))
    except (orjson.JSONDecodeError, jwt.PyJWTError) as exc:
        raise ConfigError(f"not a JSON Web Key Set: {exc}") from None
