"""`schema-registry serve`: run one registry node until SIGTERM or SIGINT."""
from __future__ import annotations

import argparse
import logging
import sys

from registry.settings import ConfigError, load_settings

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


def run(settings) -> int:
    """Build the node, serve until a signal, then shut down cleanly. Returns the exit code."""
    from registry.api import create_app
    from registry.node import build_node
    from registry.server import serve

    try:
        node = build_node(settings)
    except Exception as exc:  # a store that cannot be opened: say so, no traceback wall
        log.error("cannot start: %s", exc)
        return 1
    try:
        app = create_app(node.service, max_request_bytes=settings.max_request_bytes,
                         registry_group=settings.get("schema.registry.group.id"))
        _, host, port = settings.listener
        serve(app, host, port, threads=settings.server_threads,
              on_started=lambda: _report_ready(node.service))
    finally:
        node.close()
    log.info("stopped")
    return 0


def _report_ready(service) -> None:
    import threading

    def wait() -> None:
        while not service.wait_ready(60):
            log.info("still reading the schema log")
        log.info("ready: caught up with the schema log")

    threading.Thread(target=wait, name="readiness", daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
