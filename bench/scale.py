"""A registry holding many schemas: time to ready, memory, and every hot read path with
its reads spread over all of it against the same reads on a hot set (issue 51).

The embedded log is filled with N schemas (default 1,000,000: N/10 subjects of 10
versions of a 10-field record each), then a CLI-started node reports:
- time from start to /ready, and RSS once ready;
- for each read path, req/s and p99 with wrk (100 connections) asking a hot set of
  1,000 subjects (or ids) round-robin, and the same path asking any of them at random
  (spread), side by side, with their ratio (goal: spread >= 0.5x hot);
- RSS after the spread reads (goal: no growth beyond the answer memos' bounds);
- an import of the same N schemas into an empty embedded store through
  `POST /import/schemas` (500 a request, 8 at a time, as `schema-registry import` sends
  them): its time, the node's peak RSS during it and after, against a node cold-started
  on the data it wrote (goal: <= 1.2x).

Needs wrk. Usage: python bench/scale.py [--schemas 1000000] [--duration 10] [--skip-import]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from read_throughput import wrk as _wrk  # noqa: E402
from registry_process import avro_record, registry, rss_kib  # noqa: E402

VERSIONS = 10
HOT = 1000


def subject_version(n: int) -> tuple[str, int]:
    return f"s{n // VERSIONS}", n % VERSIONS + 1


def wrk(url: str, duration: int, script: Path) -> tuple[float, float]:
    """`read_throughput.wrk`, once the script is known to load: wrk runs its default
    request (GET /) when a script does not, which would measure the wrong thing."""
    check = subprocess.run(["wrk", "-t1", "-c1", "-d1s", "-s", str(script), url], capture_output=True, text=True)
    if check.returncode != 0 or "error" in check.stderr.lower():
        raise RuntimeError(f"wrk cannot use {script}: {check.stderr.strip()}")
    return _wrk(url, duration, script)


def prefill(data_dir: Path, count: int) -> None:
    """`count` schema records straight into the embedded log, in one transaction."""
    from store.records import SchemaKey, SchemaValue, encode_key, encode_value
    from store.sqlite_log import SqliteLog

    path = data_dir / "schemas.sqlite"
    SqliteLog(str(path)).close()  # creates the tables
    conn = sqlite3.connect(path)
    with conn:
        batch = []
        for n in range(count):
            subject, version = subject_version(n)
            key = SchemaKey(subject, version)
            batch.append((n, encode_key(key), encode_value(SchemaValue(subject, version, n + 1, avro_record(n)))))
            if len(batch) == 50_000:
                conn.executemany("INSERT INTO log(offset, key, value) VALUES (?, ?, ?)", batch)
                batch.clear()
        conn.executemany("INSERT INTO log(offset, key, value) VALUES (?, ?, ?)", batch)
        conn.execute("UPDATE next_offset SET value = ?", (count,))
    conn.close()


# Each read path: (label, Lua expression of the path for a number n, how n is drawn).
# Subjects are `s{n}` for n < N/10; ids 1..N.
PATHS = [
    ("GET /schemas/ids/{id}", '"/schemas/ids/" .. n', "ids"),
    ("GET /subjects/{s}/versions/latest", '"/subjects/s" .. n .. "/versions/latest"', "subjects"),
    ("GET /subjects/{s}/versions/{v}", '"/subjects/s" .. n .. "/versions/3"', "subjects"),
    ("GET /subjects/{s}/versions", '"/subjects/s" .. n .. "/versions"', "subjects"),
    ("GET /schemas/ids/{id}?subject=", '"/schemas/ids/" .. (n * 10 + 1) .. "?subject=s" .. n', "subjects"),
    ("GET /config/{s}?defaultToGlobal=true", '"/config/s" .. n .. "?defaultToGlobal=true"', "subjects"),
]

# `avro_record(n)` in a lookup's body, rebuilt in Lua for the n drawn (`POST /subjects/{s}`
# with the schema of the subject's first version): long brackets around the JSON as it is.
_RECORD_LUA = "[[" + json.dumps({"schema": avro_record(987654321)}).replace("987654321", "]] .. m .. [[") + "]]"


def lua(path: str, spread: bool, population: int, post: bool = False) -> str:
    draw = f"math.random(0, {population - 1})" if spread else f"counter % {min(HOT, population)}"
    if post:
        return f"""
