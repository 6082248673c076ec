"""Each admin command: its requests to the public REST API and what it prints.

`run(args)` runs the command `args` names (built by `arguments`) and returns the exit
code: 0 done (and, for `check`, compatible), 1 `check` found the schema incompatible,
2 an error, printed as one line with Confluent's error code. Every command blocks on
its HTTP requests, each bounded by the client's timeout and retries.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from registry.admin import migration
from registry.admin.connection import ConnectionOptionError, client_conf, transport_for
from registry.admin.output import EXIT_ERROR, EXIT_FAILED_CHECK, EXIT_OK, Output, describe_error
from registry.admin.schema_diff import schema_diff, version_label
from registry.admin.schema_files import Reference, SchemaFile, SchemaFileError, load_schema, parse_reference
from registry.client import SchemaRegistryError
from registry.client.transport import RegistryUnreachable, Transport
from registry.serde.dataclass_json_schema import json_schema_of
from registry.serde.dataclass_schema import avro_schema_json

# Confluent's codes for "already soft-deleted", which a --permanent delete steps over.
_SUBJECT_SOFT_DELETED, _VERSION_SOFT_DELETED = 40404, 40406
_SUBJECT_NOT_FOUND = 40401


class CommandError(Exception):
    """A command cannot go on for a reason that is not the registry's answer."""


def q(subject: str) -> str:
    """A subject as one path segment."""
    return quote(subject, safe="")


def connect(args: argparse.Namespace, prefix: str = "") -> Transport:
    """The transport to the registry the options with `prefix` (`from_`, `to_`) name."""
    def option(name: str) -> Any:
        return vars(args).get(prefix + name)
    conf = client_conf(option("url"), option("conf") or [], user_info=option("user_info"),
                       bearer_token=option("bearer_token"), ca=option("ca"), cert=option("cert"),
                       key=option("key"), timeout=option("timeout"))
    return transport_for(conf)


def run(args: argparse.Namespace) -> int:
    out = Output(as_json=args.json)
    try:
        return HANDLERS[args.command](args, out)
    except (SchemaRegistryError, RegistryUnreachable, ConnectionOptionError, SchemaFileError,
            CommandError, migration.MigrationError) as exc:
        if args.json:
            # Only the registry's answers carry a Confluent code; other errors carry null.
            code = exc.error_code if isinstance(exc, SchemaRegistryError) else None
            message = exc.error_message if isinstance(exc, SchemaRegistryError) else str(exc)
            sys.stderr.write(orjson.dumps({"error_code": code, "message": message}).decode() + "\n")
            return EXIT_ERROR
        return out.error(describe_error(exc))
    except KeyboardInterrupt:
        return out.error("interrupted")


# ---- reading ------------------------------------------------------------------------

def subjects(args: argparse.Namespace, out: Output) -> int:
    found = connect(args).request("GET", "/subjects", query={"subjectPrefix": args.prefix,
                                                             "deleted": _flag(args.deleted)})
    out.table(["subject"], ([s] for s in found), data=found)
    return EXIT_OK


def versions(args: argparse.Namespace, out: Output) -> int:
    found = connect(args).request("GET", f"/subjects/{q(args.subject)}/versions",
                                  query={"deleted": _flag(args.deleted)})
    out.table(["version"], ([v] for v in found), data=found)
    return EXIT_OK


def get(args: argparse.Namespace, out: Output) -> int:
    transport = connect(args)
    query = {"format": args.format} if args.format else {}
    if args.id is not None:
        if args.subject is not None:
            query["subject"] = args.subject
        body = transport.request("GET", f"/schemas/ids/{args.id}", query=query)
        body = {"id": args.id, **body}
    elif args.subject is not None:
        if args.deleted:
            query["deleted"] = "true"
        body = transport.request("GET", f"/subjects/{q(args.subject)}/versions/{q(args.version)}", query=query)
    else:
        raise CommandError("get needs a subject (and version) or --id")
    if args.schema_only:
        if args.json:
            out.json(body.get("schema"))
        else:
            sys.stdout.write(str(body.get("schema", "")) + "\n")
        return EXIT_OK
    if args.json:
        out.json(body)
        return EXIT_OK
    schema_type = body.get("schemaType", "AVRO")
    rows = [(name, body[key]) for name, key in (("subject", "subject"), ("version", "version"), ("id", "id"),
                                                 ("guid", "guid")) if key in body]
    rows.append(("type", schema_type))
    for ref in body.get("references") or []:
        rows.append(("reference", f"{ref['name']} = {ref['subject']}:{ref['version']}"))
    if body.get("deleted"):
        rows.append(("deleted", "yes (soft)"))
    out.table(["field", "value"], rows, data=body)
    out.schema(body["schema"], schema_type)
    return EXIT_OK


