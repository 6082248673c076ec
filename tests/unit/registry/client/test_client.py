"""The client's transport and caches against tiny scripted HTTP stubs on loopback.

Stubs, not the registry, because these tests script what a node answers (a 503, a
dropped connection, a slow reply) and count what reached it. Nothing sleeps: the
client's backoff sleep is replaced by a recorder, and its clocks by fake ones.
"""
from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests
from confluent_kafka.schema_registry import RegisteredSchema, Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError

from registry.client import RegistryUnreachable, SchemaRegistryClient, caches
from registry.client.single_flight import SingleFlight
from registry.client.transport import full_jitter

SCHEMA = '{"type":"string"}'
Reply = tuple[int, Any]  # (status, JSON body), or DROP to close the connection unanswered
DROP: Reply = (-1, None)


class Stub:
    """A scripted HTTP server: `replies[path]` lists answers, the last one repeats."""

    def __init__(self) -> None:
        self.replies: dict[str, list[Reply]] = {}
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self.connections: set[tuple[str, int]] = set()
        self.hold = threading.Event()
        self.hold.set()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def handle_one(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                stub.requests.append((self.command, self.path, dict(self.headers), body))
                stub.connections.add(self.client_address)
                stub.hold.wait(10)
                path = self.path.split("?")[0]
                script = stub.replies.get(path) or [(404, {"error_code": 40401, "message": "Subject not found"})]
                status, reply = script.pop(0) if len(script) > 1 else script[0]
                if (status, reply) == DROP:
                    self.close_connection = True
                    return
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = handle_one

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()

    def paths(self) -> list[str]:
        return [f"{method} {path.split('?')[0]}" for method, path, _, _ in self.requests]

    def close(self) -> None:
        self.hold.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stubs() -> Iterator[Callable[[], Stub]]:
    made: list[Stub] = []

    def make() -> Stub:
        made.append(Stub())
        return made[-1]
    yield make
    for stub in made:
        stub.close()


def closed_port_url() -> str:
    """A loopback URL nothing listens on: connections are refused at once."""
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Poll `predicate` until it holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        pause.wait(0.005)


def make_client(url: str, **conf: Any) -> tuple[SchemaRegistryClient, list[float]]:
    """A client whose backoff sleeps are recorded instead of slept."""
    client = SchemaRegistryClient({"url": url, **conf})
    slept: list[float] = []
    client._transport._sleep = slept.append
    return client, slept


# ---- caching ---------------------------------------------------------------------------


def test_get_schema_is_fetched_once(stubs: Callable[[], Stub]) -> None:
    stub = stubs()
    stub.replies["/schemas/ids/5"] = [(200, {"schema": SCHEMA})]
    client, _ = make_client(stub.url)
    assert client.get_schema(5) == Schema(SCHEMA, "AVRO")
    assert client.get_schema(5) == Schema(SCHEMA, "AVRO")
    assert stub.paths() == ["GET /schemas/ids/5"], "an id never changes meaning: fetched once, cached forever"


def test_register_and_lookup_are_cached_per_subject_and_schema(stubs: Callable[[], Stub]) -> None:
    stub = stubs()
    stub.replies["/subjects/s/versions"] = [(200, {"id": 3})]
    stub.replies["/subjects/s"] = [(200, {"subject": "s", "version": 1, "id": 3, "schema": SCHEMA})]
    client, _ = make_client(stub.url)
    for _ in range(3):
        assert client.register_schema("s", Schema(SCHEMA, "AVRO")) == 3
        assert client.lookup_schema("s", Schema(SCHEMA, "AVRO")) == RegisteredSchema(
            subject="s", version=1, schema_id=3, guid=None, schema=Schema(SCHEMA, "AVRO"))
    assert stub.paths() == ["POST /subjects/s/versions", "POST /subjects/s"], "one request each"
    assert json.loads(stub.requests[0][3]) == {"schema": SCHEMA, "schemaType": "AVRO", "references": []}


def test_latest_version_is_cached_until_cleared_or_deleted(stubs: Callable[[], Stub]) -> None:
    stub = stubs()
    stub.replies["/subjects/s/versions/latest"] = [(200, {"subject": "s", "version": 2, "id": 9, "schema": SCHEMA})]
    stub.replies["/subjects/s/versions/2"] = [(200, 2)]
    client, _ = make_client(stub.url)
    assert client.get_latest_version("s").version == 2
    assert client.get_latest_version("s").version == 2
    assert stub.paths().count("GET /subjects/s/versions/latest") == 1, "the second call is served from cache"
    client.clear_latest_caches()
    client.get_latest_version("s")
    client.delete_version("s", 2)
    client.get_latest_version("s")
    assert stub.paths().count("GET /subjects/s/versions/latest") == 3, \
        "clear_latest_caches and delete_version both make the next call ask again"


def test_latest_cache_ttl_and_capacity() -> None:
    now = [100.0]
    cache = caches.expiring(capacity=2, ttl=30.0, timer=lambda: now[0])
    cache.put("a", 1)
    now[0] += 29.9
    assert cache.get("a") == 1, "within cache.latest.ttl.sec the cached latest is used"
    now[0] += 0.2
    assert cache.get("a") is None, "after the TTL the latest version is asked for again"
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (None, 2, 3), "cache.capacity bounds it"


def test_without_a_ttl_the_latest_cache_only_evicts_the_least_recently_used() -> None:
    now = [100.0]
    cache = caches.expiring(capacity=2, ttl=None, timer=lambda: now[0])
    cache.put("a", 1)
    cache.put("b", 2)
    now[0] += 10 ** 9
    assert cache.get("a") == 1, "without cache.latest.ttl.sec an entry never expires"
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3), \
        "a full cache drops the entry used least recently (b), not the oldest inserted (a)"


