"""The HTTP session through which a follower forwards writes to the leader (requests),
over this node's TLS context when the leader is https.

Kept apart from `registry.http.forward` so that requests, a tenth of a second of CPU to
import, is imported with the first forwarded write and not at start-up: a node is
ready only once it has replayed the log, every import before then delays it
(bench/cold_start.py), and a node that leads never forwards.
"""
from __future__ import annotations

import ssl
from typing import Any

import requests
from requests.adapters import HTTPAdapter

from registry import errors


class LeaderSession:
    """Keeps connections to the leader alive. Thread-safe (a requests Session is, for
    sending)."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self._session = requests.Session()
        if ssl_context is not None:
            self._session.mount("https://", _ContextAdapter(ssl_context))

    def send(self, leader_url: str, method: str, raw_uri: str, headers: dict[str, str], body: bytes,
             timeout: float) -> tuple[int, str | None, bytes]:
        """(status, Content-Type, body) of the leader's answer. Blocks at most `timeout`
        seconds. Raises ForwardingError (50003) when the leader cannot be reached or does
        not answer in time."""
        try:
            response = self._session.request(method, leader_url.rstrip("/") + raw_uri, data=body,
                                             headers=headers, timeout=timeout, allow_redirects=False)
        except requests.RequestException as exc:
            raise errors.ForwardingError(
                f"Error while forwarding the request to the leader at {leader_url}: {exc}") from None
        return response.status_code, response.headers.get("Content-Type"), response.content

    def close(self) -> None:
        self._session.close()


class _ContextAdapter(HTTPAdapter):
    """requests over one SSLContext: its CAs, its client certificate and its hostname
    rule, and nothing else: neither certifi's CAs nor a bundle named by
    REQUESTS_CA_BUNDLE, which requests would otherwise load into it per connection.
    (requests documents `build_connection_pool_key_attributes` as the hook for this.)"""

    def __init__(self, context: ssl.SSLContext) -> None:
        self._context = context
        super().__init__()

    def build_connection_pool_key_attributes(self, request: Any, verify: Any, cert: Any = None
                                             ) -> tuple[dict[str, Any], dict[str, Any]]:
        host, _ = super().build_connection_pool_key_attributes(request, True, None)
        pool: dict[str, Any] = {"ssl_context": self._context, "cert_reqs": "CERT_REQUIRED"}
        if not self._context.check_hostname:
            pool["assert_hostname"] = False
        return host, pool

    def cert_verify(self, conn: Any, url: str, verify: Any, cert: Any) -> None:
        conn.cert_reqs = "CERT_REQUIRED"  # the context's CAs decide