def diff(args: argparse.Namespace, out: Output) -> int:
    transport = connect(args)
    old = transport.request("GET", f"/subjects/{q(args.subject)}/versions/{q(args.old)}")
    new = transport.request("GET", f"/subjects/{q(args.to_subject or args.subject)}/versions/{q(args.new)}")
    lines = schema_diff(old, new)
    if args.json:
        out.json({"old": _identity(old), "new": _identity(new), "identical": not lines, "diff": lines})
        return EXIT_OK
    if not lines:
        out.text(f"{version_label(old)} and {version_label(new)}: no differences")
        return EXIT_OK
    for line in lines:
        style = ("bold" if line.startswith(("---", "+++")) else "green" if line.startswith("+")
                 else "red" if line.startswith("-") else "cyan" if line.startswith("@@") else None)
        out.console.print(line, style=style, markup=False)
    return EXIT_OK


def _identity(body: dict[str, Any]) -> dict[str, Any]:
    return {k: body.get(k) for k in ("subject", "version", "id")}


# ---- writing ------------------------------------------------------------------------

def register(args: argparse.Namespace, out: Output) -> int:
    transport = connect(args)
    schema = load_schema(Path(args.file), args.schema_type)
    registered = _register_file(transport, args.subject, schema, [parse_reference(r) for r in args.ref],
                                discover=not args.no_discover, normalize=args.normalize, seen=set())
    out.table(["subject", "version", "id"], [[args.subject, registered.get("version"), registered.get("id")]],
              data={"subject": args.subject, **registered})
    return EXIT_OK


def _register_file(transport: Transport, subject: str, schema: SchemaFile, given: list[Reference], *,
                   discover: bool, normalize: bool, seen: set[Path]) -> dict[str, Any]:
    """Register `schema` under `subject`, first registering what it imports that the
    registry lacks and that sits beside it as a file (each file once: `seen`)."""
    seen.add(schema.path.resolve())
    refs = _references(transport, schema, given, discover, seen, normalize)
    return transport.request("POST", f"/subjects/{q(subject)}/versions", query={"normalize": _flag(normalize)},
                             body=_schema_body(schema, refs))


def _references(transport: Transport, schema: SchemaFile, given: list[Reference], discover: bool,
                seen: set[Path] | None, normalize: bool = False) -> list[Reference]:
    """The given references, then one per import not given, each at a version number.
    With `seen` (registering), an import whose subject does not exist is registered from
    the file it names, relative to `schema`'s directory; without, it is an error."""
    refs = list(given)
    if discover:
        named = {r.name for r in refs}
        refs += [Reference(name, name, "latest") for name in schema.imports if name not in named]
    resolved = []
    for ref in refs:
        version = ref.version
        if version == "latest":
            try:
                version = transport.request("GET", f"/subjects/{q(ref.subject)}/versions/latest")["version"]
            except SchemaRegistryError as exc:
                beside = schema.path.parent / ref.name
                if exc.error_code != _SUBJECT_NOT_FOUND or seen is None or not beside.is_file():
                    raise
                if beside.resolve() in seen:
                    raise CommandError(f"{ref.name} imports itself through {schema.path.name}") from None
                imported = load_schema(beside, schema.schema_type)
                version = _register_file(transport, ref.subject, imported, [], discover=True,
                                         normalize=normalize, seen=seen)["version"]
        resolved.append(Reference(ref.name, ref.subject, version))
    return resolved


def _schema_body(schema: SchemaFile, refs: list[Reference]) -> dict[str, Any]:
    body: dict[str, Any] = {"schema": schema.text}
    if schema.schema_type != "AVRO":
        body["schemaType"] = schema.schema_type
    if refs:
        body["references"] = [r.body() for r in refs]
    return body


def check(args: argparse.Namespace, out: Output) -> int:
    transport = connect(args)
    schema = load_schema(Path(args.file), args.schema_type)
    refs = _references(transport, schema, [parse_reference(r) for r in args.ref], not args.no_discover, None)
    path = f"/compatibility/subjects/{q(args.subject)}/versions"
    if args.version is not None:
        path += f"/{q(args.version)}"
    body = _schema_body(schema, refs)
    # Asked first without `verbose`: with it, Confluent's CompatibilityResource (and ours)
    # answers a schema it refuses (422: an unresolved reference, a syntax error) as
    # "incompatible", which would fail a pipeline for the wrong reason with exit 1.
    # Refused, the request raises here and the command exits 2, as for any error.
    answer = transport.request("POST", path, query={"normalize": _flag(args.normalize)}, body=body)
    compatible = answer.get("is_compatible") if isinstance(answer, dict) else None
    if not isinstance(compatible, bool):
        raise CommandError(f"the registry answered the compatibility check without a verdict: {answer!r}")
    messages: list[str] = []
    if not compatible:
        # The reasons, asked for only when there are some (one request when compatible).
        reasons = transport.request("POST", path, query={"verbose": "true", "normalize": _flag(args.normalize)},
                                    body=body)
        messages = [str(m) for m in reasons.get("messages") or []]
    against = f"version {args.version}" if args.version is not None else "the versions its level checks"
    if args.json:
        out.json({"subject": args.subject, "is_compatible": compatible, "messages": messages})
    elif compatible:
        out.text(f"compatible: {schema.path.name} with {args.subject} ({against})")
    else:
        out.text(f"incompatible: {schema.path.name} with {args.subject} ({against}):")
        for message in messages:
            out.text(f"  - {message}")
    return EXIT_OK if compatible else EXIT_FAILED_CHECK


