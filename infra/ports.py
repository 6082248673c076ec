"""Loopback ports for the servers."""

from __future__ import annotations

import socket

from infra.errors import InfraError

HOST = "127.0.0.1"


def free_port(reserved: set[int] | None = None) -> int:
    """Return a TCP port on 127.0.0.1 that the kernel just reported as free.

    There is a short race until the server binds it; callers retry start-up on a
    bind failure. Ports in ``reserved`` are never returned. Does not block.
    """
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]
        if not reserved or port not in reserved:
            return port
    raise InfraError("could not find a free port")


def port_is_free(port: int) -> bool:
    """True if nothing listens on 127.0.0.1:port and it can be bound. Does not block."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True
