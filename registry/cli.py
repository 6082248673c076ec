"""`schema-registry serve` runs one registry node until SIGTERM or SIGINT; the other
commands (`subjects`, `get`, `register`, `check`, `export`, `import`, ... see
registry/admin) administer registries over their REST API."""
from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
from typing import TYPE_CHECKING

from registry.admin.arguments import add_admin_commands

if TYPE_CHECKING:
    from registry.settings import Settings

log = logging.getLogger("registry")

# The `server` extra (with `schema-types`). A client-only install (`pip install
# schema-registry-py`) lacks these, so the server's modules are imported only after
# `missing_server_modules` found them all.
SERVER_MODULES = ("flask", "werkzeug", "granian", "kazoo", "jproperties", "grpc_tools", "jsonschema", "re2")


def missing_server_modules() -> list[str]:
    """The modules of the `server` extra that are not installed."""
    return [name for name in SERVER_MODULES if importlib.util.find_spec(name) is None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="schema-registry", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the REST API")
    serve.add_argument("properties", nargs="?", help="a .properties file with Confluent's property names")
    serve.add_argument("-c", "--config", dest="config", help="the same, as an option")
    serve.add_argument("-D", "--property", action="append", default=[], metavar="KEY=VALUE",
                       help="override one property (after the file and the environment)")
    serve.add_argument("--log-level", default="INFO")
    add_admin_commands(commands)
    args = parser.parse_args(argv)
    if args.command != "serve":
        return run_admin(args)
    missing = missing_server_modules()
    if missing:
        print(f"schema-registry: serve needs the `server` extra, which is not installed (missing "
              f"{', '.join(missing)}): pip install 'schema-registry-py[server]'", file=sys.stderr)
        return 2
    from registry.settings import ConfigError, load_settings

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


def run_admin(args: argparse.Namespace) -> int:
    """An admin command; they need the `admin` extra (rich) beside the client."""
    if importlib.util.find_spec("rich") is None:
        print("schema-registry: the admin commands need the `admin` extra, which is not installed: "
              "pip install 'schema-registry-py[admin]'", file=sys.stderr)
        return 2
    # Loaded once rich is known to be there: a client-only install still parses and says why.
    from registry.admin.commands import run as run_command

    return run_command(args)


def run(settings: Settings) -> int:
    """Serve until a signal, then shut down cleanly. Returns the exit code."""
    from registry.http.server import run as serve

    return serve(settings)


if __name__ == "__main__":
    sys.exit(main())
