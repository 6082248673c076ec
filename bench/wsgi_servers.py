#!/usr/bin/env python3
"""The study that chose the registry's HTTP server (granian) -- not a benchmark of the registry.

The candidates serve a stand-in for the hot path written in this file (a dict of 1,000
schemas behind a small Flask or plain WSGI app), never the registry itself, so its figures
say nothing about the registry's current serving path (granian with the id fast path and
the cache); ``bench/read_throughput.py`` measures that. Kept to re-run the choice when a
server, granian or Python changes. It runs in a venv of its own (see Requirements).

Side-by-side comparison of production WSGI servers on that stand-in.

Hot request: ``GET /schemas/ids/{id}`` -> ``{"schema": "<avro record json>"}`` (~200 bytes),
content type ``application/vnd.schemaregistry.v1+json``, looked up in a dict of 1,000 schemas.
Target: beat Confluent Schema Registry's published ~6,088 req/s (Redpanda ~7,708) with
1,000 schemas and 100 concurrent connections, load tool on the same 2-core machine.

What it does
------------
For every candidate (server x config x app variant) it:
  1. starts the server in a subprocess (its own session / process group) on 127.0.0.1 and a
     free port -- the subprocess is this same file run as ``--serve ...``;
  2. checks the responses (body, content type, 404 for an unknown id);
  3. warms up (``wrk`` 2 s), then runs ``wrk -t2 -c100 -dNs --latency`` RUNS times with a Lua
     script that cycles over ids 1..1000, and keeps the median req/s and median p99. Around
     every run it accounts CPU from /proc: server tree, wrk, and "other" (anything else on the
     box). A run during which other work used more than --max-other % of the machine is
     retried once after waiting for a quiet box; the "other" column shows what remained;
  4. reads the "background replica thread" stats: every serving process runs a thread that
     sleeps 10 ms in a loop (a stand-in for the log reader that keeps the cache replica up to
     date) and records how late it wakes up under load (GIL / event-loop starvation);
  5. samples the RSS of the whole process tree (multi-process costs memory per replica);
  6. tests graceful SIGTERM: sends a 1 s "slow" request, SIGTERMs the server's main pid while
     it is in flight, and records whether the in-flight request still got a 200, the exit
     code, and how long the exit took;
  7. kills the whole process group in a ``finally`` (SIGKILL) and verifies nothing is left.

Finally it prints a table: req/s, p99, ratio to the best candidate, to Confluent's 6,088 and
to Redpanda's 7,708 req/s, background-thread lag, RSS, CPU split, SIGTERM result.

Candidates: every server with the Flask app (``flask_json``: json.dumps per request). Then the
three best single-process candidates and the best multi-process one are re-run with the other
app variants: ``flask_bytes`` (Flask, pre-encoded body), ``raw_json`` / ``raw_bytes`` (same
endpoint as a plain WSGI callable, no Flask), and ``hybrid`` (the Flask app behind a ~15-line
WSGI wrapper that answers ``GET /schemas/ids/<n>`` from pre-encoded bytes and hands every
other request, including misses, to Flask).

Requirements (versions used for the recorded results -- pin them)
------------------------------------------------------------------
  Debian: ``apt-get install -y wrk libev-dev build-essential``   (wrk 4.1.0; libev for bjoern)
  Python 3.11, then in a venv (e.g. ``python3.11 -m venv /tmp/wsgi-venv``):

    pip install Flask==3.1.3 Werkzeug==3.1.9 \\
        gunicorn==27.0.1 waitress==3.0.2 cheroot==11.1.2 \\
        gevent==26.9.0 greenlet==3.5.6 bjoern==3.2.2 granian==2.8.7 \\
        uvicorn==0.54.0 uvloop==0.23.0 httptools==0.9.0 a2wsgi==1.10.10 \\
        socketify==0.0.31

  meinheld (1.0.2) does not install on Python 3.11 (it pins greenlet<0.5, which fails to
  build), so it is reported as skipped. Any candidate whose package is missing is skipped
  and reported as such, so a partial venv still runs.

Usage
-----
    python bench/wsgi_servers.py                      # all candidates, 3 x 5 s runs each
    python bench/wsgi_servers.py --duration 10 --runs 1
    python bench/wsgi_servers.py --only granian,bjoern
    python bench/wsgi_servers.py --list

Total run time with defaults is ~15-20 minutes on a quiet box (longer if it has to wait for
quiet). wrk itself needs only ~5-15 % of the machine at these rates; the Flask candidates are
bound by one core's worth of Python (the GIL), so other work on the box moves the numbers a
lot: trust a row only if its "other" CPU is low, and compare candidates from the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

N_SCHEMAS = 1000
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
CONFLUENT_RPS = 6088.0
REDPANDA_RPS = 7708.0
HOST = "127.0.0.1"

# --------------------------------------------------------------------------------------
# Data: 1,000 Avro record schemas, ~200-byte response bodies
# --------------------------------------------------------------------------------------


def make_schemas() -> dict[int, str]:
    schemas = {}
    for i in range(1, N_SCHEMAS + 1):
        schemas[i] = json.dumps(
            {
                "type": "record",
                "name": f"Rec{i}",
                "namespace": "com.example",
                "fields": [
                    {"name": "id", "type": "long"},
                    {"name": "name", "type": "string"},
                    {"name": "ts", "type": "long"},
                ],
            },
            separators=(",", ":"),
        )
    return schemas


def expected_body(schemas: dict[int, str], sid: int) -> bytes:
    return json.dumps({"schema": schemas[sid]}).encode()


NOT_FOUND_BODY = json.dumps({"error_code": 40403, "message": "Schema not found"}).encode()

# --------------------------------------------------------------------------------------
# Background "replica reader" thread: sleeps 10 ms in a loop and records wake-up lag
# --------------------------------------------------------------------------------------


class BackgroundTicker(threading.Thread):
    PERIOD = 0.010

    def __init__(self) -> None:
        super().__init__(name="replica-reader", daemon=True)
        self._lock = threading.Lock()
        self._lags: list[float] = []
        self._ticks = 0
        self._since = time.monotonic()

    def run(self) -> None:
        while True:
            t0 = time.monotonic()
            time.sleep(self.PERIOD)
            lag = time.monotonic() - t0 - self.PERIOD
            with self._lock:
                self._ticks += 1
                if len(self._lags) < 200_000:
                    self._lags.append(lag)

    def snapshot_and_reset(self) -> dict:
        with self._lock:
            lags, ticks, since = self._lags, self._ticks, self._since
            self._lags, self._ticks, self._since = [], 0, time.monotonic()
        elapsed = max(1e-9, time.monotonic() - since)
        lags.sort()
        return {
            "pid": os.getpid(),
            "elapsed_s": round(elapsed, 2),
            "ticks": ticks,
            # a non-starved thread ticks ~1/PERIOD times per second
            "ticks_per_s": round(ticks / elapsed, 1),
            "lag_p99_ms": round(1000 * lags[int(0.99 * (len(lags) - 1))], 2) if lags else None,
            "lag_max_ms": round(1000 * lags[-1], 2) if lags else None,
        }


_TICKER: BackgroundTicker | None = None


def start_ticker() -> BackgroundTicker:
    """Start the background thread in the *serving* process (after any fork)."""
    global _TICKER
    if _TICKER is None or _TICKER.pid != os.getpid():
        _TICKER = BackgroundTicker()
        _TICKER.pid = os.getpid()  # type: ignore[attr-defined]
        _TICKER.start()
    return _TICKER


def slow_ms(query: str) -> float:
    m = re.search(r"ms=(\d+)", query or "")
    return int(m.group(1)) if m else 1000


# --------------------------------------------------------------------------------------
# App variants
#   flask_json  : Flask route, json.dumps per request            (what we will ship by default)
#   flask_bytes : Flask route, pre-encoded bytes body per id
#   raw_json    : plain WSGI callable, json.dumps per request     (no Flask)
#   raw_bytes   : plain WSGI callable, pre-encoded bytes body     (no Flask, floor of app cost)
#   hybrid      : Flask app (flask_json) wrapped by a thin WSGI callable that answers
#                 GET /schemas/ids/<n> from pre-encoded bytes and hands everything else to Flask
# --------------------------------------------------------------------------------------

VARIANTS = ("flask_json", "flask_bytes", "raw_json", "raw_bytes", "hybrid")


def make_flask_app(variant: str):
    from flask import Flask, Response, request

    schemas = make_schemas()
    encoded = {k: json.dumps({"schema": v}).encode() for k, v in schemas.items()}
    ticker = start_ticker()
    app = Flask("schema_registry_bench")

    if variant == "flask_json":

        @app.get("/schemas/ids/<int:schema_id>")
        def get_schema_by_id(schema_id: int):
            schema = schemas.get(schema_id)
            if schema is None:
                return Response(NOT_FOUND_BODY, status=404, content_type=CONTENT_TYPE)
            return Response(json.dumps({"schema": schema}), content_type=CONTENT_TYPE)

    elif variant == "flask_bytes":

        @app.get("/schemas/ids/<int:schema_id>")
        def get_schema_by_id(schema_id: int):
            body = encoded.get(schema_id)
            if body is None:
                return Response(NOT_FOUND_BODY, status=404, content_type=CONTENT_TYPE)
            return Response(body, content_type=CONTENT_TYPE)

    else:
        raise ValueError(variant)

    @app.get("/_bench/bg")
    def bg_stats():
        return Response(json.dumps(ticker.snapshot_and_reset()), content_type="application/json")

    @app.get("/_bench/slow")
    def slow():
        time.sleep(slow_ms(request.query_string.decode()) / 1000)
        return Response(b'{"slow":true}', content_type="application/json")

    return app


def make_raw_app(variant: str):
    schemas = make_schemas()
    encoded = {k: json.dumps({"schema": v}).encode() for k, v in schemas.items()}
    ticker = start_ticker()
    prefix = "/schemas/ids/"
    plen = len(prefix)
    ct = ("Content-Type", CONTENT_TYPE)
    dumps = json.dumps
    use_bytes = variant == "raw_bytes"

    def app(environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path.startswith(prefix):
            tail = path[plen:]
            body = None
            if tail.isdigit():
                sid = int(tail)
                if use_bytes:
                    body = encoded.get(sid)
                else:
                    schema = schemas.get(sid)
                    if schema is not None:
                        body = dumps({"schema": schema}).encode()
            if body is None:
                start_response("404 NOT FOUND", [ct, ("Content-Length", str(len(NOT_FOUND_BODY)))])
                return [NOT_FOUND_BODY]
            start_response("200 OK", [ct, ("Content-Length", str(len(body)))])
            return [body]
        if path == "/_bench/bg":
            body = json.dumps(ticker.snapshot_and_reset()).encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        if path == "/_bench/slow":
            time.sleep(slow_ms(environ.get("QUERY_STRING", "")) / 1000)
            body = b'{"slow":true}'
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        start_response("404 NOT FOUND", [("Content-Length", "0")])
        return [b""]

    return app


def make_hybrid_app():
    flask_app = make_flask_app("flask_json")
    encoded = {k: json.dumps({"schema": v}).encode() for k, v in make_schemas().items()}
    prefix = "/schemas/ids/"
    plen = len(prefix)
    ct = CONTENT_TYPE

    def app(environ, start_response):
        path = environ["PATH_INFO"]
        if environ["REQUEST_METHOD"] == "GET" and path.startswith(prefix):
            tail = path[plen:]
            if tail.isdigit():
                body = encoded.get(int(tail))
                if body is not None:
                    start_response("200 OK", [("Content-Type", ct), ("Content-Length", str(len(body)))])
                    return [body]
        return flask_app(environ, start_response)  # misses, errors, every other route

    return app


def build_app(variant: str):
    if variant == "hybrid":
        return make_hybrid_app()
    if variant.startswith("flask_"):
        return make_flask_app(variant)
    return make_raw_app(variant)


# --------------------------------------------------------------------------------------
# Server launchers (run inside the server subprocess). Each one binds host/port, serves the
# app and handles SIGTERM the way we would in `schema-registry serve`.
# --------------------------------------------------------------------------------------


def serve_gunicorn(variant: str, port: int, opts: dict) -> None:
    from gunicorn.app.base import BaseApplication

    class App(BaseApplication):
        def __init__(self) -> None:
            self.options = {
                "bind": f"{HOST}:{port}",
                "workers": opts.get("workers", 1),
                "worker_class": opts.get("worker_class", "sync"),
                "threads": opts.get("threads", 1),
                "worker_connections": 1000,
                "backlog": 2048,
                "keepalive": 5,
                "graceful_timeout": 10,
                "timeout": 30,
                "accesslog": None,
                "loglevel": "warning",
                "preload_app": False,  # load() runs in every worker => one replica per worker
            }
            super().__init__()

        def load_config(self) -> None:
            for k, v in self.options.items():
                self.cfg.set(k, v)

        def load(self):
            return build_app(variant)

    # gunicorn's arbiter handles SIGTERM itself: stop accepting, let workers finish
    # in-flight requests for up to graceful_timeout, exit 0.
    App().run()


def serve_waitress(variant: str, port: int, opts: dict) -> None:
    from waitress import create_server

    server = create_server(
        build_app(variant),
        host=HOST,
        port=port,
        threads=opts.get("threads", 8),
        connection_limit=1000,
        backlog=2048,
        channel_timeout=30,
        ident="schema-registry",
    )

    def on_term(signum, frame):
        raise SystemExit(0)  # waitress.run() catches it and shuts its task dispatcher down

    signal.signal(signal.SIGTERM, on_term)
    server.run()


def serve_cheroot(variant: str, port: int, opts: dict) -> None:
    from cheroot import wsgi

    server = wsgi.Server(
        (HOST, port),
        build_app(variant),
        numthreads=opts.get("threads", 10),
        request_queue_size=2048,
        shutdown_timeout=10,
    )

    def on_term(signum, frame):
        threading.Thread(target=server.stop, daemon=True).start()

    signal.signal(signal.SIGTERM, on_term)
    server.start()  # returns after stop()


def serve_gevent(variant: str, port: int, opts: dict) -> None:
    import gevent
    from gevent.pywsgi import WSGIServer

    # No monkey patching: the replica thread stays a real OS thread.
    server = WSGIServer((HOST, port), build_app(variant), log=None, backlog=2048)
    gevent.signal_handler(signal.SIGTERM, server.stop, 10)  # stop accepting, wait <=10s
    server.serve_forever()


def serve_bjoern(variant: str, port: int, opts: dict) -> None:
    import bjoern

    workers = opts.get("workers", 1)
    bjoern.listen(_Lazy(variant), HOST, port, listen_backlog=2048)

    def on_term(signum, frame):
        # Raising here would land inside a running request (-> 500) and bjoern would carry on.
        # Re-deliver as SIGINT: bjoern's own libev SIGINT watcher breaks the loop cleanly
        # after the current callback, and bjoern.run() raises KeyboardInterrupt.
        os.kill(os.getpid(), signal.SIGINT)

    if workers == 1:
        signal.signal(signal.SIGTERM, on_term)
        try:
            bjoern.run()
        except KeyboardInterrupt:
            pass
        return
    # pre-fork on the shared listening socket; the parent only supervises.
    children = []
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, on_term)
            try:
                bjoern.run()
            except KeyboardInterrupt:
                pass
            os._exit(0)
        children.append(pid)
    signal.signal(signal.SIGTERM, lambda s, f: [os.kill(p, signal.SIGTERM) for p in children])
    for pid in children:
        while True:
            try:
                os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
            except ChildProcessError:
                break


class _Lazy:
    """WSGI app built on first use, i.e. in the process that serves (after fork)."""

    def __init__(self, variant: str) -> None:
        self.variant = variant
        self.app = None
        self.pid = None

    def __call__(self, environ, start_response):
        if self.pid != os.getpid():
            self.app, self.pid = build_app(self.variant), os.getpid()
        return self.app(environ, start_response)


def serve_granian(variant: str, port: int, opts: dict) -> None:
    from granian.constants import Interfaces
    from granian.server import Server

    kwargs = dict(
        address=HOST,
        port=port,
        interface=Interfaces.WSGI,
        workers=opts.get("workers", 1),
        backlog=2048,
        log_enabled=False,
    )
    for key in ("blocking_threads", "backpressure", "runtime_threads", "runtime_mode", "task_impl", "loop"):
        if key in opts:
            kwargs[key] = opts[key]
    # Granian's main process supervises; the app is loaded in the worker process(es) by the
    # loader (after fork), which is also where the replica thread must be started.
    # SIGTERM handling is built in (main -> workers, graceful).
    Server("bench:app", **kwargs).serve(target_loader=lambda target: build_app(variant))


def serve_uvicorn(variant: str, port: int, opts: dict) -> None:
    import uvicorn
    from a2wsgi import WSGIMiddleware

    asgi = WSGIMiddleware(build_app(variant), workers=opts.get("threads", 10))
    uvicorn.run(
        asgi,
        host=HOST,
        port=port,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
        backlog=2048,
        timeout_graceful_shutdown=10,
    )  # handles SIGTERM itself: stop accepting, drain in-flight


def serve_socketify(variant: str, port: int, opts: dict) -> None:
    from socketify import AppListenOptions
    from socketify.wsgi import WSGI

    server = WSGI(build_app(variant))
    server.listen(AppListenOptions(port=port, host=HOST), lambda cfg: None)

    def on_term(signum, frame):
        server.server.server.close()  # socketify App: close the listen socket, stop the loop

    signal.signal(signal.SIGTERM, on_term)
    server.run()


def serve_meinheld(variant: str, port: int, opts: dict) -> None:
    import meinheld  # noqa: F401  (does not install on 3.11; kept so it is reported)
    from meinheld import server

    server.listen((HOST, port))
    server.run(build_app(variant))


SERVERS = {
    "gunicorn": (serve_gunicorn, "gunicorn"),
    "waitress": (serve_waitress, "waitress"),
    "cheroot": (serve_cheroot, "cheroot"),
    "gevent": (serve_gevent, "gevent"),
    "bjoern": (serve_bjoern, "bjoern"),
    "granian": (serve_granian, "granian"),
    "uvicorn": (serve_uvicorn, "uvicorn"),
    "socketify": (serve_socketify, "socketify"),
    "meinheld": (serve_meinheld, "meinheld"),
}


# --------------------------------------------------------------------------------------
# Candidates
# --------------------------------------------------------------------------------------


@dataclass
class Candidate:
    name: str
    server: str
    opts: dict = field(default_factory=dict)
    variant: str = "flask_json"
    multiproc: bool = False  # True => one cache replica per worker process

    @property
    def label(self) -> str:
        return self.name if self.variant == "flask_json" else f"{self.name} [{self.variant}]"


CANDIDATES = [
    # --- single process (one cache replica, one writer: the simple design) ---
    Candidate("gunicorn gthread w1 t8", "gunicorn", {"worker_class": "gthread", "workers": 1, "threads": 8}),
    Candidate("gunicorn gthread w1 t32", "gunicorn", {"worker_class": "gthread", "workers": 1, "threads": 32}),
    Candidate("gunicorn gevent w1", "gunicorn", {"worker_class": "gevent", "workers": 1}),
    Candidate("waitress t8", "waitress", {"threads": 8}),
    Candidate("cheroot t10", "cheroot", {"threads": 10}),
    Candidate("gevent WSGIServer", "gevent", {}),
    Candidate("bjoern", "bjoern", {"workers": 1}),
    Candidate("granian wsgi w1", "granian", {"workers": 1}),
    Candidate("granian wsgi w1 bt2", "granian", {"workers": 1, "blocking_threads": 2, "backpressure": 128}),
    Candidate("granian wsgi w1 bt1", "granian", {"workers": 1, "blocking_threads": 1, "backpressure": 128}),
    Candidate("granian wsgi w1 bt1 si1ms", "granian",
              {"workers": 1, "blocking_threads": 1, "backpressure": 128, "switchinterval": 0.001}),
    Candidate("uvicorn+a2wsgi", "uvicorn", {"threads": 10}),
    Candidate("socketify wsgi", "socketify", {}),
    Candidate("meinheld", "meinheld", {}),
    # --- multi process (each worker needs its own replica of the cache: flag the cost) ---
    Candidate("gunicorn sync w2", "gunicorn", {"worker_class": "sync", "workers": 2}, multiproc=True),
    Candidate("gunicorn sync w4", "gunicorn", {"worker_class": "sync", "workers": 4}, multiproc=True),
    Candidate("gunicorn gthread w2 t8", "gunicorn", {"worker_class": "gthread", "workers": 2, "threads": 8}, multiproc=True),
    Candidate("gunicorn gevent w2", "gunicorn", {"worker_class": "gevent", "workers": 2}, multiproc=True),
    Candidate("bjoern x2 (fork)", "bjoern", {"workers": 2}, multiproc=True),
    Candidate("granian wsgi w2", "granian", {"workers": 2}, multiproc=True),
    Candidate("granian wsgi w2 bt1", "granian", {"workers": 2, "blocking_threads": 1, "backpressure": 128}, multiproc=True),
]


# --------------------------------------------------------------------------------------
# Orchestration helpers
# --------------------------------------------------------------------------------------

WRK_LUA = r"""
local nthreads = 0
setup = function(thread)
  thread:set("tid", nthreads)
  nthreads = nthreads + 1