def test_the_client_caches_are_bounded_by_cache_capacity(stubs: Callable[[], Stub]) -> None:
    stub = stubs()
    for i in (1, 2, 3):
        stub.replies[f"/schemas/ids/{i}"] = [(200, {"schema": SCHEMA})]
    client, _ = make_client(stub.url, **{"cache.capacity": 2})
    for i in (1, 2, 3, 3, 2):
        client.get_schema(i)
    assert stub.paths() == ["GET /schemas/ids/1", "GET /schemas/ids/2", "GET /schemas/ids/3"], \
        "ids 2 and 3 stay cached"
    client.get_schema(1)
    assert stub.paths()[-1] == "GET /schemas/ids/1" and len(stub.paths()) == 4, \
        "a capacity of 2 evicted id 1, the least recently used, so it is fetched again"


def test_deleting_a_version_forgets_the_subjects_registrations_but_keeps_ids(stubs: Callable[[], Stub]) -> None:
    stub = stubs()
    stub.replies["/subjects/s/versions"] = [(200, {"id": 3})]
    stub.replies["/subjects/s/versions/1"] = [(200, {"subject": "s", "version": 1, "id": 3, "schema": SCHEMA}),
                                              (200, 1)]
    stub.replies["/subjects/t/versions"] = [(200, {"id": 4})]
    client, _ = make_client(stub.url)
    client.register_schema("s", Schema(SCHEMA, "AVRO"))
    client.register_schema("t", Schema(SCHEMA, "AVRO"))
    client.get_version("s", 1)
    client.delete_version("s", 1)
    stub.replies["/subjects/s/versions/1"] = [(200, {"subject": "s", "version": 1, "id": 3, "schema": SCHEMA})]
    before = len(stub.requests)
    client.register_schema("s", Schema(SCHEMA, "AVRO"))
    client.register_schema("t", Schema(SCHEMA, "AVRO"))
    client.get_version("s", 1)
    client.get_schema(3)
    assert stub.paths()[before:] == ["POST /subjects/s/versions", "GET /subjects/s/versions/1"], \
        "s's registration and version are asked again; t's registration and id 3 stay cached"


def test_concurrent_misses_make_one_request() -> None:
    flights = SingleFlight()
    calls: list[int] = []
    release = threading.Event()
    results: list[int] = []

    def fetch() -> int:
        calls.append(1)
        release.wait(10)
        return 42

    threads = [threading.Thread(target=lambda: results.append(flights.do("id", fetch))) for _ in range(8)]
    threads[0].start()
    wait_until(lambda: bool(calls), "the first call is in flight")
    flight = flights._flights["id"]
    for t in threads[1:]:
        t.start()
    wait_until(lambda: len(flight.done._cond._waiters) == 7,  # type: ignore[attr-defined]
               "all seven followers wait on the leader's result")
    release.set()
    for t in threads:
        t.join(10)
    assert calls == [1], "eight threads missing the same key made one call between them"
    assert results == [42] * 8, "and all got its result"


# ---- retries ---------------------------------------------------------------------------


