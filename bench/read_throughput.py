"""Read throughput of `GET /schemas/ids/{id}`, and memory, side by side with references.

Issue 2's measure: 1,000 schemas, 100 concurrent connections, an independent load tool
(wrk) on this same machine; median req/s and p99 over several runs. In the same run,
the reference: a bare ASGI callable on the same server (`registry.http.listener`, its
HTTP/1.1 on uvloop, through `bench/asgi_floor.py`) returning a constant body of the
same size, i.e. the ceiling for any Python app on this server here. `--calls` adds a
second floor: the same constant answer given at once (`Listeners(at_once=...)`), as
the registry gives the reads it keeps ready, without ASGI. Also shown: a read
that goes through Flask's routing (`GET /subjects/{s}/versions/latest`), which the id
fast path does not cover.
Confluent's published figure for the same test on 2 CPUs (Apicurio issue #9887) is
6,088 req/s; it cannot run here, so it is quoted, not measured.

Memory: RSS of the registry (supervisor + worker) with 10,000 schemas, next to an
empty registry, both measured in this run.

`--security` measures instead what authentication, authorization and metrics cost on
both reads, every configuration served at once and measured in turns (round-robin, so
the machine's noise falls on all alike): nothing on; metrics on (the default); metrics
and HTTP Basic with an authorization rules file; the same over an https listener
(Python's ssl, no client certificate) next to the plain http one, which separates TLS
from the HTTP layer.

Needs wrk (`apt-get install -y wrk`). Usage: python bench/read_throughput.py [--runs 3]
[--duration 10] [--threads 1,2,8,32] [--security]
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from registry_process import (CLI, ROOT, asgi_floor_command, avro_record, free_port, prefill,  # noqa: E402
                              registry, rss_kib)

CONFLUENT_PUBLISHED = 6088
LUA = """
counter = 0
request = function()
  counter = counter + 1
  return wrk.format("GET", "/schemas/ids/" .. ((counter % 1000) + 1))
end
"""
# The floor answers a body as long as ours for the ids the benches read (473 bytes for
# a three-digit id: `{"schema": ...}` around `avro_record`'s text, escaped). It once
# answered 203 bytes, less than half of ours: a floor should send what ours sends,
# though here the size made no measurable difference to the floor's rate (13 paired
# rounds: 1.00x).
ID_BODY_BYTES = len(json.dumps({"schema": avro_record(500)}, separators=(",", ":")))
CEILING_APP = '''
BODY = b'{"schema":"' + b"x" * PADDING + b'"}'
HEADERS = [(b"content-type", b"application/vnd.schemaregistry.v1+json"), (b"content-length", b"%d" % len(BODY))]
async def app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})
HEAD = b"HTTP/1.1 200 OK\\r\\n" + b"".join(b"%s: %s\\r\\n" % pair for pair in HEADERS) + b"\\r\\n"
def at_once(method, raw_path, query, headers, body):
    return HEAD, BODY
'''.replace("PADDING", str(ID_BODY_BYTES - len('{"schema":""}')))
LATEST_LUA = """
counter = 0
request = function()
  counter = counter + 1
  return wrk.format("GET", "/subjects/subject-" .. ((counter % 1000) + 1) .. "/versions/latest")