counter = 0
request = function()
  counter = counter + 1
  local n = {draw}
  local m = n * {VERSIONS}
  return wrk.format("POST", "/subjects/s" .. n, {{["Content-Type"] = "application/json"}}, {_RECORD_LUA})
end
"""
    return f"""
counter = 0
request = function()
  counter = counter + 1
  local n = {draw}
  return wrk.format("GET", {path})
end
"""


def read_paths(url: str, pid: int, count: int, duration: int, work: Path) -> list[str]:
    lines = [f"{'read path':42} {'hot req/s':>10} {'p99 ms':>7} {'spread req/s':>13} {'p99 ms':>7} {'spread/hot':>10}"]
    rss_before = rss_kib(pid)
    subjects = count // VERSIONS
    for label, path, drawn in [*PATHS, ("POST /subjects/{s} (lookup)", "", "subjects")]:
        population = count if drawn == "ids" else subjects
        if drawn == "ids":
            path = path.replace('"/schemas/ids/" .. n', '"/schemas/ids/" .. (n + 1)')
        figures = []
        for spread in (False, True):
            script = work / f"{len(figures)}.lua"
            script.write_text(lua(path, spread, population, post=label.startswith("POST")))
            wrk(url, 2, script)  # warm-up (and, spread, a first pass over part of the population)
            figures.append(wrk(url, duration, script))
        (hot, hot_p99), (wide, wide_p99) = figures
        lines.append(f"{label:42} {hot:10.0f} {hot_p99:7.1f} {wide:13.0f} {wide_p99:7.1f} {wide / hot:9.2f}x")
    lines.append(f"RSS before the reads {rss_before / 1024:.0f} MiB, after {rss_kib(pid) / 1024:.0f} MiB")
    return lines


def import_memory(count: int, work: Path) -> list[str]:
    data = work / "import"
    data.mkdir()
    peak = [0]
    with registry(data) as (url, pid):
        assert requests.put(f"{url}/mode", json={"mode": "IMPORT"}, timeout=10).status_code == 200
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], rss_kib(pid))
                time.sleep(0.2)

        threading.Thread(target=sample, daemon=True).start()

        def send(start: int) -> None:
            entries = []
            for n in range(start, min(start + 500, count)):
                subject, version = subject_version(n)
                entries.append({"subject": subject, "version": version, "id": n + 1, "schema": avro_record(n)})
            answer = requests.post(f"{url}/import/schemas", json={"schemas": entries}, timeout=600)
            assert answer.status_code == 200, answer.text[:300]

        began = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(send, range(0, count, 500)))
        took = time.monotonic() - began
        time.sleep(1)
        done.set()
        after = rss_kib(pid)
    with registry(data, ready_timeout=600) as (_, pid):
        cold = rss_kib(pid)
    return [f"import of {count:,} schemas: {took:.0f} s; RSS peak {peak[0] / 1024:.0f} MiB, after "
            f"{after / 1024:.0f} MiB; a node cold-started on the same data {cold / 1024:.0f} MiB "
            f"(after/cold {after / cold:.2f}x, peak/cold {peak[0] / cold:.2f}x)"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schemas", type=int, default=1_000_000)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--skip-import", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp())
    try:
        data = work / "data"
        data.mkdir()
        began = time.monotonic()
        prefill(data, args.schemas)
        print(f"{args.schemas:,} schemas ({args.schemas // VERSIONS:,} subjects x {VERSIONS} versions) written "
              f"in {time.monotonic() - began:.0f} s", flush=True)
        started = time.monotonic()
        with registry(data, ready_timeout=900) as (url, pid):
            print(f"ready in {time.monotonic() - started:.1f} s, RSS {rss_kib(pid) / 1024:.0f} MiB", flush=True)
            for line in read_paths(url, pid, args.schemas, args.duration, work):
                print(line, flush=True)
        if not args.skip_import:
            for line in import_memory(args.schemas, work):
                print(line, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
