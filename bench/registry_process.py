"""Start and stop a registry through its CLI, for benchmarks. Loopback only."""
from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / ".venv" / "bin" / "schema-registry"
sys.path.insert(0, str(ROOT))

from store.records import SchemaKey, SchemaValue, encode_key, encode_value  # noqa: E402


def asgi_floor_command(target: str, port: int, at_once: str | None = None) -> list[str]:
    """The command serving the bare ASGI app `target` (MODULE:ATTRIBUTE, the module in
    the working directory) on 127.0.0.1:`port` as the registry serves its own (with the
    module's attribute `at_once` answering at once, if given)."""
    return [sys.executable, str(ROOT / "bench" / "asgi_floor.py"), target, str(port), *([at_once] if at_once else [])]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def avro_record(n: int) -> str:
    """A realistic ~10-field record schema, distinct for each n."""
    fields = [{"name": f"f{i}", "type": t} for i, t in enumerate(
        ["long", "string", "double", ["null", "string"], "boolean", "int", "bytes", "float"])]
    fields.append({"name": "tags", "type": {"type": "array", "items": "string"}})
    return json.dumps({"type": "record", "name": f"Event{n}", "namespace": "bench", "fields": fields},
                      separators=(",", ":"))


def prefill(data_dir: Path, count: int) -> None:
    """Write `count` schema records straight into the embedded log, in one transaction.

    Registering them over HTTP would cost one fsync each; the node replays these
    records exactly as it would replay its own.
    """
    from store.sqlite_log import SqliteLog

    path = data_dir / "schemas.sqlite"
    SqliteLog(str(path)).close()  # creates the tables
    conn = sqlite3.connect(path)
    with conn:
        rows = []
        for n in range(1, count + 1):
            key = SchemaKey(f"subject-{n}", 1)
            rows.append((n - 1, encode_key(key), encode_value(SchemaValue(key.subject, 1, n, avro_record(n)))))
        conn.executemany("INSERT INTO log(offset, key, value) VALUES (?, ?, ?)", rows)
        conn.execute("UPDATE next_offset SET value = ?", (count,))
    conn.close()


def rss_kib(pid: int) -> int:
    """Resident memory of `pid` and its children, in KiB."""
    total = 0
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for p in pids:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


def tree_cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of `pid` and every process below it, all threads
    (the registry's work runs in its worker process, a child of the one started)."""
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            stat = Path(f"/proc/{current}/stat").read_text()
            children = [int(child) for task in Path(f"/proc/{current}/task").iterdir()
                        for child in (task / "children").read_text().split()]
        except OSError:  # it ended meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
        todo += children
    return total


@contextmanager
def registry(data_dir: Path, env: dict[str, str] | None = None, ready_timeout: float = 60,
             cli: Path = CLI, extra_listeners: str = "") -> Iterator[tuple[str, int]]:
    """Run `schema-registry serve` (this checkout's, or `cli`: another checkout's, to compare
    before and after in one run) on a free loopback port (and `extra_listeners`, a
    comma-separated list); yield (url, pid). Always stops it."""
    port = free_port()
    listeners = ",".join([f"http://127.0.0.1:{port}", *([extra_listeners] if extra_listeners else [])])
    environ = dict(os.environ, SCHEMA_REGISTRY_LISTENERS=listeners,
                   SCHEMA_REGISTRY_EMBEDDED_STORE_PATH=str(data_dir), **(env or {}))
    proc = subprocess.Popen([str(cli), "serve", "--log-level", "WARNING"], env=environ,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/ready", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the registry did not become ready")
            time.sleep(0.05)
        yield url, proc.pid
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