end
"""


def wrk(url: str, duration: int, script: Path, headers: tuple[str, ...] = ()) -> tuple[float, float]:
    """One wrk run: (requests per second, p99 latency in ms)."""
    out = subprocess.run(["wrk", "-t2", "-c100", f"-d{duration}s", "--timeout", "10s", "--latency", "-s", str(script),
                          *(a for h in headers for a in ("-H", h)), url],
                         capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError(f"wrk saw errors:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    value, unit = re.search(r"99%\s+([\d.]+)(us|ms|s)", out).groups()
    p99 = float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    return rps, p99


def measure(url: str, runs: int, duration: int, script: Path) -> tuple[float, float, list[float]]:
    wrk(url, 2, script)  # warm-up
    results = [wrk(url, duration, script) for _ in range(runs)]
    return (statistics.median(r[0] for r in results), statistics.median(r[1] for r in results),
            [r[0] for r in results])


def alternate(urls: list[str], runs: int, duration: int, script: Path) -> list[tuple[float, float, list[float]]]:
    """`measure` for several servers, their runs interleaved so that load from elsewhere
    on the machine falls on all of them alike."""
    for url in urls:
        wrk(url, 2, script)  # warm-up
    results: list[list[tuple[float, float]]] = [[] for _ in urls]
    for _ in range(runs):
        for index, url in enumerate(urls):
            results[index].append(wrk(url, duration, script))
    return [(statistics.median(r[0] for r in each), statistics.median(r[1] for r in each), [r[0] for r in each])
            for each in results]


def until_serving(url: str, seconds: float = 20) -> None:
    """Block until a floor at `url` answers (raises OSError after `seconds`)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(url + "/", timeout=1).read()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def ceiling(runs: int, duration: int, script: Path, threads: int) -> tuple[float, float, list[float]]:
    work = Path(tempfile.mkdtemp())
    (work / "ceiling_app.py").write_text(CEILING_APP)
    port = free_port()
    proc = subprocess.Popen(asgi_floor_command("ceiling_app:app", port),
                            cwd=work, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        until_serving(url)
        return measure(url, runs, duration, script)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)


def _path_lua(template: str) -> str:
    """A wrk script asking GET `template` with {n} cycling through the 1,000 schemas."""
    path = ' .. n .. '.join(f'"{part}"' for part in template.split("{n}"))
    return f"""
counter = 0
request = function()
  counter = counter + 1
  local n = (counter % 1000) + 1
  return wrk.format("GET", {path})
end
"""


def _lookup_lua() -> str:
    """POST /subjects/subject-{n}: a serializer's lookup of the schema it holds."""
    bodies = ",\n".join("[[" + json.dumps({"schema": avro_record(n)}) + "]]" for n in range(1, 1001))
    return f"""
bodies = {{
{bodies}
}}
counter = 0
request = function()
  counter = counter + 1
  local n = (counter % 1000) + 1
  return wrk.format("POST", "/subjects/subject-" .. n, {{["Content-Type"] = "application/json"}}, bodies[n])
end
"""


# The calls of issue 17's table: (label, wrk script)
HOT_CALLS = [
    ("GET /schemas/ids/{id}", _path_lua("/schemas/ids/{n}")),
    ("GET /subjects/{s}/versions/latest", _path_lua("/subjects/subject-{n}/versions/latest")),
    ("POST /subjects/{s} (lookup)", None),
    ("GET /subjects", _path_lua("/subjects")),
    ("GET /subjects/{s}/versions", _path_lua("/subjects/subject-{n}/versions")),
    ("GET /schemas/ids/{id}/versions", _path_lua("/schemas/ids/{n}/versions")),
    ("GET /config/{s}", _path_lua("/config/subject-{n}?defaultToGlobal=true")),
    ("GET /schemas/ids/{id}?subject= (deserializers)", _path_lua("/schemas/ids/{n}?subject=subject-{n}")),
]