def delete(args: argparse.Namespace, out: Output) -> int:
    transport = connect(args)
    path = f"/subjects/{q(args.subject)}" + (f"/versions/{q(args.version)}" if args.version else "")
    already = _VERSION_SOFT_DELETED if args.version else _SUBJECT_SOFT_DELETED
    try:
        deleted = transport.request("DELETE", path)
    except SchemaRegistryError as exc:
        # Hard deletes need a soft delete first: one done before is fine.
        if not (args.permanent and exc.error_code == already):
            raise
        deleted = None
    if args.permanent:
        deleted = transport.request("DELETE", path, query={"permanent": "true"})
    kind = "permanently" if args.permanent else "soft"
    what = f"version {args.version} of {args.subject}" if args.version else f"subject {args.subject}"
    versions_text = ", ".join(str(v) for v in deleted) if isinstance(deleted, list) else str(deleted)
    out.text(f"deleted ({kind}) {what}: version(s) {versions_text}",
             data={"subject": args.subject, "permanent": args.permanent, "deleted": deleted})
    return EXIT_OK


def config(args: argparse.Namespace, out: Output) -> int:
    return _setting(args, out, "config", "compatibility", "compatibilityLevel")


def mode(args: argparse.Namespace, out: Output) -> int:
    return _setting(args, out, "mode", "mode", "mode")


def _setting(args: argparse.Namespace, out: Output, resource: str, put_key: str, get_key: str) -> int:
    transport = connect(args)
    path = f"/{resource}" + (f"/{q(args.subject)}" if args.subject else "")
    scope = f"subject {args.subject}" if args.subject else "global"
    if args.set is not None:
        query = {"force": "true"} if getattr(args, "force", False) else None
        answer = transport.request("PUT", path, query=query, body={put_key: args.set})
        out.text(f"{resource} ({scope}) set to {answer.get(put_key, args.set)}", data=answer)
    elif args.delete:
        answer = transport.request("DELETE", path)
        out.text(f"{resource} ({scope}) deleted (was {answer.get(get_key, answer.get(put_key))})", data=answer)
    else:
        query = {"defaultToGlobal": "true"} if args.subject else None
        answer = transport.request("GET", path, query=query)
        out.table(["setting", "value"], ((k, _cell(v)) for k, v in answer.items()), data=answer)
    return EXIT_OK


def _cell(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def from_dataclass(args: argparse.Namespace, out: Output) -> int:
    module_name, colon, class_name = args.target.partition(":")
    if not colon or not module_name or not class_name:
        raise CommandError(f"give the dataclass as module:Class, not {args.target!r}")
    # The caller's own modules, found from the current directory as `python -m` finds them.
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CommandError(f"cannot import {module_name}: {exc}") from None
    cls = vars(module).get(class_name)
    pydantic_model = args.schema_format == "json" and callable(getattr(cls, "model_json_schema", None))
    if not (isinstance(cls, type) and (dataclasses.is_dataclass(cls) or pydantic_model)):
        raise CommandError(f"{args.target} is not a dataclass" + (" or a pydantic model" if
                                                                   args.schema_format == "json" else ""))
    schema_type = "JSON" if args.schema_format == "json" else "AVRO"
    try:
        if schema_type == "JSON":
            text = orjson.dumps(json_schema_of(cls, args.name)).decode()
        else:
            text = avro_schema_json(cls, namespace=args.namespace or module_name, name=args.name)
    except (TypeError, ValueError) as exc:
        raise CommandError(f"no {'JSON' if schema_type == 'JSON' else 'Avro'} schema for {args.target}: {exc}") \
            from None
    if args.register is None:
        if args.json:
            out.json(orjson.loads(text))
        else:
            out.schema(text, schema_type)
        return EXIT_OK
    body = {"schema": text} if schema_type == "AVRO" else {"schema": text, "schemaType": schema_type}
    registered = connect(args).request("POST", f"/subjects/{q(args.register)}/versions", body=body)
    out.table(["subject", "version", "id"], [[args.register, registered.get("version"), registered.get("id")]],
              data={"subject": args.register, **registered})
    return EXIT_OK


def _flag(value: bool) -> str:
    return "true" if value else "false"


HANDLERS: dict[str, Callable[[argparse.Namespace, Output], int]] = {
    "subjects": subjects, "versions": versions, "get": get, "register": register, "check": check,
    "diff": diff, "delete": delete, "config": config, "mode": mode,
    "export": lambda args, out: migration.export_command(args, out, connect(args)),
    "import": lambda args, out: migration.import_command(args, out, connect(args)),
    "copy": lambda args, out: migration.copy_command(args, out, connect(args, "from_"), connect(args, "to_")),
    "from-dataclass": from_dataclass,
}
