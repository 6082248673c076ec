"""`schema-registry export` and `import` of 100,000 schemas on the embedded store: time and peak memory.

    .venv/bin/python bench/admin_export_import.py [--subjects 10000] [--versions 10] [--workers 8]
        [--no-reference] [--export-only]

A source registry is prefilled (records written straight into its SQLite log) with
`subjects` x `versions` distinct Avro schemas, every subject with its own
compatibility level. Then, each as a real CLI process:
* `export` to a directory: wall time, and the peak RSS of the CLI process;
* `import` of that directory into an empty registry (IMPORT mode, ids kept): the same.
Reference, in the same run: the bare REST calls each needs, made with `requests` from
this process: `GET /schemas` paged (export's floor) and one `POST .../versions` per
schema with the same concurrency into a second empty registry (import's floor).
Also the durable SQLite commits per second of this disk, the floor of an import whose
every registration is its own commit. Goal: under 60 s each way. Prints ours, the
reference and their ratio.
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from registry_process import CLI, avro_record, registry  # noqa: E402

from store.records import ConfigKey, ConfigValue, SchemaKey, SchemaValue, encode_key, encode_value  # noqa: E402

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
# Reading 110,000 records at start-up can outlast the default 10 s on a loaded machine, and
# a static leader whose first catch-up times out never becomes ready (reported as a bug).
SERVER_ENV = {"SCHEMA_REGISTRY_KAFKASTORE_TIMEOUT_MS": "300000"}


def prefill(data_dir: Path, subjects: int, versions: int) -> None:
    """`subjects` x `versions` schemas (ids 1..n) and a level per subject, in one transaction."""
    from store.sqlite_log import SqliteLog

    path = data_dir / "schemas.sqlite"
    SqliteLog(str(path)).close()  # creates the tables
    rows = []
    schema_id = 0
    for s in range(subjects):
        subject = f"bench-{s:06d}-value"
        for v in range(1, versions + 1):
            schema_id += 1
            key = SchemaKey(subject, v)
            rows.append((len(rows), encode_key(key), encode_value(SchemaValue(subject, v, schema_id,
                                                                              avro_record(schema_id)))))
        rows.append((len(rows), encode_key(ConfigKey(subject)), encode_value(ConfigValue("NONE", subject))))
    conn = sqlite3.connect(path)
    with conn:
        conn.executemany("INSERT INTO log(offset, key, value) VALUES (?, ?, ?)", rows)
        conn.execute("UPDATE next_offset SET value = ?", (len(rows),))
    conn.close()


def run_cli(*args: str) -> tuple[float, int, dict]:
    """Run the CLI; (seconds, its own peak RSS in MiB, its --json answer). Fails on a non-zero exit."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen([str(CLI), *args, "--json", "--no-progress"], stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # this process's rusage alone, not all children's
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} exited {proc.returncode}: {err.read().decode()[-2000:]}")
        return seconds, usage.ru_maxrss // 1024, json.loads(out.read())


def reference_export(url: str) -> float:
    session = requests.Session()
    started = time.perf_counter()
    offset = 0
    while True:
        page = session.get(f"{url}/schemas", params={"deleted": "true", "offset": offset, "limit": 10_000},
                           timeout=120).json()
        if len(page) < 10_000:
            break
        offset += 10_000
    return time.perf_counter() - started


def reference_import(url: str, export_dir: Path, workers: int) -> float:
    bodies = [json.loads(line) for line in (export_dir / "schemas.jsonl").open("rb")]
    session = requests.Session()
    adapter = requests.adapters.HTTPAdapter(pool_maxsize=workers)
    session.mount("http://", adapter)
    headers = {"Content-Type": CONTENT_TYPE}
    session.put(f"{url}/mode", json={"mode": "IMPORT"}, headers=headers, timeout=30).raise_for_status()

    def post(body: dict) -> None:
        wanted = {"schema": body["schema"], "id": body["id"], "version": body["version"]}
        session.post(f"{url}/subjects/{body['subject']}/versions", data=json.dumps(wanted), headers=headers,
                     timeout=120).raise_for_status()

    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(post, bodies, chunksize=64))
    return time.perf_counter() - started


