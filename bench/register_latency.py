"""Register latency with 10 concurrent writers, p50 and p99, next to its floor.

Ours: 10 threads each register new schemas through `POST /subjects/{s}/versions`
on a CLI-started registry (embedded store). Every acknowledged write is durable
(a committed SQLite transaction, fsynced) and applied to this node's cache.
Reference, in the same run: 10 threads doing nothing but durable SQLite commits of
records of the same size into a WAL database with synchronous=FULL, i.e. the floor
that durability itself costs on this disk.

Usage: python bench/register_latency.py [--writes 2000] [--writers 10]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from registry_process import avro_record, registry  # noqa: E402


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


def ours(data: Path, writers: int, per_writer: int) -> tuple[list[float], float]:
    with registry(data) as (url, _):
        sessions = [requests.Session() for _ in range(writers)]
        headers = {"Content-Type": "application/vnd.schemaregistry.v1+json"}

        def write(w: int, i: int) -> None:
            body = json.dumps({"schema": avro_record(w * 1_000_000 + i)})
            response = sessions[w].post(f"{url}/subjects/bench-{w}-{i}/versions", data=body, headers=headers)
            response.raise_for_status()

        write(0, per_writer + 1)  # warm-up: first request pays imports and connection set-up
        return run_writers(writers, per_writer, write)


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--writers", type=int, default=10)
    args = parser.parse_args()
    per_writer = args.writes // args.writers
    work = Path(tempfile.mkdtemp())
    try:
        (work / "ours").mkdir()
        rows = [("ours: POST /subjects/{s}/versions, embedded store", *ours(work / "ours", args.writers, per_writer)),
                ("reference: durable SQLite commit only", *sqlite_floor(work, args.writers, per_writer))]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nRegister latency, {args.writers} concurrent writers, {per_writer * args.writers} writes each path")
    print(f"{'path':52} {'p50 ms':>7} {'p99 ms':>7} {'writes/s':>9}")
    for name, latencies, elapsed in rows:
        print(f"{name:52} {statistics.median(latencies):7.2f} {percentile(latencies, 0.99):7.2f} "
              f"{len(latencies) / elapsed:9.0f}")
    (_, ours_lat, _), (_, floor_lat, _) = rows
    print(f"ratio p50 ours/floor: {statistics.median(ours_lat) / statistics.median(floor_lat):.2f}x")


if __name__ == "__main__":
    main()
