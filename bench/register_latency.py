"""Register latency with 10 concurrent writers, p50 and p99, next to its floor.

Ours: wrk, an independent load tool, keeps 10 connections each registering a new
schema through `POST /subjects/{s}/versions` on a CLI-started registry (embedded
store). Every acknowledged write is durable (a committed SQLite transaction, fsynced)
and applied to this node's cache. (A Python client would spend as much CPU on these
2 cores as the server, and its own time would be counted as latency.)
Reference, in the same run: 10 threads doing nothing but durable SQLite commits of
records of the same size into a WAL database with synchronous=FULL, i.e. the floor
that durability itself costs on this disk.

With `--kafka BOOTSTRAP` the registry stores schemas in a fresh compacted topic on that
Kafka instead, and the reference is 10 threads each producing one record at a time
with acks=all to a topic on the same broker and waiting for it (the round trip every
acknowledged registration needs). `make infra-up` prints a local bootstrap address.
With Kafka a second reference runs under the same wrk load: the stack's floor, a bare
ASGI app served as ours is (`registry.http.listener` on uvloop) that reads each body and
appends it with acks=all, the bodies that arrive together in one produce (one thread
produces and waits, as our committer), then answers fixed bytes: what HTTP, the
interpreter and Kafka cost a registration before any of the registry's own work. It also
runs once before anything is measured, unreported: a freshly started broker serves its
first seconds of load slower.
`--floor-work 100,150,...` adds a row of that floor for each figure, with that many
microseconds of pure Python run on its event loop for each write before the append
(calibrated when the app starts, on an idle interpreter): what a registration's own
work may cost on this stack for a given p50. The cpu column is the server's whole
process tree (every thread, user and system) over wrk's run, per answered write.

Usage: python bench/register_latency.py [--writes 2000] [--writers 10] [--kafka HOST:PORT]
       [--before CHECKOUT | --group-commit-both] [--rounds N] [--floor-work US,US,...]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from registry_process import (CLI, ROOT, asgi_floor_command, avro_record, free_port, registry,  # noqa: E402
                              tree_cpu_seconds)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_writers(writers: int, per_writer: int, write) -> tuple[list[float], float]:
    latencies: list[float] = []
    lock = threading.Lock()

    def worker(w: int) -> None:
        mine = []
        for i in range(per_writer):
            start = time.perf_counter()
            write(w, i)
            mine.append((time.perf_counter() - start) * 1000)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(writers)]
    began = time.perf_counter()
    [t.start() for t in threads]
    [t.join() for t in threads]
    return latencies, time.perf_counter() - began


# Every request registers a schema nobody registered before. wrk runs one Lua state per
# thread, each with the same `math.random` sequence and its own counter: names drawn
# from those alone came out the same on both threads, so half the requests re-registered
# what the other thread had just registered (9,417 requests made 4,714 subjects) and
# every figure before this counted those as writes. Names now hold the thread's number
# and a prefix drawn per run (RUN), and `ours` checks the subjects made.
WRK_REGISTER = r"""
local threads = 0
setup = function(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
counter = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/vnd.schemaregistry.v1+json"
request = function()
  counter = counter + 1
  local id = "RUN" .. tid .. "_" .. counter
  local body = '{"schema":"{\\"type\\":\\"record\\",\\"name\\":\\"E' .. id ..
    '\\",\\"fields\\":[{\\"name\\":\\"a\\",\\"type\\":\\"long\\"},{\\"name\\":\\"b\\",\\"type\\":\\"string\\"}]}"}'
  return wrk.format(nil, "/subjects/s" .. id .. "/versions", nil, body)
end
"""


def ours(data: Path, writers: int, seconds: int, env: dict[str, str] | None = None,
         cli: Path = CLI) -> tuple[float, float, float, float]:
    """(p50 ms, p99 ms, writes/s, CPU us a write) from wrk with `writers` connections
    (`cli`: another checkout's)."""
    script = data / "register.lua"
    script.write_text(WRK_REGISTER.replace("RUN", f"r{uuid.uuid4().hex[:8]}t"))
    with registry(data, env, cli=cli) as (url, pid):
        requests.post(f"{url}/subjects/warm-up/versions", data=json.dumps({"schema": avro_record(0)}),
                      headers={"Content-Type": "application/json"}).raise_for_status()
        out, p50, p99, rate, cpu = _wrk(url, writers, seconds, script, pid)
        # Each answered request made a subject of its own (those still under way when
        # wrk stopped may have made one more each): none was a repeat.
        answered = int(re.search(r"(\d+) requests in", out).group(1))
        made = len(requests.get(f"{url}/subjects", timeout=30).json()) - 1  # less the warm-up's
        if not answered <= made <= answered + writers:
            raise RuntimeError(f"{answered} registrations answered made {made} subjects: not one each")
    return p50, p99, rate, cpu


def _wrk(url: str, writers: int, seconds: int, script: Path, pid: int) -> tuple[str, float, float, float, float]:
    """wrk's output, p50 ms, p99 ms, requests/s and the CPU microseconds the server
    (`pid` and its descendants) spent a request, with `writers` connections running `script`."""
    before = tree_cpu_seconds(pid)
    out = subprocess.run(["wrk", f"-t{min(2, writers)}", f"-c{writers}", f"-d{seconds}s", "--latency",
                          "-s", str(script), url], capture_output=True, text=True, check=True).stdout
    spent = tree_cpu_seconds(pid) - before
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError(f"wrk saw errors:\n{out}")

    def ms(label: str) -> float:
        value, unit = re.search(rf"{label}\s+([\d.]+)(us|ms|s)", out).groups()
        return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    answered = int(re.search(r"(\d+) requests in", out).group(1))
    return (out, ms("50%"), ms("99%"), float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            spent / max(answered, 1) * 1e6)


def sqlite_floor(data: Path, writers: int, per_writer: int) -> tuple[list[float], float]:
    path = data / "floor.sqlite"
    setup = sqlite3.connect(path)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.execute("CREATE TABLE log (offset INTEGER PRIMARY KEY, key BLOB, value BLOB)")
    setup.close()
    local = threading.local()
    value = avro_record(1).encode()

    def write(w: int, i: int) -> None:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = sqlite3.connect(path, isolation_level=None, timeout=30)
            conn.execute("PRAGMA synchronous=FULL")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO log(key, value) VALUES (?, ?)", (f"{w}-{i}".encode(), value))
        conn.execute("COMMIT")

    return run_writers(writers, per_writer, write)


def kafka_floor(bootstrap: str, writers: int, per_writer: int) -> tuple[list[float], float]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"_bench_floor_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive its futures
    admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])[topic].result()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 0})
    value = avro_record(1).encode()
    stop = threading.Event()
    poller = threading.Thread(target=lambda: [producer.poll(0.05) for _ in iter(stop.is_set, True)])
    poller.start()

    def write(w: int, i: int) -> None:
        done = threading.Event()
        producer.produce(topic, value, f"{w}-{i}".encode(), partition=0, on_delivery=lambda e, m: done.set())
        done.wait(10)

    try:
        return run_writers(writers, per_writer, write)
    finally:
        stop.set()
        poller.join()
        producer.flush(5)