def test_retriable_answers_are_retried_with_jittered_backoff(stubs: Callable[[], Stub]) -> None:
    stub = stubs()
    stub.replies["/schemas/ids/1"] = [
        (503, {"error_code": 50002, "message": "not ready"}),
        (500, {"error_code": 50004, "message": "Unknown leader"}),
        (429, {"error_code": 429, "message": "slow down"}),
        (408, {"error_code": 408, "message": "timeout"}),
        (200, {"schema": SCHEMA})]
    client, slept = make_client(stub.url, **{"max.retries": 4, "retries.wait.ms": 100, "retries.max.wait.ms": 250})
    assert client.get_schema(1).schema_str == SCHEMA, "503, 50004 (leader change), 429 and 408 are all retried"
    assert len(stub.requests) == 5
    assert len(slept) == 4 and all(0 <= s < bound for s, bound in zip(slept, [0.1, 0.2, 0.25, 0.25])), \
        "full jitter: each wait is below base * 2^attempt, capped at retries.max.wait.ms"


def test_full_jitter_bounds() -> None:
    assert all(0 <= full_jitter(1000, 20000, 3) < 8.0 for _ in range(200))
    assert all(0 <= full_jitter(1000, 20000, 10) < 20.0 for _ in range(200))


def test_client_errors_are_not_retried(stubs: Callable[[], Stub]) -> None:
    stub = stubs()
    stub.replies["/subjects/s/versions"] = [(409, {"error_code": 409, "message": "incompatible schema"})]
    client, slept = make_client(stub.url)
    with pytest.raises(SchemaRegistryError) as raised:
        client.register_schema("s", Schema(SCHEMA, "AVRO"))
    assert (raised.value.http_status_code, raised.value.error_code, raised.value.error_message) == \
        (409, 409, "incompatible schema"), "the registry's status, code and message are kept"
    assert len(stub.requests) == 1 and slept == [], "a 4xx answer is final"


def test_exhausted_retries_raise_the_last_answer(stubs: Callable[[], Stub]) -> None:
    stub = stubs()
    stub.replies["/config"] = [(500, {"error_code": 50003, "message": "Error while forwarding"})]
    client, slept = make_client(stub.url, **{"max.retries": 2})
    with pytest.raises(SchemaRegistryError) as raised:
        client.get_compatibility()
    assert (raised.value.http_status_code, raised.value.error_code) == (500, 50003)
    assert len(stub.requests) == 3 and len(slept) == 2, "max.retries retries after the first attempt"


def test_a_non_json_error_body_still_raises_schema_registry_error(stubs: Callable[[], Stub]) -> None:
    stub = stubs()
    stub.replies["/subjects"] = [(400, "plain text")]
    client, _ = make_client(stub.url)
    with pytest.raises(SchemaRegistryError) as raised:
        client.get_subjects()
    assert raised.value.error_code == SchemaRegistryError.UNKNOWN


# ---- failover --------------------------------------------------------------------------


def test_a_dead_node_is_skipped_and_retried_later(stubs: Callable[[], Stub]) -> None:
    live = stubs()
    live.replies["/subjects"] = [(200, ["a"])]
    dead = closed_port_url()
    now = [1000.0]
    client, slept = make_client(f"{dead},{live.url}", **{"url.dead.skip.ms": 5000})
    client._transport._clock = lambda: now[0]
    assert client.get_subjects() == ["a"], "a refused connection fails over to the next node"
    assert slept == [], "no backoff while another node is left to try"
    assert [n.url for n in client._transport.order()] == [live.url, dead], \
        "the dead node is skipped (tried last) during url.dead.skip.ms"
    client.get_subjects()
    assert len(live.requests) == 2
    now[0] += 5.001
    assert all(n.dead_until <= now[0] for n in client._transport.nodes), \
        "after url.dead.skip.ms the dead node is live again, to be retried"


def test_requests_stick_to_the_node_that_answered(stubs: Callable[[], Stub]) -> None:
    first, second = stubs(), stubs()
    for stub in (first, second):
        stub.replies["/subjects"] = [(200, [])]
    first.replies["/subjects"] = [DROP]
    client, _ = make_client(f"{first.url},{second.url}")
    for _ in range(5):
        client.get_subjects()
    assert len(first.requests) == 1 and len(second.requests) == 5, \
        "after a dropped connection the next node serves, and keeps serving"
    assert len(second.connections) == 1, "one pooled connection is reused for all five requests"


def test_a_retriable_answer_moves_on_to_the_next_node(stubs: Callable[[], Stub]) -> None:
    follower, leader = stubs(), stubs()
    follower.replies["/subjects/s/versions"] = [(500, {"error_code": 50003, "message": "forwarding failed"})]
    leader.replies["/subjects/s/versions"] = [(200, {"id": 4})]
    client, slept = make_client(f"{follower.url},{leader.url}")
    assert client.register_schema("s", Schema(SCHEMA, "AVRO")) == 4
    assert slept == [], "the other node answered within the same round"


