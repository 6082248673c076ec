"""`schema-registry serve`: run one registry node until SIGTERM or SIGINT."""
from __future__ import annotations

import argparse
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

from registry.settings import ConfigError, Settings, load_settings
from store.log import LogUnavailable

log = logging.getLogger("registry")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="schema-registry", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the REST API")
    serve.add_argument("properties", nargs="?", help="a .properties file with Confluent's property names")
    serve.add_argument("-c", "--config", dest="config", help="the same, as an option")
    serve.add_argument("-D", "--property", action="append", default=[], metavar="KEY=VALUE",
                       help="override one property (after the file and the environment)")
    serve.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)

    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        overrides = dict(item.split("=", 1) for item in args.property)
    except ValueError:
        parser.error("--property takes KEY=VALUE")
    try:
        settings = load_settings(args.config or args.properties, overrides=overrides)
    except ConfigError as exc:
        print(f"schema-registry: configuration error: {exc}", file=sys.stderr)
        return 2
    return run(settings)


def run(settings: Settings) -> int:
    """Serve until a signal, then shut down cleanly. Returns the exit code."""
    from registry.server import serve

    _, host, port = settings.listener
    log.info("serving on http://%s:%d", host, port)
    serve(lambda: build_app(settings), host, port)
    log.info("stopped")
    return 0


def build_app(settings: Settings) -> tuple[Any, Callable[[], None]]:
    """Build the node and its ASGI app (in the serving process); return the app and a closer."""
    from registry.api import create_app
    from registry.asgi import AsgiBridge
    from registry.node import build_node

    try:
        node = build_node(settings)
    except LogUnavailable as exc:  # LogMisconfigured too: a clear message, not a traceback
        log.error("cannot start: %s", exc)
        raise SystemExit(1) from None
    app = create_app(node.service, max_request_bytes=settings.max_request_bytes,
                     cluster_id=node.cluster_id, forwarder=node.forwarder,
                     elector=node.elector,
                     registry_group=settings.get("schema.registry.group.id"))

    def report_ready() -> None:
        while not node.service.wait_ready(60):
            log.info("still reading the schema log")
        log.info("ready: caught up with the schema log")

    threading.Thread(target=report_ready, name="readiness", daemon=True).start()
    bridge = AsgiBridge(app, app.extensions["registry.fast_path"], settings.server_threads,
                        settings.max_request_bytes)

    def close() -> None:
        bridge.close()
        node.close()

    return bridge, close


if __name__ == "__main__":
    sys.exit(main())
