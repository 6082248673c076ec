"""Hostile requests: the time each takes to answer, and the delay it adds to an unrelated
write, for this checkout and a reference checkout (the code before the hardening), in one run.

    .venv/bin/python bench/hostile.py --before /path/to/old/checkout   # its .venv/bin/schema-registry
    .venv/bin/python bench/hostile.py                                  # this checkout only

For each request: a fresh registry on the embedded store; a writer thread registers a small
new schema every 50 ms throughout (the unrelated write); the hostile request is sent (with
its set-up, if any, done first and not timed). Printed: the hostile request's status and
time to answer, and the unrelated writes' p50 and max latency while it ran, next to the
same writes' p50 with nothing else going on. A request still unanswered after its cap is
shown as "> cap". Also: the memory held by 30 request bodies that never finish, and the
parse time of a typical 10-field record against `json.loads` of the same text.

The format classes (JSON Schema, Protobuf) are measured against unrelated reads instead:
a reader thread sends `GET /subjects` in a loop throughout, and the table shows the
hostile request's status and time to answer, and the reads' p99 and max latency while it
ran, next to their p99 with nothing else going on (a read must never wait for a check).
"""
from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from registry_process import CLI, ROOT, registry, rss_kib  # noqa: E402

HEADERS = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
CAP_SECONDS = 60.0


def record(name: str, fields: list[dict]) -> str:
    return json.dumps({"type": "record", "name": name, "fields": fields})


@dataclass
class Background:
    """Registers a small new schema every 50 ms; records each write's latency."""

    url: str
    latencies: list[tuple[float, float]] = field(default_factory=list)  # (started, seconds)
    _stop: threading.Event = field(default_factory=threading.Event)
    pause: float = 0.05  # seconds between two requests

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def send(self, session: requests.Session, n: int) -> None:
        session.post(f"{self.url}/subjects/background-{n}/versions", headers=HEADERS, timeout=CAP_SECONDS,
                     data=json.dumps({"schema": record(f"Bg{n}", [{"name": "a", "type": "int"}])}))

    def _run(self) -> None:
        session = requests.Session()
        n = 0
        while not self._stop.is_set():
            n += 1
            began = time.monotonic()
            try:
                self.send(session, n)
            except requests.RequestException:
                pass
            self.latencies.append((began, time.monotonic() - began))
            if self.pause:
                self._stop.wait(self.pause)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(CAP_SECONDS + 5)

    def during(self, start: float, end: float) -> list[float]:
        return [lat for began, lat in self.latencies if start <= began + lat and began <= end]


@dataclass
class Reader(Background):
    """Sends `GET /subjects` in a loop, without pause; records each read's latency."""

    pause: float = 0.0

    def send(self, session: requests.Session, n: int) -> None:
        session.get(f"{self.url}/subjects", headers=HEADERS, timeout=CAP_SECONDS)


def p99(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


@dataclass
class Hostile:
    name: str
    send: Callable[[str], int]  # url -> status
    setup: Callable[[str], None] = lambda url: None


def post(url: str, path: str, body: dict, timeout: float = CAP_SECONDS) -> int:
    return requests.post(f"{url}{path}", headers=HEADERS, data=json.dumps(body), timeout=timeout).status_code


def fan_out_setup(url: str, per_level: int = 100, levels: int = 3) -> None:
    previous: list[str] = []
    for level in range(levels):
        current = []
        for i in range(per_level):
            name = f"L{level}N{i}"
            fields = [{"name": f"f{j}", "type": ref} for j, ref in enumerate(previous)] or [{"name": "x", "type": "int"}]
            refs = [{"name": ref, "subject": ref, "version": 1} for ref in previous]
            post(url, f"/subjects/{name}/versions", {"schema": record(name, fields), "references": refs},
                 timeout=600)
            current.append(name)
        previous = current


def fan_out_attack(url: str) -> int:
    refs = [{"name": f"L2N{i}", "subject": f"L2N{i}", "version": 1} for i in range(100)]
    fields = [{"name": f"f{i}", "type": f"L2N{i}"} for i in range(100)]
    return post(url, "/subjects/top/versions", {"schema": record("Top", fields), "references": refs})


def big_enum(url: str) -> int:
    symbols = [f"S{i}" for i in range(20000)] + ["S77"]
    return post(url, "/subjects/enum/versions", {"schema": json.dumps({"type": "enum", "name": "E", "symbols": symbols})})


def union_setup(url: str) -> None:
    branches = [{"type": "fixed", "name": f"F{i}", "size": 1} for i in range(10000)]
    post(url, "/subjects/union/versions", {"schema": json.dumps(branches)}, timeout=600)


def union_attack(url: str) -> int:
    branches = [{"type": "fixed", "name": f"F{i}", "size": 1} for i in range(10000)]
    return post(url, "/subjects/union/versions", {"schema": json.dumps(["null"] + branches)})


def slow_body(url: str) -> int:
    """A POST whose body stops arriving after a few bytes: how long until the server lets go?"""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=CAP_SECONDS) as sock:
        sock.sendall(b"POST /subjects/slow/versions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n{\"schema\":")
        try:
            reply = sock.recv(4096)
        except socket.timeout:
            return 0
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/") else 0


