"""Operating mistakes and HTTP-level refusals, against the real server process (granian).

A second registry on a busy port must fail at once; a serving worker that dies must be
logged and restarted; requests refused before they reach a route still get Confluent's
error body.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time

import pytest

from tests.api.support import CLI, RegistryFactory, RegistryProcess, register, unique_record, wait_until


def raw_request(port: int, request: bytes) -> tuple[int, bytes]:
    """Send `request` as is; return the status and the body."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    return int(head.split(b" ", 2)[1]), body


def test_a_second_registry_on_a_busy_port_fails_at_once(registry: RegistryProcess, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCHEMA_REGISTRY_")}
    env.update(SCHEMA_REGISTRY_LISTENERS=registry.url, SCHEMA_REGISTRY_EMBEDDED_STORE_PATH=str(tmp_path))
    began = time.monotonic()
    second = subprocess.run([str(CLI), "serve"], env=env, capture_output=True, timeout=30)
    assert second.returncode != 0, "a second registry must not share the port with the first"
    assert b"address already in use" in second.stdout + second.stderr, second.stderr[-2000:]
    assert time.monotonic() - began < 15, "it fails at once, before building a node"
    assert registry.get("/subjects").status_code == 200, "the first one keeps serving"
    assert not (tmp_path / "schemas.sqlite").exists(), "the second one never opened a store"


def test_a_killed_worker_is_logged_and_restarted(start_registry: RegistryFactory, subject: str):
    server = start_registry()
    schema_id = register(server, subject, unique_record(subject))
    (worker,) = server.worker_pids()
    os.kill(worker, signal.SIGKILL)
    wait_until(lambda: server.worker_pids() and server.worker_pids() != [worker], 30,
               "a new worker in place of the killed one")
    server.wait_ready(30)
    assert server.proc is not None and server.proc.poll() is None, "the registry keeps running"
    assert server.get(f"/schemas/ids/{schema_id}").status_code == 200, "the new worker replayed the log"
    log = server.log_path.read_text(errors="replace")
    assert "Unexpected exit from worker" in log, f"the death must be logged:\n{server.log_tail()}"


@pytest.mark.parametrize("request_bytes,status", [
    (b"GET /subjects/" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    (b"GET /subjects HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n", 431),
    (b"GET subjects HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    (b"GET //subjects HTTP/1.1\r\nHost: x\r\n\r\n", 404),
    (b"GET /mode/x://y/mode HTTP/1.1\r\nHost: x\r\n\r\n", 404),
])
def test_refusals_before_any_route_carry_confluents_body(registry: RegistryProcess, request_bytes, status):
    answered, body = raw_request(registry.port, request_bytes)
    assert answered == status, body[:200]
    assert body.startswith(b'{"error_code":' + str(status).encode()), body[:200]