end
init = function(args)
  counter = (tid or 0) * 487
end
request = function()
  counter = counter + 1
  local id = (counter % 1000) + 1
  return wrk.format("GET", "/schemas/ids/" .. id,
    {["Accept"] = "application/vnd.schemaregistry.v1+json"})
end
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def http_get(port: int, path: str, timeout: float = 5.0) -> tuple[int, str, bytes]:
    req = urllib.request.Request(f"http://{HOST}:{port}{path}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def session_pids(sid: int) -> list[int]:
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        # fields[0]=state, [1]=ppid, [2]=pgrp, [3]=session
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(d))
    return pids


def tree_rss_mib(sid: int) -> float:
    total = 0
    for pid in session_pids(sid):
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def busy_jiffies() -> int:
    with open("/proc/stat") as f:
        vals = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...
    return sum(vals) - vals[3] - vals[4]


def tree_cpu_jiffies(sid: int) -> int:
    total = 0
    for pid in session_pids(sid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        total += int(fields[11]) + int(fields[12])  # utime + stime
    return total


def wait_for_quiet(sid: int, max_other: float, limit_s: float = 60.0) -> None:
    """Wait (up to limit_s) until processes outside our server tree use < max_other % of the box."""
    hz = os.sysconf("SC_CLK_TCK")
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        b0, s0, t0 = busy_jiffies(), tree_cpu_jiffies(sid), time.monotonic()
        time.sleep(1.0)
        b1, s1, t1 = busy_jiffies(), tree_cpu_jiffies(sid), time.monotonic()
        other = 100 * ((b1 - b0) - (s1 - s0)) / ((t1 - t0) * hz * (os.cpu_count() or 1))
        if other <= max_other:
            return


def children_cpu_jiffies() -> int:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)  # includes every finished wrk run
    return round((ru.ru_utime + ru.ru_stime) * os.sysconf("SC_CLK_TCK"))


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def _ms(tok: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", tok)
    if not m:
        return float("nan")
    return float(m.group(1)) * _UNITS[m.group(2)]


def run_wrk(port: int, lua: str, duration: int, conns: int, threads: int) -> dict:
    cmd = [
        "wrk", f"-t{threads}", f"-c{conns}", f"-d{duration}s", "--latency", "--timeout", "5s",
        "-s", lua, f"http://{HOST}:{port}/",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 30).stdout
    res = {"rps": 0.0, "p50": float("nan"), "p99": float("nan"), "errors": 0, "non2xx": 0, "raw": out}
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if m:
        res["rps"] = float(m.group(1))
    for pct, key in (("50", "p50"), ("99", "p99")):
        m = re.search(rf"^\s+{pct}(?:\.000)?%\s+(\S+)", out, re.M)
        if m:
            res[key] = _ms(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        res["errors"] = sum(int(x) for x in m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        res["non2xx"] = int(m.group(1))
    return res


@dataclass
class Result:
    cand: Candidate
    status: str = "ok"
    rps: float = 0.0
    rps_runs: list = field(default_factory=list)
    p50: float = float("nan")
    p99: float = float("nan")
    errors: int = 0
    non2xx: int = 0
    rss_mib: float = 0.0
    nprocs: int = 0
    bg: dict | None = None
    sigterm: str = ""
    srv_cpu: float = 0.0  # % of the 2-core machine used by the server tree during the runs
    wrk_cpu: float = 0.0  # % used by wrk
    other_cpu: float = 0.0  # % used by anything else (noise from other work on the box)


def wait_ready(proc: subprocess.Popen, port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with code {proc.returncode}")
        try:
            code, _, _ = http_get(port, "/schemas/ids/1", timeout=1.0)
            if code == 200:
                return
        except Exception as e:  # noqa: BLE001
            last = e
        time.sleep(0.1)
    raise RuntimeError(f"server not ready after {timeout}s ({last})")


def verify(port: int, schemas: dict[int, str]) -> None:
    for sid in (1, 2, 500, 1000):
        code, ct, body = http_get(port, f"/schemas/ids/{sid}")
        if code != 200 or body != expected_body(schemas, sid):
            raise RuntimeError(f"bad response for id {sid}: {code} {body[:80]!r}")
        if not ct.startswith(CONTENT_TYPE):
            raise RuntimeError(f"bad content type {ct!r}")
    code, _, _ = http_get(port, "/schemas/ids/1001")
    if code != 404:
        raise RuntimeError(f"expected 404 for unknown id, got {code}")


def sigterm_test(proc: subprocess.Popen, port: int) -> str:
    """SIGTERM while a 1 s request is in flight; report in-flight outcome, exit code, time."""
    box: dict = {}

    def slow():
        try:
            box["code"] = http_get(port, "/_bench/slow?ms=1000", timeout=15)[0]
        except Exception as e:  # noqa: BLE001
            box["err"] = type(e).__name__

    t = threading.Thread(target=slow, daemon=True)
    t.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=15)
        dt = time.monotonic() - t0
    except subprocess.TimeoutExpired:
        rc, dt = None, None
    t.join(timeout=5)
    inflight = "200" if box.get("code") == 200 else (box.get("err") or str(box.get("code")))
    if rc is None:
        return f"HUNG>15s, inflight={inflight}"
    return f"rc={rc} {dt:.1f}s inflight={inflight}"


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    for _ in range(50):
        if not session_pids(proc.pid):
            return
        time.sleep(0.1)
    left = session_pids(proc.pid)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if session_pids(proc.pid):
        print(f"  WARNING: processes left in session {proc.pid}: {session_pids(proc.pid)}", flush=True)


def module_available(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def bench_one(cand: Candidate, args, lua: str, schemas: dict[int, str], logdir: str) -> Result:
    res = Result(cand)
    module = SERVERS[cand.server][1]
    if not module_available(module):
        res.status = f"skipped: {module} not installed"
        return res
    if cand.server == "gunicorn" and cand.opts.get("worker_class") == "gevent" and not module_available("gevent"):
        res.status = "skipped: gevent not installed"
        return res
    port = free_port()
    log_path = os.path.join(logdir, re.sub(r"\W+", "_", cand.label) + ".log")
    log = open(log_path, "wb")
    cmd = [
        sys.executable, os.path.abspath(__file__), "--serve", cand.server,
        "--variant", cand.variant, "--port", str(port), "--opts", json.dumps(cand.opts),
    ]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        try:
            wait_ready(proc, port)
            verify(port, schemas)
        except Exception as e:  # noqa: BLE001
            tail = open(log_path, "rb").read()[-300:].decode(errors="replace").strip().splitlines()
            res.status = f"failed: {e}; {tail[-1] if tail else ''}"[:160]
            return res
        run_wrk(port, lua, args.warmup, args.connections, args.threads)
        http_get(port, "/_bench/bg")  # reset background-thread stats
        runs = []
        hz = os.sysconf("SC_CLK_TCK")
        for _ in range(args.runs):
            for attempt in range(args.retries + 1):
                wait_for_quiet(proc.pid, args.max_other, args.quiet_wait)
                b0, s0, w0, t0 = busy_jiffies(), tree_cpu_jiffies(proc.pid), children_cpu_jiffies(), time.monotonic()
                run = run_wrk(port, lua, args.duration, args.connections, args.threads)
                b1, s1, w1, t1 = busy_jiffies(), tree_cpu_jiffies(proc.pid), children_cpu_jiffies(), time.monotonic()
                cap = (t1 - t0) * hz * (os.cpu_count() or 1)
                run["srv_cpu"] = 100 * (s1 - s0) / cap  # % of the whole machine
                run["wrk_cpu"] = 100 * (w1 - w0) / cap
                run["other_cpu"] = max(0.0, 100 * ((b1 - b0) - (s1 - s0) - (w1 - w0)) / cap)
                if run["other_cpu"] <= args.max_other:
                    break
                more = "retrying" if attempt < args.retries else "kept"
                print(f"[noisy run: other cpu {run['other_cpu']:.0f}%, {more}]", end=" ", flush=True)
            runs.append(run)
            res.rss_mib = max(res.rss_mib, tree_rss_mib(proc.pid))
        try:
            res.bg = json.loads(http_get(port, "/_bench/bg")[2])
        except Exception:  # noqa: BLE001
            res.bg = None
        res.nprocs = len(session_pids(proc.pid))
        res.rps_runs = [r["rps"] for r in runs]
        res.rps = statistics.median(res.rps_runs)
        res.p50 = statistics.median(r["p50"] for r in runs)
        res.p99 = statistics.median(r["p99"] for r in runs)
        res.errors = sum(r["errors"] for r in runs)
        res.non2xx = sum(r["non2xx"] for r in runs)
        res.srv_cpu = statistics.median(r["srv_cpu"] for r in runs)
        res.wrk_cpu = statistics.median(r["wrk_cpu"] for r in runs)
        res.other_cpu = max(r["other_cpu"] for r in runs)
        if res.rps == 0:
            res.status = "failed: wrk measured 0 req/s"
            print(runs[0]["raw"], flush=True)
        res.sigterm = sigterm_test(proc, port)
        return res
    finally:
        kill_group(proc)
        log.close()


def fmt_ms(x: float) -> str:
    return "-" if x != x else (f"{x:.2f}" if x < 10 else f"{x:.1f}")


def print_table(results: list[Result]) -> None:
    ok = [r for r in results if r.status == "ok"]
    best = max((r.rps for r in ok), default=1.0)
    hdr = (
        f"{'candidate':<38} {'mp':>2} {'req/s':>8} {'runs (req/s)':>22} {'p50ms':>6} {'p99ms':>6} "
        f"{'/best':>5} {'/CSR':>5} {'/RP':>5} {'err':>5} {'bg p99/max ms':>14} {'bg t/s':>6} "
        f"{'RSS MiB':>7} {'procs':>5} {'cpu% srv/wrk/other':>18}  SIGTERM (in-flight 1s request)"
    )
    print()
    print(hdr)
    print("-" * len(hdr))
    for r in sorted(results, key=lambda r: (r.status != "ok", -r.rps)):
        c = r.cand
        if r.status != "ok":
            print(f"{c.label:<38} {'y' if c.multiproc else '':>2} {r.status}")
            continue
        runs = "/".join(f"{x:.0f}" for x in r.rps_runs)
        bg = "-"
        bgt = "-"
        if r.bg:
            bg = f"{r.bg['lag_p99_ms']}/{r.bg['lag_max_ms']}"
            bgt = f"{r.bg['ticks_per_s']:.0f}"
        print(
            f"{c.label:<38} {'y' if c.multiproc else '':>2} {r.rps:>8.0f} {runs:>22} {fmt_ms(r.p50):>6} "
            f"{fmt_ms(r.p99):>6} {r.rps / best:>5.2f} {r.rps / CONFLUENT_RPS:>5.2f} "
            f"{r.rps / REDPANDA_RPS:>5.2f} {r.errors + r.non2xx:>5} {bg:>14} {bgt:>6} "
            f"{r.rss_mib:>7.0f} {r.nprocs:>5} {f'{r.srv_cpu:.0f}/{r.wrk_cpu:.0f}/{r.other_cpu:.0f}':>18}  {r.sigterm}"
        )
    print()
    print("mp=y: multi-process, one cache replica per worker. /CSR = ratio to Confluent's 6,088 req/s,")
    print("/RP = ratio to Redpanda's 7,708 req/s. err = wrk socket errors + non-2xx. bg = wake-up lag of")
    print("a 10 ms-period background thread in (one of) the serving process(es); t/s ~100 means not starved.")
    print("cpu% = share of the whole machine (2 cores = 100%) used by the server tree / wrk (medians) / anything")
    print("else (max over runs): a high 'other' means another workload on the box disturbed that candidate.")


def versions() -> str:
    from importlib import metadata

    out = []
    for dist in ("flask", "werkzeug", "gunicorn", "waitress", "cheroot", "gevent", "bjoern",
                 "granian", "uvicorn", "a2wsgi", "uvloop", "httptools", "socketify", "meinheld"):
        try:
            out.append(f"{dist}=={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            out.append(f"{dist}:absent")
    wrk = subprocess.run(["wrk", "-v"], capture_output=True, text=True)
    out.append((wrk.stdout + wrk.stderr).split("\n")[0].strip())
    return " ".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("--variant", default="flask_json", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--opts", default="{}", help=argparse.SUPPRESS)
    ap.add_argument("--duration", type=int, default=5, help="seconds per wrk run (default 5)")
    ap.add_argument("--runs", type=int, default=3, help="wrk runs per candidate (default 3)")
    ap.add_argument("--warmup", type=int, default=2, help="warm-up seconds (default 2)")
    ap.add_argument("--connections", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2, help="wrk threads (default 2)")
    ap.add_argument("--max-other", type=float, default=10.0,
                    help="CPU %% of the machine that other workloads may use during a run; a noisier run "
                         "is retried after waiting for the box to be quiet (default 10)")
    ap.add_argument("--retries", type=int, default=1, help="retries of a noisy run (default 1)")
    ap.add_argument("--quiet-wait", type=float, default=10.0,
                    help="seconds to wait at most for a quiet box before each run (default 10)")
    ap.add_argument("--only", default="", help="comma-separated substrings of candidate names")
    ap.add_argument("--variants-on", default="auto",
                    help="candidate names to also run with flask_bytes/raw_json/raw_bytes "
                         "('auto' = three best single-process and best multi-process; 'none')")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()

    if args.serve:
        opts = json.loads(args.opts)
        if "switchinterval" in opts:  # GIL switch interval (default 5 ms); inherited by forks
            sys.setswitchinterval(opts["switchinterval"])
        SERVERS[args.serve][0](args.variant, args.port, opts)
        return 0

    cands = CANDIDATES
    if args.only:
        keys = [k.strip() for k in args.only.split(",") if k.strip()]
        cands = [c for c in cands if any(k in c.name for k in keys)]
    if args.list:
        for c in cands:
            print(c.name, c.server, c.opts, "multi-process" if c.multiproc else "")
        return 0

    # The figures below are easily mistaken for the registry's own: say what they are.
    print(f"# {ap.description}")
    print(f"# {versions()}")
    print(f"# python {sys.version.split()[0]}, {os.cpu_count()} cpus, wrk -t{args.threads} -c{args.connections} "
          f"-d{args.duration}s x{args.runs} (median), warm-up {args.warmup}s, {N_SCHEMAS} schemas", flush=True)
    schemas = make_schemas()
    print(f"# response body {len(expected_body(schemas, 1000))} bytes", flush=True)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="wsgi-bench-") as tmp:
        lua = os.path.join(tmp, "ids.lua")
        with open(lua, "w") as f:
            f.write(WRK_LUA)
        logdir = os.path.join(tmp, "logs")
        os.makedirs(logdir)

        def run(c: Candidate) -> Result:
            print(f"-> {c.label} ...", end=" ", flush=True)
            r = bench_one(c, args, lua, schemas, logdir)
            if r.status == "ok":
                print(f"{r.rps:.0f} req/s, p99 {fmt_ms(r.p99)} ms, other cpu {r.other_cpu:.0f}%, "
                      f"SIGTERM: {r.sigterm}", flush=True)
            else:
                print(r.status, flush=True)
            results.append(r)
            return r

        # SIGTERM -> KeyboardInterrupt, so every `finally` (server process-group kill) still runs
        signal.signal(signal.SIGTERM, lambda s, f: (_ for _ in ()).throw(KeyboardInterrupt()))
        try:
            for c in cands:
                run(c)
            if args.variants_on != "none":
                run_variants(args, results, run)
        except KeyboardInterrupt:
            print("\ninterrupted: partial results", flush=True)

    print_table(results)
    return 0


def run_variants(args, results: list[Result], run) -> None:
    """Re-run the best candidates with the other app variants (flask_bytes, raw_*, hybrid)."""
    ok = [r for r in results if r.status == "ok"]
    if args.variants_on == "auto":
        picks = []
        for mp, n in ((False, 3), (True, 1)):
            pool = sorted((r for r in ok if r.cand.multiproc == mp), key=lambda r: -r.rps)
            picks.extend(r.cand for r in pool[:n])
    else:
        names = [n.strip() for n in args.variants_on.split(",")]
        picks = [c for c in CANDIDATES if c.name in names]
    for base in picks:
        for v in VARIANTS[1:]:
            run(Candidate(base.name, base.server, base.opts, v, base.multiproc))


if __name__ == "__main__":
    sys.exit(main())