# The stack's floor (module docstring). Not the registry's code: no parsing, checking,
# planning, applying or reading back, only what every registration needs around them;
# with FLOOR_WORK_US, that much pure Python a write on the event loop in their place.
STACK_FLOOR_APP = '''
import asyncio, os, threading, time
from confluent_kafka import Producer

# As the registry's log: a batch's records linger until flushed, then go in one request.
producer = Producer({"bootstrap.servers": os.environ["FLOOR_BOOTSTRAP"], "acks": "all",
                     "enable.idempotence": True, "linger.ms": 5})
TOPIC = os.environ["FLOOR_TOPIC"]
ANSWER = b'{"id":1}'
HEADERS = [(b"content-type", b"application/vnd.schemaregistry.v1+json"), (b"content-length", b"8")]
queued = []
changed = threading.Condition()

def commit():
    while True:
        with changed:
            while not queued:
                changed.wait()
            batch = queued[:]
            queued.clear()
        left = [len(batch)]
        def delivered(err, msg):
            left[0] -= 1
        for body, _, _ in batch:
            producer.produce(TOPIC, value=body, partition=0, on_delivery=delivered)
        while left[0]:
            producer.flush(0.1)  # the only producing thread: nothing else to wait for
        loop = batch[0][1]
        loop.call_soon_threadsafe(wake, [future for _, _, future in batch])

def wake(futures):
    for future in futures:
        if not future.done():
            future.set_result(None)

threading.Thread(target=commit, daemon=True).start()

def spin(turns):
    total = 0
    for turn in range(turns):
        total += turn
    return total

def turns_a_microsecond():
    turns = 200_000
    best = float("inf")
    for _ in range(5):
        began = time.thread_time()
        spin(turns)
        best = min(best, time.thread_time() - began)
    return turns / (best * 1e6)

TURNS = int(float(os.environ.get("FLOOR_WORK_US", "0")) * turns_a_microsecond())

async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if TURNS:
        spin(TURNS)
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    with changed:
        queued.append((body, loop, future))
        changed.notify()
    await future
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": ANSWER})
'''


