"""Bearer tokens checked against a JWKS fetched over HTTP (an OIDC issuer's endpoint),
through the real front end; the issuer is a small HTTP server on loopback."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.asgi_client import NodeClient
from tests.pki import TokenIssuer


@pytest.fixture
def issuer_endpoint(tmp_path: Path) -> Iterator[tuple[TokenIssuer, str, list[str]]]:
    issuer = TokenIssuer(tmp_path)
    fetches: list[str] = []

    class Keys(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            fetches.append(self.path)
            body = issuer.jwks_path.read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Keys)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield issuer, f"http://127.0.0.1:{server.server_port}/.well-known/jwks.json", fetches
    finally:
        server.shutdown()
        server.server_close()


def test_tokens_are_checked_against_keys_fetched_once_from_the_issuer(issuer_endpoint):
    issuer, url, fetches = issuer_endpoint
    with NodeClient(**{"authentication.method": "BEARER", "oauthbearer.jwks.endpoint.url": url,
                       "oauthbearer.expected.issuer": issuer.issuer,
                       "oauthbearer.expected.audience": "schema-registry"}) as client:
        for user in ("alice", "bob", "carol"):
            answer = client.get("/subjects", headers={"Authorization": f"Bearer {issuer.token(user)}"})
            assert answer.status == 200, f"{user}'s token: {answer.body!r}"
        assert fetches == ["/.well-known/jwks.json"], "the key set is fetched once and cached"
        refused = client.get("/subjects", headers={"Authorization": f"Bearer {issuer.token('x', issuer='other')}"})
        assert refused.status == 401 and refused.json()["error_code"] == 401, refused.body
