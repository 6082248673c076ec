"""Forwarding opens its HTTP session (requests) with the first forwarded request: start-up
imports none of it, and a forwarded request answers as before."""
from __future__ import annotations

import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from registry import errors
from registry.http.forward import FORWARD_HEADER, Forwarder


class _Leader(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        answer = b'{"seen":"' + body + b'","forward":"' + self.headers[FORWARD_HEADER].encode() + b'"}'
        self.send_response(409)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def leader():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Leader)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_start_up_imports_no_http_client_for_forwarding():
    code = "import sys, registry.http.server; assert 'requests' not in sys.modules, 'requests imported at start'"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_a_forwarded_request_brings_back_the_leaders_answer(leader):
    forwarder = Forwarder(5.0)
    try:
        answer = forwarder.forward(lambda: leader, "POST", "/subjects/a/versions?normalize=true",
                                   {"Content-Type": "application/json"}, b"x")
        again = forwarder.forward(lambda: leader, "POST", "/x", {}, b"y")  # the session is kept
    finally:
        forwarder.close()
    assert answer.status == 409 and answer.content_type == "application/vnd.schemaregistry.v1+json", \
        "the leader's status and type come back unchanged"
    assert answer.body == b'{"seen":"x","forward":"' + leader.encode() + b'"}', \
        "the body went on, marked with the leader it was sent to"
    assert again.body.startswith(b'{"seen":"y"'), "a second request goes through the same session"


def test_an_unreachable_leader_is_a_forwarding_error():
    forwarder = Forwarder(0.5)
    try:
        with pytest.raises(errors.ForwardingError):
            forwarder.forward(lambda: "http://127.0.0.1:9", "POST", "/x", {}, b"")
    finally:
        forwarder.close()


def test_a_forwarder_that_never_forwarded_closes():
    Forwarder(1.0).close()  # no session was opened: nothing to close, and no error


def test_a_ready_server_imports_what_start_up_deferred_then_freezes_it():
    code = ("import gc, sys\nfrom registry.http.server import settle_after_ready\nsettle_after_ready()\n"
            "missing = [m for m in ('requests', 'registry.http.leader_session', 'registry.schema_types.json_schema',"
            " 'registry.schema_types.protobuf') if m not in sys.modules]\n"
            "assert not missing, missing\n"
            "from registry.schema_types import protobuf\n"
            "assert gc.is_tracked(protobuf.__dict__) and not any(protobuf.__dict__ is o for o in gc.get_objects()), "
            "'the deferred modules are out of the collector\\'s sight'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
