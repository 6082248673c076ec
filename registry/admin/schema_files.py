"""Schemas read from files, with the references they name.

    loaded = load_schema(Path("orders.proto"), schema_type=None)
    loaded.schema_type, loaded.imports     # "PROTOBUF", ["common/money.proto"]

The type follows the extension (`.avsc` Avro, `.json` JSON Schema, `.proto` Protobuf)
unless given. A reference is given as `name=subject:version` (`version` may be
`latest`), or discovered: a Protobuf file's imports (except the well-known types the
registry knows itself) and a JSON Schema's `$ref`s to other documents. A discovered
reference names the subject of the same name (Confluent's default reference subject
strategy), at its latest version.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")
_BY_SUFFIX = {".avsc": "AVRO", ".json": "JSON", ".proto": "PROTOBUF"}
# An import line is all a reference needs: parsing the file with protoc would need the
# imported files at hand, which are what we are looking for.
_PROTO_IMPORT = re.compile(r'^\s*import\s+(?:public\s+|weak\s+)?"([^"]+)"\s*;', re.MULTILINE)
# Built into the registry's Protobuf support: never references.
_WELL_KNOWN_PREFIXES = ("google/protobuf/", "google/type/", "confluent/")


class SchemaFileError(ValueError):
    """The file cannot be read, or a reference option is malformed."""


@dataclass(frozen=True)
class Reference:
    """One reference as the registry takes it: the name the schema uses, and where it is."""

    name: str
    subject: str
    version: int | str  # "latest" until resolved

    def body(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class SchemaFile:
    """A schema read from `path`, and the names of the documents it imports."""

    path: Path
    text: str
    schema_type: str
    imports: list[str] = field(default_factory=list)


def schema_type_of(path: Path, given: str | None) -> str:
    if given is not None:
        wanted = given.upper()
        if wanted not in SCHEMA_TYPES:
            raise SchemaFileError(f"unknown schema type {given!r}: one of {', '.join(SCHEMA_TYPES)}")
        return wanted
    found = _BY_SUFFIX.get(path.suffix.lower())
    if found is None:
        raise SchemaFileError(f"cannot tell the schema type of {path.name} from its extension "
                              "(.avsc, .json, .proto): give --type")
    return found


def load_schema(path: Path, schema_type: str | None) -> SchemaFile:
    """Read `path`. Raises SchemaFileError if it is unreadable or (Avro, JSON) not JSON."""
    kind = schema_type_of(path, schema_type)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SchemaFileError(f"cannot read {path}: {exc}") from None
    if kind == "PROTOBUF":
        imports = [name for name in _PROTO_IMPORT.findall(text) if not name.startswith(_WELL_KNOWN_PREFIXES)]
        return SchemaFile(path, text, kind, list(dict.fromkeys(imports)))
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise SchemaFileError(f"{path.name} is not JSON: {exc}") from None
    imports = list(dict.fromkeys(_external_refs(parsed))) if kind == "JSON" else []
    return SchemaFile(path, text, kind, imports)


def _external_refs(document: Any) -> Iterator[str]:
    """`$ref` values naming another document (the part before `#`), each node seen once."""
    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                name = ref.split("#", 1)[0]
                if name:
                    yield name
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def parse_reference(option: str) -> Reference:
    """`name=subject:version` (version a number or `latest`; `name=subject` means latest).
    The subject is split at the last colon, so contexts (`:.ctx:subject:3`) work."""
    name, sep, where = option.partition("=")
    if not sep or not name or not where:
        raise SchemaFileError(f"--ref takes name=subject:version, not {option!r}")
    subject, colon, version = where.rpartition(":")
    if not colon or not subject or not (version.isdigit() or version == "latest"):
        subject, version = where, "latest"
    return Reference(name, subject, int(version) if version.isdigit() else "latest")