def hot_calls(runs: int, duration: int, before: Path | None, only: str = "") -> None:
    """Every hot call of issue 17's table against the bare ASGI floor and our id path, all
    servers up at once and measured round-robin (ours, the floor, and `before` if given)."""
    work = Path(tempfile.mkdtemp())
    scripts = []
    for index, (label, lua) in enumerate(HOT_CALLS):
        if index and only not in label:
            continue
        script = work / f"call-{index}.lua"
        script.write_text(lua if lua is not None else _lookup_lua())
        scripts.append((label, script))
    (work / "ceiling_app.py").write_text(CEILING_APP)
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    # The second floor answers every request at once (`Listeners(at_once=...)`), as the
    # registry answers the reads it keeps ready: what is left of ours over it is the
    # registry's own work. The ratios are against the first, a bare ASGI app (issue 17's).
    names = ["floor: bare ASGI app, our listener", "floor: bare answer at once", "ours"] + (["before"] if before else [])
    try:
        with contextlib.ExitStack() as stack:
            urls = []
            for at_once in (None, "at_once"):
                port = free_port()
                floor = subprocess.Popen(asgi_floor_command("ceiling_app:app", port, at_once),
                                         cwd=work, start_new_session=True, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
                stack.callback(lambda floor=floor: (os.killpg(floor.pid, signal.SIGKILL), floor.wait()))
                urls.append(f"http://127.0.0.1:{port}")
            env = {"SCHEMA_REGISTRY_SERVER_THREADS": "32"}
            for name in names[2:]:
                data = work / f"data-{name}"
                data.mkdir()
                prefill(data, 1000)
                cli = CLI if name == "ours" else before / ".venv" / "bin" / "schema-registry"
                url, _ = stack.enter_context(registry(data, env, cli=cli))
                urls.append(url)
            for url in urls[:2]:
                until_serving(url)
            for label, script in scripts:
                for url in urls:
                    wrk(url, 2, script)  # warm-up
                for _ in range(runs):
                    for name, url in zip(names, urls):
                        results.setdefault((name, label), []).append(wrk(url, duration, script))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nHot calls: 1,000 schemas, wrk -t2 -c100, {runs} x {duration}s round-robin, median (runs)")
    print("vs floor: against the bare ASGI app measured in the same rounds as the call; vs id: that ratio "
          "over the id path's own (the machine's noise divides out)")
    print("paired: the median over rounds of the call's req/s over the floor's in that round; "
          "vs at once: the same over the floor answering at once")
    print(f"{'call':48} {'server':32} {'req/s':>8} {'p99 ms':>8} {'vs floor':>9} {'vs id':>6} {'paired':>7} "
          f"{'vs at once':>10}  runs")

    def median_rps(name: str, label: str) -> float:
        return statistics.median(r[0] for r in results[(name, label)])

    def paired(name: str, label: str, floor: str = names[0]) -> float:
        """The median over rounds of this server's req/s over the floor's in the same round:
        the machine's drift between rounds divides out."""
        return statistics.median(a[0] / b[0] for a, b in zip(results[(name, label)], results[(floor, label)]))

    id_ratio = median_rps("ours", HOT_CALLS[0][0]) / median_rps(names[0], HOT_CALLS[0][0])
    for label, _ in scripts:
        floor_rps = median_rps(names[0], label)
        for name in names:
            each = results[(name, label)]
            rps, p99 = statistics.median(r[0] for r in each), statistics.median(r[1] for r in each)
            print(f"{label:48} {name:32} {rps:8.0f} {p99:8.1f} {rps / floor_rps:8.2f}x "
                  f"{rps / floor_rps / id_ratio:5.2f}x {paired(name, label):6.2f}x {paired(name, label, names[1]):9.2f}x  "
                  f"{', '.join(f'{r[0]:.0f}' for r in each)}")


def security(runs: int, duration: int) -> None:
    """What authentication, authorization and metrics cost, on the fast path and through Flask."""
    sys.path.insert(0, str(ROOT))
    from registry.http.security.passwords import users_file_line
    from tests.pki import Pki

    work = Path(tempfile.mkdtemp())
    try:
        (work / "ids.lua").write_text(LUA)
        (work / "latest.lua").write_text(LATEST_LUA)
        users = work / "users.properties"
        users.write_text(users_file_line("reader", "reader-pw") + "\n")  # the default argon2 cost
        rules = work / "rules.json"
        rules.write_text(json.dumps({"rules": [
            {"principal": "reader", "operations": ["read"], "subject_prefix": "subject-"}]}))
        server_cert = Pki(work / "pki").issue("registry")
        basic = ("Authorization: Basic " + base64.b64encode(b"reader:reader-pw").decode(),)
        secured = {"SCHEMA_REGISTRY_AUTHENTICATION_METHOD": "BASIC",
                   "SCHEMA_REGISTRY_AUTHENTICATION_USERS_FILE": str(users),
                   "SCHEMA_REGISTRY_AUTHORIZATION_RULES_FILE": str(rules)}
        off = {"SCHEMA_REGISTRY_METRICS_ENABLED": "false"}
        tls = {"SCHEMA_REGISTRY_SSL_KEYSTORE_LOCATION": str(server_cert.pem_bundle())}
        configs = [  # name, env, headers, listener: http, or https (beside an http one)
            ("no auth, no metrics", off, (), "http"),
            ("metrics (default)", {}, (), "http"),
            ("metrics + Basic + rules", secured, basic, "http"),
            ("https, metrics + Basic + rules", {**secured, **tls}, basic, "https"),
        ]
        with contextlib.ExitStack() as stack:
            servers = []
            for index, (name, env, headers, listener) in enumerate(configs):
                data = work / f"data-{index}"
                data.mkdir()
                prefill(data, 1000)
                extra_port = free_port()
                extra = f"https://127.0.0.1:{extra_port}" if listener == "https" else ""
                url, _ = stack.enter_context(registry(data, {**env, "SCHEMA_REGISTRY_SERVER_THREADS": "32"},
                                                      extra_listeners=extra))
                if listener == "https":
                    url = f"https://127.0.0.1:{extra_port}"
                servers.append((name, url, headers))
            results: dict[tuple[str, str], list[tuple[float, float]]] = {}
            for script in ("ids.lua", "latest.lua"):
                for name, url, headers in servers:
                    wrk(url, 2, work / script, headers)  # warm-up (and the first argon2 check)
                for _ in range(runs):
                    for name, url, headers in servers:
                        results.setdefault((name, script), []).append(wrk(url, duration, work / script, headers))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for script, title in (("ids.lua", "GET /schemas/ids/{id} (fast path)"),
                          ("latest.lua", "GET /subjects/{s}/versions/latest (Flask)")):
        print(f"\n{title}: 1,000 schemas, wrk -t2 -c100, {runs} x {duration}s round-robin, median")
        print(f"{'configuration':48} {'req/s':>8} {'p99 ms':>8}  vs first  runs")
        base = statistics.median(r[0] for r in results[(configs[0][0], script)])
        for name, *_ in configs:
            each = results[(name, script)]
            rps, p99 = statistics.median(r[0] for r in each), statistics.median(r[1] for r in each)
            print(f"{name:48} {rps:8.0f} {p99:8.1f}  {rps / base:7.2f}x  {', '.join(f'{r[0]:.0f}' for r in each)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--threads", default="32", help="server.threads values to try, comma-separated")
    parser.add_argument("--before", type=Path,
                        help="also measure this checkout (its .venv/bin/schema-registry), alternating runs with ours")
    parser.add_argument("--calls", action="store_true",
                        help="every hot call of issue 17 against the bare ASGI floor (and --before)")
    parser.add_argument("--only", default="",
                        help="with --calls: only the calls whose label holds this text (and the id path)")
    parser.add_argument("--security", action="store_true",
                        help="measure the cost of authentication, authorization and metrics instead")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is needed: apt-get install -y wrk")
    if args.security:
        security(args.runs, args.duration)
        return
    if args.calls:
        hot_calls(args.runs, args.duration, args.before, args.only)
        return
    work = Path(tempfile.mkdtemp())
    script = work / "ids.lua"
    script.write_text(LUA)
    rows = []
    flask_rows = []
    before_rows: list[tuple] = []
    try:
        for threads in [int(t) for t in args.threads.split(",")]:
            data = work / f"read-{threads}"
            data.mkdir()
            prefill(data, 1000)
            latest = work / "latest.lua"
            latest.write_text(LATEST_LUA)
            env = {"SCHEMA_REGISTRY_SERVER_THREADS": str(threads)}
            if args.before:
                before_data = work / f"before-{threads}"
                before_data.mkdir()
                prefill(before_data, 1000)
                with registry(data, env) as (url, _), \
                        registry(before_data, env, cli=args.before / ".venv" / "bin" / "schema-registry") as (old, _):
                    for label, lua in (("GET /schemas/ids/{id}", script), ("GET /subjects/{s}/versions/latest", latest)):
                        (n_rps, n_p99, n_each), (o_rps, o_p99, o_each) = alternate([url, old], args.runs,
                                                                                   args.duration, lua)
                        before_rows.append((label, n_rps, n_p99, n_each, o_rps, o_p99, o_each))
            with registry(data, env) as (url, _):
                rps, p99, each = measure(url, args.runs, args.duration, script)
                f_rps, f_p99, f_each = measure(url, args.runs, args.duration, latest)
            rows.append((f"ours, server.threads={threads}", rps, p99, each))
            c_rps, c_p99, c_each = ceiling(args.runs, args.duration, script, threads)
            rows.append(("reference: bare ASGI app, our listener", c_rps, c_p99, c_each))
            flask_rows.append((f"ours, via Flask: /subjects/{{s}}/versions/latest, threads={threads}",
                               f_rps, f_p99, f_each))

        empty, full = work / "empty", work / "full"
        empty.mkdir()
        full.mkdir()
        prefill(full, 10_000)
        with registry(empty) as (_, pid):
            rss_empty = rss_kib(pid)
        with registry(full) as (url, pid):
            urllib.request.urlopen(url + "/schemas/ids/10000").read()
            rss_full = rss_kib(pid)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"\nGET /schemas/ids/{{id}}: 1,000 schemas, wrk -t2 -c100, {args.runs} x {args.duration}s, median")
    print(f"{'server':48} {'req/s':>8} {'p99 ms':>8}  runs")
    for name, rps, p99, each in rows:
        print(f"{name:48} {rps:8.0f} {p99:8.1f}  {', '.join(f'{r:.0f}' for r in each)}")
    for i in range(0, len(rows), 2):
        ours, ref = rows[i], rows[i + 1]
        print(f"ratio {ours[0]}: {ours[1] / ref[1]:.2f}x the bare-ASGI ceiling, "
              f"{ours[1] / CONFLUENT_PUBLISHED:.2f}x Confluent's published {CONFLUENT_PUBLISHED} req/s")
    for name, rps, p99, each in flask_rows:
        print(f"{name:48} {rps:8.0f} {p99:8.1f}  {', '.join(f'{r:.0f}' for r in each)}  "
              f"({rps / CONFLUENT_PUBLISHED:.2f}x Confluent's published figure)")
    if before_rows:
        print(f"\nThis checkout against {args.before}, runs alternating between the two, median")
        for label, n_rps, n_p99, n_each, o_rps, o_p99, o_each in before_rows:
            print(f"{label:36} after {n_rps:8.0f} req/s p99 {n_p99:6.1f} ms ({', '.join(f'{r:.0f}' for r in n_each)}); "
                  f"before {o_rps:8.0f} req/s p99 {o_p99:6.1f} ms ({', '.join(f'{r:.0f}' for r in o_each)}); "
                  f"ratio {n_rps / o_rps:.2f}x")
    print(f"\nRSS, supervisor + worker: empty registry {rss_empty / 1024:.1f} MiB, "
          f"10,000 schemas {rss_full / 1024:.1f} MiB (+{(rss_full - rss_empty) / 1024:.1f} MiB)")


if __name__ == "__main__":
    main()
