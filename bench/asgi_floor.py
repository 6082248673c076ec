"""Serve a bare ASGI app as the registry serves its own: `registry.http.listener`.

    python bench/asgi_floor.py MODULE:ATTRIBUTE PORT [AT_ONCE]    (MODULE from the working directory)

The benches' floors (`read_throughput.py`, `register_latency.py`) run their bare apps
through it, on 127.0.0.1, so that a floor costs what the registry's HTTP layer costs
and nothing of the registry's own. With AT_ONCE, the module's attribute of that name is
the listener's `at_once` (`Listeners`), as the registry answers the reads it keeps
ready. Runs until SIGTERM or SIGINT.
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
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    app = getattr(module, attribute)
    at_once = getattr(module, sys.argv[3]) if len(sys.argv) > 3 else None
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(2048)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    listeners = Listeners(app, [(sock, None)], at_once=at_once)
    listeners.start()
    try:
        stop.wait()
    finally:
        listeners.close()
        sock.close()


if __name__ == "__main__":
    main()
