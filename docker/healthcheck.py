"""The image's HEALTHCHECK: exit 0 when the node's /ready answers 200, else 1.

Asks the first listener of SCHEMA_REGISTRY_LISTENERS (as the node reads it), on loopback
where it listens on every address. An https listener is asked without verifying its
certificate: this checks readiness, not the certificate (which names the public host).
Blocks at most three seconds.
"""
from __future__ import annotations

import os
import ssl
import sys
import urllib.request
from urllib.parse import urlsplit


def ready_url(listeners: str) -> str:
    first = urlsplit(listeners.split(",")[0].strip())
    host = first.hostname or "127.0.0.1"
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    port = first.port or (443 if first.scheme == "https" else 80)
    return f"{first.scheme or 'http'}://{host}:{port}/ready"


def main() -> int:
    url = ready_url(os.environ.get("SCHEMA_REGISTRY_LISTENERS", "http://0.0.0.0:8081"))
    context = ssl._create_unverified_context() if url.startswith("https") else None
    try:
        with urllib.request.urlopen(url, timeout=3, context=context) as answer:
            return 0 if answer.status == 200 else 1
    except OSError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