def test_no_node_reachable_raises_registry_unreachable() -> None:
    client, slept = make_client(f"{closed_port_url()},{closed_port_url()}", **{"max.retries": 1})
    with pytest.raises(RegistryUnreachable, match="no schema registry node reachable"):
        client.get_subjects()
    assert len(slept) == 1, "every node is tried in each round, with one backoff between the two rounds"
    assert issubclass(RegistryUnreachable, requests.ConnectionError)


def test_a_slow_node_times_out_and_the_next_one_answers(stubs: Callable[[], Stub]) -> None:
    slow, fast = stubs(), stubs()
    slow.hold.clear()
    fast.replies["/subjects"] = [(200, ["x"])]
    client, _ = make_client(f"{slow.url},{fast.url}", timeout=0.3)
    assert client.get_subjects() == ["x"], "the request timeout bounds each attempt"
    assert [n.url for n in client._transport.order()][0] == fast.url


# ---- auth and configuration -------------------------------------------------------------


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize("conf, url_userinfo, expected", [
    ({"basic.auth.user.info": "alice:s3cret"}, "", basic("alice", "s3cret")),
    ({"basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": "a:b:c"}, "", basic("a", "b:c")),
    ({"basic.auth.credentials.source": "URL"}, "bob:pw%40x@", basic("bob", "pw@x")),
    ({}, "bob:pw@", basic("bob", "pw")),
    ({"basic.auth.credentials.source": "SASL_INHERIT", "sasl.username": "u", "sasl.password": "p"}, "",
     basic("u", "p")),
])
def test_basic_auth(stubs: Callable[[], Stub], conf: dict[str, Any], url_userinfo: str, expected: str) -> None:
    stub = stubs()
    stub.replies["/subjects"] = [(200, [])]
    client = SchemaRegistryClient({"url": stub.url.replace("http://", f"http://{url_userinfo}"), **conf})
    client.get_subjects()
    assert stub.requests[0][2]["Authorization"] == expected


@pytest.mark.parametrize("conf, message", [
    ({}, "Missing required configuration property url"),
    ({"url": "ftp://x"}, "Invalid url"),
    ({"url": "http://x", "nonsense": 1}, "Unrecognized properties"),
    ({"url": "http://u:p@x", "basic.auth.user.info": "a:b"}, "userinfo credentials in the URL"),
    ({"url": "http://x", "basic.auth.user.info": "no-colon"}, "username"),
    ({"url": "http://x", "basic.auth.credentials.source": "SASL_INHERIT"}, "sasl.username"),
])
def test_bad_configuration_is_refused(conf: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SchemaRegistryClient(conf)


def test_mock_urls_give_confluent_kafkas_mock_client() -> None:
    mock = SchemaRegistryClient.new_client({"url": "mock://anything"})
    assert type(mock).__name__ == "MockSchemaRegistryClient", "tests written against confluent-kafka keep working"


def test_same_methods_and_parameter_names_as_confluent_kafkas_client() -> None:
    import inspect

    from confluent_kafka.schema_registry import SchemaRegistryClient as Theirs

    public = [n for n in dir(Theirs) if not n.startswith("_") and callable(getattr(Theirs, n))]
    for name in public:
        assert hasattr(SchemaRegistryClient, name), f"{name} is missing: switching would not be an import change"
        theirs = list(inspect.signature(getattr(Theirs, name)).parameters)
        ours = list(inspect.signature(getattr(SchemaRegistryClient, name)).parameters)
        assert ours == theirs, f"{name}: keyword arguments written for confluent-kafka must work unchanged"


def test_the_environments_proxy_and_netrc_still_apply_though_read_once(
        stubs: Callable[[], Stub], tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The transport reads the environment once per node instead of on every request:
    # what it reads must be what requests would have read.
    proxy = stubs()
    target = "http://registry.invalid:8081"
    proxy.replies[f"{target}/subjects"] = [(200, ["via-proxy"])]
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert SchemaRegistryClient({"url": target}).get_subjects() == ["via-proxy"], "HTTP_PROXY is used"

    direct = stubs()
    direct.replies["/subjects"] = [(200, ["direct"])]
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login carol password n3trc\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    assert SchemaRegistryClient({"url": direct.url}).get_subjects() == ["direct"], "NO_PROXY is honoured"
    assert direct.requests[0][2]["Authorization"] == basic("carol", "n3trc"), "~/.netrc credentials are sent"
    assert len(proxy.requests) == 1
