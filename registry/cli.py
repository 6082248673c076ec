"""`schema-registry serve` runs one registry node until SIGTERM or SIGINT;
`schema-registry hash-password` prints a users-file line for HTTP Basic and
`schema-registry openapi` the API description (as /openapi.json serves it). The other
commands (`subjects`, `get`, `register`, `check`, `export`, `import`, ... see
registry/admin) administer registries over their REST API."""
from __future__ import annotations

import argparse
import getpass
import importlib.util
import json
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
SERVER_MODULES = ("flask", "werkzeug", "granian", "httptools", "uvloop", "kazoo", "jproperties", "grpc_tools",
                  "jsonschema", "re2")


# The commands that run server code; every other one is an admin command (registry/admin).
_SERVER_COMMANDS = frozenset({"serve", "hash-password", "openapi"})


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
    hashing = commands.add_parser(
        "hash-password", help="print a users-file line (authentication.users.file) with a salted argon2id hash",
        description="The password is read from standard input when it is not a terminal, else asked for twice.")
    hashing.add_argument("user", help="the user name")
    hashing.add_argument("--roles", default="", help="comma-separated roles (Group:<role> in authorization rules)")
    hashing.add_argument("--time-cost", type=int, default=None, help="argon2 passes (default 2)")
    hashing.add_argument("--memory-kib", type=int, default=None, help="argon2 memory in KiB (default 19456)")
    commands.add_parser("openapi", help="print the API description (docs/openapi.json)")
    add_admin_commands(commands)
    args = parser.parse_args(argv)
    if args.command not in _SERVER_COMMANDS:
        return run_admin(args)
    missing = missing_server_modules()
    if missing:
        print(f"schema-registry: {args.command} needs the `server` extra, which is not installed (missing "
              f"{', '.join(missing)}): pip install 'schema-registry-py[server]'", file=sys.stderr)
        return 2
    if args.command == "hash-password":
        return _hash_password(args)
    if args.command == "openapi":
        from registry.http.app import route_map
        from registry.http.openapi import describe

        print(json.dumps(describe(route_map()), indent=2, sort_keys=True))
        return 0
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


def _hash_password(args: argparse.Namespace) -> int:
    from registry.http.security import passwords

    if sys.stdin.isatty():
        password = getpass.getpass(f"password for {args.user}: ")
        if getpass.getpass("again: ") != password:
            print("schema-registry: the two passwords differ", file=sys.stderr)
            return 2
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        print("schema-registry: empty password", file=sys.stderr)
        return 2
    cost = {k: v for k, v in (("time_cost", args.time_cost), ("memory_kib", args.memory_kib)) if v is not None}
    roles = [r.strip() for r in args.roles.split(",") if r.strip()]
    print(passwords.users_file_line(args.user, password, roles, **cost))
    return 0


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
