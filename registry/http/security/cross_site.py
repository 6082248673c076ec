"""Refusing changes a browser sends on another site's behalf (cross-site request forgery).

    cross_site = CrossSite(settings.allowed_origins)
    refusal = cross_site.refusal(method, scheme, headers)   # None, or why it is refused

A browser sends a `POST` with no `Content-Type` (or a form's) cross-site without a
preflight, together with the Basic credentials it stores for the registry's web UI.
Browsers say where a request comes from: `Sec-Fetch-Site` (every current browser)
and `Origin` (on every non-GET request). A change (any method but GET, HEAD and
OPTIONS) is refused when the browser marks it `cross-site`, or when its `Origin` is
neither the registry's own (the `Host` it was sent to, with the listener's scheme) nor
one listed in `access.control.allow.origin` (Confluent's CORS property; `*` allows
any). API clients send neither header and are never refused. Written by hand: Flask
and Starlette have CORS helpers for answers, none that refuses a request this way.
"""
from __future__ import annotations

from collections.abc import Iterable

_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


class CrossSite:
    def __init__(self, allowed_origins: frozenset[str]) -> None:
        self._any = "*" in allowed_origins
        self._allowed = frozenset(o.rstrip("/").lower() for o in allowed_origins)

    def refusal(self, method: str, scheme: str, headers: Iterable[tuple[bytes, bytes]]) -> str | None:
        """Why a request must be refused as cross-site (a 403), or None. Never blocks."""
        if method in _SAFE:
            return None
        origin = fetch_site = host = None
        for name, value in headers:
            if name == b"origin":
                origin = value
            elif name == b"sec-fetch-site":
                fetch_site = value
            elif name == b"host":
                host = value
        if fetch_site is not None and fetch_site.strip().lower() == b"cross-site" and not self._any:
            return "Forbidden: a browser marked this change as cross-site"
        if origin is None or self._any:
            return None
        text = origin.decode("latin-1").strip().rstrip("/").lower()
        if text in self._allowed:
            return None
        if host is not None and text == f"{scheme}://{host.decode('latin-1').strip().lower()}":
            return None
        return f"Forbidden: a change from origin {origin.decode('latin-1')[:200]!r} is not allowed here"
