"""Serve a bare ASGI app as the registry serves its own: `registry.http.listener`.

    python bench/asgi_floor.py MODULE:ATTRIBUTE PORT    (MODULE from the working directory)

The benches' floors (`read_throughput.py`, `register_latency.py`) run their bare apps
through it, on 127.0.0.1, so that a floor costs what the registry's HTTP layer costs
and nothing of the registry's own. Runs until SIGTERM or SIGINT.
"""
from __future__ import annotations

import importlib
import os
import signal
import socket
import sys
import threading
from pathlib import Path

sys.path.insert(0, os.getcwd())
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from registry.http.listener import Listeners  # noqa: E402


def main() -> None:
    target, port = sys.argv[1], int(sys.argv[2])
    module, _, attribute = target.partition(":")
    app = getattr(importlib.import_module(module), attribute)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(2048)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    listeners = Listeners(app, [(sock, None)])
    listeners.start()
    try:
        stop.wait()
    finally:
        listeners.close()
        sock.close()


if __name__ == "__main__":
    main()
