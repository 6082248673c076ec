"""The admin commands' command line (argparse only: no optional dependency needed to build it).

`add_admin_commands(subparsers)` adds every command to `schema-registry`'s parser. Each
command takes the connection options: `--url` (several nodes comma-separated; default
$SR_URL or http://localhost:8081), `--conf KEY=VALUE` with confluent-kafka's client
configuration names, and shorthands for auth and TLS.
"""
from __future__ import annotations

import argparse
import os

ADMIN_COMMANDS = ("subjects", "versions", "get", "register", "check", "diff", "delete", "config", "mode",
                  "export", "import", "copy", "from-dataclass")


def _connection_options(prefix: str = "", what: str = "the registry") -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    dash = f"--{prefix}" if prefix else "--"
    dest = f"{prefix}_" if prefix else ""
    group = parent.add_argument_group(f"connection to {what}")
    if prefix:
        group.add_argument(f"{dash}", dest=f"{dest}url", required=True, metavar="URL",
                           help="registry URL (several nodes comma-separated)")
    else:
        group.add_argument("--url", default=os.environ.get("SR_URL", "http://localhost:8081"),
                           help="registry URL, several nodes comma-separated (default $SR_URL or "
                                "http://localhost:8081)")
    pre = f"{prefix}-" if prefix else ""
    group.add_argument(f"--{pre}conf", dest=f"{dest}conf", action="append", default=[], metavar="KEY=VALUE",
                       help="a confluent-kafka schema-registry client setting, e.g. basic.auth.user.info=u:p")
    group.add_argument(f"--{pre}user-info", dest=f"{dest}user_info",
                       default=None if prefix else os.environ.get("SR_BASIC_AUTH_USER_INFO"), metavar="USER:PASSWORD",
                       help="basic.auth.user.info" + ("" if prefix else " (default $SR_BASIC_AUTH_USER_INFO)"))
    group.add_argument(f"--{pre}bearer-token", dest=f"{dest}bearer_token",
                       default=None if prefix else os.environ.get("SR_BEARER_AUTH_TOKEN"), metavar="TOKEN",
                       help="bearer.auth.token (STATIC_TOKEN)" + ("" if prefix else " (default $SR_BEARER_AUTH_TOKEN)"))
    group.add_argument(f"--{pre}ca", dest=f"{dest}ca", metavar="FILE", help="ssl.ca.location")
    group.add_argument(f"--{pre}cert", dest=f"{dest}cert", metavar="FILE", help="ssl.certificate.location")
    group.add_argument(f"--{pre}key", dest=f"{dest}key", metavar="FILE", help="ssl.key.location")
    group.add_argument(f"--{pre}timeout", dest=f"{dest}timeout", type=float, metavar="SECONDS",
                       help="per HTTP request (default 10)")
    return parent


def _output_options() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--json", action="store_true", help="print JSON for scripts instead of tables")
    return parent


def _add_ref_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the schema: .avsc (Avro), .json (JSON Schema), .proto (Protobuf)")
    parser.add_argument("--type", dest="schema_type", choices=["AVRO", "JSON", "PROTOBUF"],
                        type=str.upper, help="the schema type, when the extension does not say")
    parser.add_argument("--ref", action="append", default=[], metavar="NAME=SUBJECT:VERSION",
                        help="a reference (repeatable); VERSION may be 'latest'")
    parser.add_argument("--no-discover", action="store_true",
                        help="do not add references for the file's imports (.proto) or external $refs (.json)")
    parser.add_argument("--normalize", action="store_true", help="normalize the schema first")