def patterned(count: int, new_properties: int = 0) -> dict:
    """A closed object with `count` patternProperties and `new_properties` properties."""
    return {"type": "object", "additionalProperties": False,
            "patternProperties": {f"^p{i}_[a-z]+$": {"type": "string"} for i in range(count)},
            "properties": {f"n{j}": {"type": "integer"} for j in range(new_properties)}}


def json_patterns_setup(url: str) -> None:
    post(url, "/subjects/patterns/versions", {"schemaType": "JSON", "schema": json.dumps(patterned(5000))},
         timeout=600)


def json_patterns_attack(url: str) -> int:
    return post(url, "/subjects/patterns/versions",
                {"schemaType": "JSON", "schema": json.dumps(patterned(5000, new_properties=100))})


def nested_proto(levels: int = 7, fields: int = 12, leaf_extra: bool = False) -> str:
    """`levels` messages, each holding `fields` fields of the message below (12^7 paths)."""
    lines = ['syntax = "proto3";', "package hostile;",
             "message M0 { int32 a = 1;" + (" string b = 2;" if leaf_extra else "") + " }"]
    for level in range(1, levels + 1):
        body = " ".join(f"M{level - 1} f{i} = {i};" for i in range(1, fields + 1))
        lines.append(f"message M{level} {{ {body} }}")
    return "\n".join(lines)


def proto_nested_setup(url: str) -> None:
    post(url, "/subjects/nested/versions", {"schemaType": "PROTOBUF", "schema": nested_proto()}, timeout=600)


def proto_nested_attack(url: str) -> int:
    return post(url, "/subjects/nested/versions",
                {"schemaType": "PROTOBUF", "schema": nested_proto(leaf_extra=True)})


def proto_braces(url: str) -> int:
    return post(url, "/subjects/braces/versions", {"schemaType": "PROTOBUF", "schema": "}" * (2 * 1024 * 1024)})


HOSTILE_FORMATS = [
    Hostile("json: 100 new props vs 5,000 patternProperties", json_patterns_attack, json_patterns_setup),
    Hostile("protobuf: 7 levels of 12 fields, a new version", proto_nested_attack, proto_nested_setup),
    Hostile("protobuf: 2 MB of '}'", proto_braces),
]

HOSTILE = [
    Hostile("references: 100 per level, 3 below (10^6 paths)", fan_out_attack, fan_out_setup),
    Hostile("enum: 20,000 symbols, one duplicate", big_enum),
    Hostile("union of 10,000 against union of 10,000", union_attack, union_setup),
    Hostile("a body that stops arriving", slow_body),
]


def measure(cli: Path, hostile: Hostile) -> tuple[str, float, float, float, float]:
    """(status, seconds to answer, idle p50 ms, p50 ms during, max ms during) of an
    unrelated write every 50 ms while `hostile` is answered."""
    return _measure(cli, hostile, Background, statistics.median)


def measure_reads(cli: Path, hostile: Hostile) -> tuple[str, float, float, float, float]:
    """(status, seconds to answer, idle p99 ms, p99 ms during, max ms during) of
    `GET /subjects` sent in a loop while `hostile` is answered."""
    return _measure(cli, hostile, Reader, p99)


def _measure(cli: Path, hostile: Hostile, loop: type[Background],
             statistic: Callable[[list[float]], float]) -> tuple[str, float, float, float, float]:
    with tempfile.TemporaryDirectory() as tmp, registry(Path(tmp), cli=cli) as (url, _):
        hostile.setup(url)
        background = loop(url)
        background.start()
        time.sleep(1.0)  # the idle figure: a second of the loop alone
        idle = [lat for _, lat in background.latencies]
        began = time.monotonic()
        try:
            status = str(hostile.send(url))
        except requests.Timeout:
            status = f"> {CAP_SECONDS:g} s"
        except requests.RequestException as exc:
            status = type(exc).__name__
        took = time.monotonic() - began
        time.sleep(0.3)
        background.stop()
        during = background.during(began, began + took) or [0.0]
        return (status, took, statistic(idle) * 1000 if idle else 0.0, statistic(during) * 1000,
                max(during) * 1000)


