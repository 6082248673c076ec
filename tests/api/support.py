"""Running the registry CLI as a real process, and talking to it, for the API tests."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import requests

# The CLI installed beside the interpreter running the tests (`make install` puts it there).
CLI = shutil.which("schema-registry", path=str(Path(sys.executable).parent)) or "schema-registry"
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
READY_TIMEOUT = 20.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.02) -> Any:
    """Poll `predicate` until it returns something truthy; fail naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)  # a poll interval inside a deadline, not a bare sleep


def pid_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def child_pids(pid: int) -> list[int]:
    """Direct children of `pid` (the worker of granian's supervisor)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


class RegistryProcess:
    """One `schema-registry serve` process group on `data_dir`.

    `start()` blocks until `/ready` answers 200 (or fails with the server's log).
    `restart()` stops it (gracefully) and starts it again on the same data dir and port.
    """

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None, *, scheme: str = "http",
                 ca: Path | None = None, client_cert: tuple[Path, Path] | None = None) -> None:
        """`scheme` https serves the one listener over TLS; its requests trust `ca` and
        present `client_cert` (certificate, key) when given."""
        self.data_dir = data_dir
        self.extra_env = dict(env or {})
        self.port = free_port()
        self.scheme = scheme
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"{data_dir.name}-server-{uuid.uuid4().hex[:6]}.log"
        self.session = requests.Session()
        self.tls_options: dict[str, Any] = {}
        if ca is not None:
            self.tls_options["verify"] = str(ca)
        if client_cert is not None:
            self.tls_options["cert"] = (str(client_cert[0]), str(client_cert[1]))
        if self.tls_options:
            # REQUESTS_CA_BUNDLE, when set, would override a session's `verify`.
            self.session.trust_env = False
            self.session.verify = self.tls_options.get("verify", True)
            self.session.cert = self.tls_options.get("cert")

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None, "the registry is not running"
        return self.proc.pid

    def start(self) -> "RegistryProcess":
        env = {k: v for k, v in os.environ.items() if not k.startswith("SCHEMA_REGISTRY_")}
        env.update({
            "SCHEMA_REGISTRY_LISTENERS": self.url,
            "SCHEMA_REGISTRY_EMBEDDED_STORE_PATH": str(self.data_dir),
        })
        env.update(self.extra_env)
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen([str(CLI), "serve", "--log-level", "WARNING"], env=env,
                                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        finally:
            log.close()
        try:
            self.wait_ready()
        except BaseException:
            self.kill_group()
            raise
        return self

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc is not None, "start() launches the process first"
            if self.proc.poll() is not None:
                raise AssertionError(f"the registry exited with {self.proc.returncode} before it was "
                                     f"ready; its log:\n{self.log_tail()}")
            try:
                if requests.get(f"{self.url}/ready", timeout=1, **self.tls_options).status_code == 200:
                    return
            except requests.RequestException:
                pass
            if time.monotonic() >= deadline:
                raise AssertionError(f"the registry was not ready within {timeout}s; its log:\n"
                                     f"{self.log_tail()}")
            time.sleep(0.02)  # poll interval inside the deadline

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def worker_pids(self) -> list[int]:
        return child_pids(self.pid)

    def kill9(self) -> list[int]:
        """SIGKILL the supervisor only (as a crash would); return the workers it had."""
        workers = self.worker_pids()
        assert self.proc is not None, "the registry is not running"
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        return workers

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the group and wait; SIGKILL it if it does not stop in time."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill_group()

    def kill_group(self) -> None:
        """SIGKILL every process left in the group (idempotent)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def restart(self) -> "RegistryProcess":
        self.stop()
        return self.start()

    # ---- HTTP ---------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, *, raw: bytes | str | None = None,
                content_type: str | None = CONTENT_TYPE, **kwargs: Any) -> requests.Response:
        """`body` is sent as JSON; `raw` as given. `path` must already be percent-encoded."""
        headers = dict(kwargs.pop("headers", {}))
        data = raw
        if body is not None:
            data = json.dumps(body)
        if data is not None and content_type is not None:
            headers.setdefault("Content-Type", content_type)
        kwargs.setdefault("timeout", 30)
        return self.session.request(method, self.url + path, data=data, headers=headers, **kwargs)

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> requests.Response:
        return self.request("POST", path, body, **kwargs)

    def put(self, path: str, body: Any = None, **kwargs: Any) -> requests.Response:
        return self.request("PUT", path, body, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("DELETE", path, **kwargs)


class RegistryFactory:
    """Starts registries on tmp dirs and always kills every one of them at `close()`."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.started: list[RegistryProcess] = []

    def __call__(self, data_dir: Path | None = None, env: dict[str, str] | None = None,
                 start: bool = True, **tls: Any) -> RegistryProcess:
        if data_dir is None:
            data_dir = self.base / f"data-{uuid.uuid4().hex[:8]}"
        server = RegistryProcess(data_dir, env, **tls)
        self.started.append(server)
        return server.start() if start else server

    def close(self) -> None:
        for server in self.started:
            server.kill_group()
            server.session.close()




# ---- schemas and assertions shared by the API tests ------------------------------------


def path_of(subject: str) -> str:
    """A subject as it goes in a URL path: every reserved byte percent-encoded, `/` too."""
    return quote(subject, safe="")


def record(name: str, *fields: tuple[str, Any], namespace: str | None = None,
           defaults: dict[str, Any] | None = None) -> str:
    """An Avro record schema as compact JSON text."""
    body: dict[str, Any] = {"type": "record", "name": name}
    if namespace:
        body["namespace"] = namespace
    body["fields"] = [dict({"name": n, "type": t}, **({"default": defaults[n]} if defaults and n in defaults else {}))
                      for n, t in fields]
    return json.dumps(body, separators=(",", ":"))


def unique_record(tag: str, *extra_fields: tuple[str, Any], defaults: dict[str, Any] | None = None) -> str:
    """A record schema no other test registers (ids are shared by equal content)."""
    name = "R_" + "".join(c if c.isalnum() else "_" for c in tag)
    return record(name, ("id", "long"), *extra_fields, defaults=defaults)


def assert_error(response: requests.Response, status: int, error_code: int | tuple[int, ...],
                 what: str) -> dict[str, Any]:
    """`response` is Confluent's error body with this status and error code."""
    codes = error_code if isinstance(error_code, tuple) else (error_code,)
    assert response.status_code == status, (
        f"{what}: expected HTTP {status}, got {response.status_code}: {response.text[:300]}")
    body = response.json()
    assert isinstance(body, dict) and isinstance(body.get("error_code"), int) \
        and isinstance(body.get("message"), str), f"{what}: not an error body: {body!r}"
    assert body["error_code"] in codes, f"{what}: expected error_code {codes}, got {body!r}"
    return body


def ok_json(response: requests.Response, what: str) -> Any:
    """The JSON body of a 200 answer."""
    assert response.status_code == 200, f"{what}: expected 200, got {response.status_code}: {response.text[:300]}"
    return response.json()


def register(server: "RegistryProcess", subject: str, schema: str, **extra: Any) -> int:
    """Register `schema` under `subject` and return its id (asserting a 200)."""
    body = {"schema": schema, **extra}
    answer = ok_json(server.post(f"/subjects/{path_of(subject)}/versions", body), f"register under {subject!r}")
    assert isinstance(answer.get("id"), int), f"register answers an integer id: {answer!r}"
    return answer["id"]