def durable_commits_per_second(directory: Path, count: int = 500) -> float:
    """One-row transactions per second on SQLite with the embedded store's settings (WAL,
    synchronous=FULL): the floor of an import that commits each registration on its own."""
    conn = sqlite3.connect(directory / "floor.sqlite", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE log(offset INTEGER PRIMARY KEY, value BLOB)")
    started = time.perf_counter()
    for n in range(count):
        conn.execute("BEGIN")
        conn.execute("INSERT INTO log VALUES (?, ?)", (n, b"x" * 600))
        conn.execute("COMMIT")
    conn.close()
    return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, default=10_000)
    parser.add_argument("--versions", type=int, default=10)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--no-reference", action="store_true", help="skip the bare-REST reference runs")
    parser.add_argument("--export-only", action="store_true", help="measure the exports only")
    args = parser.parse_args()
    total = args.subjects * args.versions
    with tempfile.TemporaryDirectory(prefix="bench-admin-") as work:
        root = Path(work)
        for name in ("source", "target", "reference"):
            (root / name).mkdir()
        started = time.perf_counter()
        prefill(root / "source", args.subjects, args.versions)
        print(f"prefilled {total:,} schemas ({args.subjects:,} subjects x {args.versions}) "
              f"in {time.perf_counter() - started:.1f} s")
        floor = durable_commits_per_second(root)
        export_dir = root / "export"
        with registry(root / "source", SERVER_ENV, ready_timeout=300) as (source, _):
            ex_s, ex_mib, exported = run_cli("export", str(export_dir), "--url", source)
            assert exported["schemas"] == total, f"exported {exported['schemas']} of {total}"
            bare_s, bare_mib, _ = run_cli("export", str(root / "bare"), "--url", source, "--no-subject-settings")
            ref_ex = None if args.no_reference else reference_export(source)
        size_mib = sum(p.stat().st_size for p in export_dir.iterdir()) / 2**20
        im_s = im_mib = hwm = ref_im = None
        if not args.export_only:
            with registry(root / "target", SERVER_ENV, ready_timeout=300) as (target, target_pid):
                im_s, im_mib, imported = run_cli("import", str(export_dir), "--url", target,
                                                 "--workers", str(args.workers))
                assert imported["imported"] == total and not imported["failed"], f"import: {imported}"
                hwm = _vm_hwm_mib(target_pid)
            if not args.no_reference:
                with registry(root / "reference", SERVER_ENV, ready_timeout=300) as (ref_url, _):
                    ref_im = reference_import(ref_url, export_dir, args.workers)

    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"durable SQLite commits/s on this disk: {floor:,.0f} (so one commit per registration needs "
          f"at least {total / floor:.0f} s for {total:,})")
    print(f"export file size: {size_mib:.1f} MiB; target registry's peak RSS during import: {hwm} MiB")
    print(f"{'':36}{'ours':>10}{'reference':>12}{'ratio':>8}{'peak RSS':>11}{'goal':>8}")
    rows = [("export (CLI vs paged GETs)", ex_s, ref_ex, ex_mib),
            ("export --no-subject-settings", bare_s, ref_ex, bare_mib)]
    if im_s is not None:
        rows.append(("import (CLI vs bare POSTs)", im_s, ref_im, im_mib))
    for label, ours, ref, mib in rows:
        ref_text = f"{ref:10.1f} s" if ref is not None else f"{'-':>12}"
        ratio = f"{ours / ref:7.2f}x" if ref else f"{'-':>8}"
        print(f"{label:36}{ours:8.1f} s{ref_text}{ratio}{mib:7d} MiB{'  <60 s' if ours < 60 else '  MISSED'}")
    print(f"rates: export {total / ex_s:,.0f} schemas/s" + (f", import {total / im_s:,.0f} schemas/s" if im_s else ""))


def _vm_hwm_mib(pid: int) -> int:
    """Peak RSS of the registry process and its children (granian's worker), in MiB."""
    total = 0
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for p in pids:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                total += int(line.split()[1])
    return total // 1024


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    main()