def held_by_unfinished_bodies(cli: Path, count: int = 30, size: int = 16 * 1024 * 1024) -> float:
    """MiB of RSS the registry gains while `count` clients each send all but one byte of a
    `size`-byte body, and stop."""
    with tempfile.TemporaryDirectory() as tmp, registry(Path(tmp), cli=cli) as (url, pid):
        host, port = url.removeprefix("http://").split(":")
        before = rss_kib(pid)
        sockets = []
        chunk = b"x" * (1024 * 1024)
        for _ in range(count):
            sock = socket.create_connection((host, int(port)), timeout=5)
            sock.sendall(b"POST /subjects/big/versions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         + f"Content-Length: {size}\r\n\r\n".encode())
            try:
                for _ in range(size // len(chunk) - 1):
                    sock.sendall(chunk)
            except OSError:
                pass  # refused early (the in-flight budget): that is the point
            sockets.append(sock)
        time.sleep(2.0)
        after = rss_kib(pid)
        for sock in sockets:
            sock.close()
        return (after - before) / 1024


PARSE = """
import json, time
from registry.schema_types.avro import AVRO
types = ["int", "long", "string", ["null", "string"], {"type": "array", "items": "string"},
         {"type": "map", "values": "long"}, "double", "boolean",
         {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}, {"type": "int", "logicalType": "date"}]
text = json.dumps({"type": "record", "name": "User", "namespace": "com.example",
                   "fields": [{"name": f"f{i}", "type": t} for i, t in enumerate(types)]})
best = best_json = 1e9
for _ in range(7):
    t = time.perf_counter()
    for _ in range(300): AVRO.parse(text, {}).canonical()
    best = min(best, (time.perf_counter() - t) / 300)
    t = time.perf_counter()
    for _ in range(300): json.loads(text)
    best_json = min(best_json, (time.perf_counter() - t) / 300)
print(best * 1e6, best_json * 1e6)
"""


def parse_times(checkout: Path) -> tuple[float, float]:
    out = subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-c", PARSE], cwd=checkout,
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="a checkout of the code before (with its .venv)")
    parser.add_argument("--formats-only", action="store_true",
                        help="only the JSON Schema and Protobuf requests, against unrelated reads")
    args = parser.parse_args()
    sides: list[tuple[str, Path, Path]] = [("after", CLI, ROOT)]
    if args.before:
        sides.insert(0, ("before", args.before / ".venv" / "bin" / "schema-registry", args.before))
    print(f"{'request (reads: GET /subjects)':48} {'side':7} {'status':>10} {'answer s':>9} {'idle p99':>9} "
          f"{'p99 during':>11} {'max during':>11}")
    for hostile in HOSTILE_FORMATS:
        for side, cli, _ in sides:
            status, took, idle, p99_during, worst = measure_reads(cli, hostile)
            print(f"{hostile.name:48} {side:7} {status:>10} {took:9.2f} {idle:8.1f}ms {p99_during:9.1f}ms "
                  f"{worst:9.1f}ms", flush=True)
    if args.formats_only:
        return
    print(f"{'request (writes: a registration every 50 ms)':44} {'side':7} {'status':>10} {'answer s':>9} "
          f"{'idle p50':>9} {'p50 during':>11} {'max during':>11}")
    for hostile in HOSTILE:
        for side, cli, _ in sides:
            status, took, idle, p50, worst = measure(cli, hostile)
            print(f"{hostile.name:44} {side:7} {status:>10} {took:9.2f} {idle:8.1f}ms {p50:9.1f}ms {worst:9.1f}ms",
                  flush=True)
    for side, cli, _ in sides:
        print(f"30 unfinished 16 MiB bodies held ({side}): {held_by_unfinished_bodies(cli):.0f} MiB of RSS", flush=True)
    for side, _, checkout in sides:
        ours, reference = parse_times(checkout)
        print(f"parse a 10-field record ({side}): {ours:.0f} us; json.loads of the same text {reference:.1f} us; "
              f"ratio {ours / reference:.1f}x", flush=True)


if __name__ == "__main__":
    main()