def add_admin_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    conn, out = _connection_options(), _output_options()
    common = [conn, out]

    p = commands.add_parser("subjects", parents=common, help="list subjects")
    p.add_argument("--prefix", default="", help="only subjects starting with this (a context: ':.ctx:')")
    p.add_argument("--deleted", action="store_true", help="include soft-deleted subjects")

    p = commands.add_parser("versions", parents=common, help="list a subject's versions")
    p.add_argument("subject")
    p.add_argument("--deleted", action="store_true", help="include soft-deleted versions")

    p = commands.add_parser("get", parents=common, help="a schema, by subject and version or by id")
    p.add_argument("subject", nargs="?", help="the subject (omit with --id)")
    p.add_argument("version", nargs="?", default="latest", help="a version number or 'latest' (default)")
    p.add_argument("--id", type=int, help="the schema id instead of a subject's version")
    p.add_argument("--format", help="the registry's format: 'resolved' (Avro), 'serialized' (Protobuf), ...")
    p.add_argument("--schema-only", action="store_true", help="print only the schema's text")
    p.add_argument("--deleted", action="store_true", help="also find a soft-deleted version")

    p = commands.add_parser("register", parents=common, help="register a schema from a file")
    p.add_argument("subject")
    _add_ref_options(p)

    p = commands.add_parser("check", parents=common,
                            help="check a schema file's compatibility (exit 0 compatible, 1 not, 2 error)")
    p.add_argument("subject")
    _add_ref_options(p)
    p.add_argument("--version", default=None,
                   help="check against this version only (default: every version the level needs)")

    p = commands.add_parser("diff", parents=common, help="the differences between two versions")
    p.add_argument("subject")
    p.add_argument("old", help="a version number or 'latest'")
    p.add_argument("new", nargs="?", default="latest", help="a version number or 'latest' (default)")
    p.add_argument("--to-subject", help="compare with a version of another subject")

    p = commands.add_parser("delete", parents=common, help="delete a subject or one version (soft, or --permanent)")
    p.add_argument("subject")
    p.add_argument("version", nargs="?", help="one version (default: the whole subject)")
    p.add_argument("--permanent", action="store_true", help="hard delete (soft-deletes first if needed)")

    for name, what in (("config", "compatibility level"), ("mode", "mode")):
        p = commands.add_parser(name, parents=common, help=f"get, set or delete the {what} (global or a subject's)")
        p.add_argument("subject", nargs="?", help="a subject (default: global)")
        action = p.add_mutually_exclusive_group()
        action.add_argument("--set", metavar="LEVEL" if name == "config" else "MODE",
                            type=str.upper, help=f"set the {what}")
        action.add_argument("--delete", action="store_true", help=f"delete the {what} (falls back to global)")
        if name == "mode":
            p.add_argument("--force", action="store_true", help="IMPORT even though schemas exist")

    p = commands.add_parser("export", parents=common,
                            help="export schemas, configs and modes to a directory or .tar.gz/.zip archive")
    p.add_argument("destination", help="a directory, or a file ending .tar.gz, .tgz or .zip")
    _add_selection_options(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = commands.add_parser("import", parents=common,
                            help="import an export in IMPORT mode, keeping ids and versions (a re-run "
                                 "finishes a failed or interrupted one)")
    p.add_argument("source", help="a directory or archive written by export")
    _add_import_options(p)

    p = commands.add_parser("copy", parents=[out, _connection_options("from", "the source"),
                                             _connection_options("to", "the target")],
                            help="copy schemas from one registry to another, keeping ids and versions")
    _add_selection_options(p)
    _add_import_options(p)

    p = commands.add_parser("from-dataclass", parents=common,
                            help="print (or register) the Avro or JSON Schema of a dataclass")
    p.add_argument("target", metavar="MODULE:CLASS", help="e.g. myapp.events:OrderPlaced")
    p.add_argument("--namespace", help="the Avro namespace (default: the module's name)")
    p.add_argument("--name", help="the record's name, or the JSON Schema's title (default: the class's)")
    p.add_argument("--format", dest="schema_format", default="avro", choices=["avro", "json"],
                   help="the schema language: avro (default) or json (JSON Schema; a pydantic model's own)")
    p.add_argument("--register", metavar="SUBJECT", help="register it under SUBJECT instead of printing")


def _add_selection_options(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--prefix", default="", help="only subjects starting with this")
    which.add_argument("--context", help="only this context's subjects (e.g. '.staging')")
    parser.add_argument("--no-deleted", action="store_true", help="leave soft-deleted versions out")
    parser.add_argument("--no-subject-settings", action="store_true",
                        help="leave subjects' own config and mode out (two requests a subject saved)")


def _add_import_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--force", action="store_true",
                        help="switch the target to IMPORT even though it has schemas (not needed when all it "
                             "has came from this export: a re-run)")
    parser.add_argument("--keep-import-mode", action="store_true",
                        help="leave the target in IMPORT mode afterwards (default: the export's global mode, "
                             "or the target's own where the export has none, as after a failure)")
    parser.add_argument("--workers", type=int, default=8, help="concurrent requests (default 8)")
    if "--no-progress" not in parser._option_string_actions:
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")
