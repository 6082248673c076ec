"""The command line: ``python3 -m infra fetch|up|down|status`` (wired to make targets).

    python3 -m infra fetch    # mvn -> .infra/jars/{kafka,zookeeper,spark} (make infra-fetch)
    python3 -m infra up       # start both under .infra/run/          (make infra-up)
    python3 -m infra down     # stop both, keep logs and data          (make infra-down)
    python3 -m infra status   # exit 0 only if both are up and healthy
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time

from infra.cds import build_cds
from infra.errors import InfraError
from infra.fetch import fetch, jars_ready
from infra.paths import JARS_DIR, RUN_DIR
from infra.servers import JavaServer, KafkaServer, ZooKeeperServer, start_all


def _cli_servers() -> tuple[ZooKeeperServer, KafkaServer]:
    zk = ZooKeeperServer(RUN_DIR, die_with_parent=False)
    kf = KafkaServer(RUN_DIR, die_with_parent=False)
    zk.load_state()
    kf.load_state()
    return zk, kf


def _write_endpoints(zk: ZooKeeperServer, kf: KafkaServer) -> str:
    text = f"KAFKA_BOOTSTRAP={kf.bootstrap}\nZOOKEEPER_CONNECT={zk.connect}\n"
    (RUN_DIR / "endpoints.env").write_text(text)
    return text


def cmd_fetch(args: argparse.Namespace) -> int:
    fetch(quiet=not args.verbose)
    build_cds(quiet=not args.verbose)
    if args.verbose:
        print(f"jars ready in {JARS_DIR}")
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    if not jars_ready():
        print(f"jars missing or stale in {JARS_DIR}: run `make infra-fetch` first", file=sys.stderr)
        return 2
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    zk, kf = _cli_servers()
    if args.fresh:
        for server in (zk, kf):
            server.stop()
            shutil.rmtree(server.home, ignore_errors=True)
            server.state_path.unlink(missing_ok=True)
        zk, kf = _cli_servers()
    todo: list[JavaServer] = []
    for server in (zk, kf):
        if server.is_running():
            if server.probe(timeout=5.0):
                continue
            # Alive but not answering: a wedged leftover; replace it.
            server.stop(timeout=15)
        todo.append(server)
    started = time.monotonic()
    start_all(todo)
    if todo:
        names = ", ".join(s.name for s in todo)
        print(f"started {names} in {time.monotonic() - started:.1f}s (logs: {RUN_DIR}/*.log)",
              file=sys.stderr)
    print(_write_endpoints(zk, kf), end="")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    zk, kf = _cli_servers()
    for server in (kf, zk):
        was_running = server.is_running()
        server.stop(timeout=args.timeout)
        print(f"{server.name}: {'stopped' if was_running else 'not running'}")
    (RUN_DIR / "endpoints.env").unlink(missing_ok=True)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    zk, kf = _cli_servers()
    ok = True
    for server in (zk, kf):
        if not server.is_running():
            print(f"{server.name}: down")
            ok = False
        elif server.probe():
            print(f"{server.name}: up {server.endpoint} (pid {server.pid})")
        else:
            print(f"{server.name}: running but not answering {server.endpoint} (pid {server.pid})")
            ok = False
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m infra",
        description="Local Kafka (KRaft) and ZooKeeper from Maven Central jars, on 127.0.0.1.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "fetch", help="download the servers' and Spark's connector jars with mvn into .infra/jars"
    )
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(func=cmd_fetch)
    p = sub.add_parser("up", help="start ZooKeeper and Kafka under .infra/run")
    p.add_argument("--fresh", action="store_true", help="wipe their data first")
    p.set_defaults(func=cmd_up)
    p = sub.add_parser("down", help="stop them (logs and data are kept)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds before SIGKILL")
    p.set_defaults(func=cmd_down)
    p = sub.add_parser("status", help="exit 0 if both are up")
    p.set_defaults(func=cmd_status)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InfraError as e:
        print(f"infra: {e}", file=sys.stderr)
        return 1