def stack_floor(work: Path, bootstrap: str, writers: int, seconds: int, work_us: float = 0
                ) -> tuple[float, float, float, float]:
    """(p50 ms, p99 ms, writes/s, CPU us a write) of the stack's floor (module docstring)
    under ours' wrk load, with `work_us` of pure Python a write on its event loop."""
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"_bench_stack_floor_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive its futures
    admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])[topic].result()
    app_dir = work / f"stack-floor-{uuid.uuid4().hex[:8]}"
    app_dir.mkdir()
    (app_dir / "stack_floor_app.py").write_text(STACK_FLOOR_APP)
    script = app_dir / "register.lua"
    script.write_text(WRK_REGISTER.replace("RUN", f"r{uuid.uuid4().hex[:8]}t"))
    port = free_port()
    server = subprocess.Popen(asgi_floor_command("stack_floor_app:app", port),
                              cwd=app_dir, start_new_session=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env={**os.environ, "FLOOR_BOOTSTRAP": bootstrap,
                                                              "FLOOR_TOPIC": topic, "FLOOR_WORK_US": str(work_us)})
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                requests.post(f"{url}/warm-up", data=b"{}", timeout=5).raise_for_status()
                break
            except requests.RequestException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        return _wrk(url, writers, seconds, script, server.pid)[1:]
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=2000, help="writes for the reference path")
    parser.add_argument("--seconds", type=int, default=10, help="how long wrk registers")
    parser.add_argument("--writers", type=int, default=10)
    parser.add_argument("--kafka", help="bootstrap servers: store schemas in Kafka instead")
    parser.add_argument("--before", type=Path,
                        help="also measure this checkout (its .venv/bin/schema-registry), alternating rounds with ours")
    parser.add_argument("--rounds", type=int, default=1,
                        help="with --before or --group-commit-both: rounds of the two sides, alternating")
    parser.add_argument("--floor-work", default="",
                        help="with --kafka: comma-separated microseconds of pure Python a write, "
                             "each a row of the stack floor doing that much (module docstring)")
    parser.add_argument("--group-commit-both", action="store_true",
                        help="also measure ours with group commit on and off (group.commit.enable), alternating")
    args = parser.parse_args()
    try:
        floor_work = [float(us) for us in args.floor_work.split(",") if us.strip()]
    except ValueError:
        parser.error("--floor-work takes comma-separated microseconds, such as 100,150")
    if any(us <= 0 for us in floor_work):
        parser.error("--floor-work takes microseconds above 0")
    if floor_work and not args.kafka:
        parser.error("--floor-work needs --kafka: the stack floor appends to Kafka")
    per_writer = args.writes // args.writers
    work = Path(tempfile.mkdtemp())
    try:
        (work / "ours").mkdir()
        if args.kafka:
            env = _kafka_env(args.kafka)
            # A freshly started broker serves its first seconds of load slower: whichever
            # side ran first paid for it (1,468-1,766 writes/s for ours against 2,100-2,900
            # on the same broker later). The stack floor warms it, unreported.
            stack_floor(work, args.kafka, args.writers, args.seconds)
            mine = ("ours: POST /subjects/{s}/versions, Kafka store", *ours(work / "ours", args.writers, args.seconds, env))
            reference = ("reference: acks=all produce round trip only",
                         *summary(*kafka_floor(args.kafka, args.writers, per_writer)))
            floors = [("stack floor: our listener + grouped acks=all produce",
                       *stack_floor(work, args.kafka, args.writers, args.seconds))]
            for work_us in floor_work:
                floors.append((f"stack floor + {work_us:g} us of Python a write",
                               *stack_floor(work, args.kafka, args.writers, args.seconds, work_us)))
        else:
            mine = ("ours: POST /subjects/{s}/versions, embedded store", *ours(work / "ours", args.writers, args.seconds))
            reference = ("reference: durable SQLite commit only", *summary(*sqlite_floor(work, args.writers, per_writer)))
            floors = []
        compared = compare(work, args) if args.before else []
        if args.group_commit_both:
            compared += compare_group_commit(work, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for line in compared:
        print(line)
    print(f"\nRegister latency, {args.writers} concurrent writers")
    print(f"{'path':52} {'p50 ms':>7} {'p99 ms':>7} {'writes/s':>9} {'cpu us/write':>13}")
    for name, p50, p99, rate, *cpu in (mine, reference, *floors):
        print(f"{name:52} {p50:7.2f} {p99:7.2f} {rate:9.0f} {f'{cpu[0]:.0f}' if cpu else '':>13}")
    print(f"ratio p50 ours/floor: {mine[1] / reference[1]:.2f}x, writes/s ours/floor: {mine[3] / reference[3]:.2f}x")
    if floors:
        floor = floors[0]
        print(f"ratio to the stack floor: p50 {mine[1] / floor[1]:.2f}x, writes/s {mine[3] / floor[3]:.2f}x")


def _kafka_env(bootstrap: str) -> dict[str, str]:
    return {"SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS": bootstrap,
            "SCHEMA_REGISTRY_LEADER_ELECTION_BACKEND": "static",  # one node: it writes
            "SCHEMA_REGISTRY_KAFKASTORE_TOPIC": f"_schemas_bench_{uuid.uuid4().hex[:8]}",
            "SCHEMA_REGISTRY_KAFKASTORE_TOPIC_REPLICATION_FACTOR": "1"}


def compare_group_commit(work: Path, args: argparse.Namespace) -> list[str]:
    """Ours with group commit on and off, rounds alternating; one printed line per side."""
    results: dict[str, list[tuple[float, float, float, float]]] = {"on": [], "off": []}
    for round_ in range(args.rounds):
        for side in ("on", "off"):
            data = work / f"group-commit-{side}-{round_}"
            data.mkdir()
            env = _kafka_env(args.kafka) if args.kafka else {}
            env["SCHEMA_REGISTRY_GROUP_COMMIT_ENABLE"] = "true" if side == "on" else "false"
            results[side].append(ours(data, args.writers, args.seconds, env))
    lines = [f"\nGroup commit on and off ({args.rounds} rounds alternating, median; "
             f"{'Kafka' if args.kafka else 'embedded'} store)"]
    for side, runs in results.items():
        p50, p99, rate = (statistics.median(r[i] for r in runs) for i in range(3))
        lines.append(f"group commit {side:3}: p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  {rate:7.0f} writes/s  "
                     f"(writes/s per round: {', '.join(f'{r[2]:.0f}' for r in runs)})")
    on, off = (statistics.median(r[2] for r in results[side]) for side in ("on", "off"))
    lines.append(f"writes/s on/off: {on / off:.2f}x")
    return lines


def compare(work: Path, args: argparse.Namespace) -> list[str]:
    """Ours against `args.before`, rounds alternating; one printed line per side."""
    old_cli = args.before / ".venv" / "bin" / "schema-registry"
    results: dict[str, list[tuple[float, float, float, float]]] = {"after": [], "before": []}
    for round_ in range(args.rounds):
        for side, cli in (("after", CLI), ("before", old_cli)):
            data = work / f"{side}-{round_}"
            data.mkdir()
            env = _kafka_env(args.kafka) if args.kafka else None
            results[side].append(ours(data, args.writers, args.seconds, env, cli))
    lines = [f"\nThis checkout against {args.before} ({args.rounds} rounds alternating, median), "
             f"{'Kafka' if args.kafka else 'embedded'} store, {args.writers} writers"]
    medians = {}
    for side, each in results.items():
        p50, p99, rate, cpu = (statistics.median(r[i] for r in each) for i in range(4))
        medians[side] = rate
        lines.append(f"{side:7} p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  {rate:7.0f} writes/s  "
                     f"cpu {cpu:4.0f} us/write  (rounds: {', '.join(f'{r[2]:.0f}' for r in each)})")
    paired = statistics.median(a[2] / b[2] for a, b in zip(results["after"], results["before"]))
    lines.append(f"ratio writes/s after/before: {medians['after'] / medians['before']:.2f}x of the medians, "
                 f"{paired:.2f}x the median of each round's (the machine's drift between rounds divides out)")
    return lines


def summary(latencies: list[float], elapsed: float) -> tuple[float, float, float]:
    return statistics.median(latencies), percentile(latencies, 0.99), len(latencies) / elapsed


if __name__ == "__main__":
    main()
