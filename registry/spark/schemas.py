"""Registered Avro schemas in the form Spark's `from_avro`/`to_avro` take them.

spark-avro parses a schema with Avro Java's plain `Schema.Parser`, which knows nothing
of Schema Registry references. `RegisteredAvro.json` is therefore self-contained:
every named type a reference defines is written out in full where it is first used
(and by its full name after that), so one JSON document describes the whole schema.

`SchemaLookup` is the one way registry/spark reads the registry, through the client
side's shared lookup (`registry.client.lookup`, which serde uses too). It runs on the
driver only and asks for each schema id and referenced version once, never per row.
"""
from __future__ import annotations

import collections
import copy
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError

from registry.client import lookup as shared
from registry.client.lookup import Version
from registry.schema_types.avro import AVRO, AvroSchema
from registry.schema_types.base import InvalidSchema
from registry.serde import wire

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_NAMED = frozenset({"record", "error", "enum", "fixed"})


class SchemaNotAvro(ValueError):
    """The registry returned a schema that is not Avro (JSON Schema, Protobuf)."""


@dataclass(frozen=True)
class RegisteredAvro:
    """One Avro schema as the registry holds it, ready for spark-avro.

    `json` is self-contained (references inlined); `parsed` answers compatibility
    questions (`parsed.read_errors(writer.parsed)`).
    """

    schema_id: int
    json: str
    parsed: AvroSchema = field(compare=False, repr=False)
    subject: str | None = None
    version: int | None = None

    @property
    def is_record(self) -> bool:
        """True when the top-level type is a record (the usual Kafka value)."""
        top = json.loads(self.json)
        return isinstance(top, dict) and top.get("type") in ("record", "error")

    @property
    def is_raw_bytes(self) -> bool:
        """A top-level plain `bytes` schema. Confluent's serializers write such values
        raw, without Avro's length prefix, so the payload is the value itself."""
        return wire.is_raw_bytes(json.loads(self.json))

    @property
    def is_nullable(self) -> bool:
        """A top-level union with null, or null itself: a null datum is a valid value."""
        top = json.loads(self.json)
        if isinstance(top, list):
            return any(_type_name(branch) == "null" for branch in top)
        return _type_name(top) == "null"

    @property
    def never_null_field(self) -> str | None:
        """The first top-level field of this record whose Avro type has no null in it
        (a primitive but null, an array, map, enum, fixed or record), or None when there
        is none or this is not a record. spark-avro fills it in every record it decodes,
        so a null there means the record did not decode."""
        top = json.loads(self.json)
        if not (isinstance(top, dict) and top.get("type") in ("record", "error")):
            return None
        fields = [f for f in top.get("fields", ()) if isinstance(f, dict) and isinstance(f.get("name"), str)]
        # Spark resolves struct fields without regard to case by default: "Id" beside "id" is ambiguous.
        folded = collections.Counter(f["name"].lower() for f in fields)
        for f in fields:
            if folded[f["name"].lower()] == 1 and _never_null(f.get("type")):
                return str(f["name"])
        return None

    def with_field(self, name: str, avro_type: str, default: Any) -> str:
        """This record schema's JSON with one more field (a reader-only field: data
        written without it gets `default`). Raises ValueError for a non-record."""
        top = json.loads(self.json)
        if not (isinstance(top, dict) and top.get("type") in ("record", "error")):
            raise ValueError("only a record schema can take another field")
        if any(f.get("name") == name for f in top.get("fields", [])):
            raise ValueError(f"the schema already has a field named {name!r}")
        top["fields"] = [*top.get("fields", []), {"name": name, "type": avro_type, "default": default}]
        return json.dumps(top, separators=(",", ":"))


class SchemaLookup:
    """Reads Avro schemas from the registry through a client, each id once. Thread-safe.

    A thin Avro view over the client side's shared lookup (`registry.client.lookup`),
    which fetches each id and referenced version once; this keeps the parsed result per id.
    Every method blocks on the registry the first time it is asked about an id or a
    subject version and raises what the client raises (`SchemaRegistryError`, or
    `RegistryUnreachable`), plus `SchemaNotAvro` and `InvalidSchema`.
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self.schemas = shared.SchemaLookup(client)
        self._by_id: dict[int, RegisteredAvro] = {}
        self._lock = threading.Lock()

    def by_id(self, schema_id: int) -> RegisteredAvro:
        """The schema registered with `schema_id`."""
        found = self._by_id.get(schema_id)
        if found is None:
            found = self._parsed(schema_id, self.schemas.by_id(schema_id))
            with self._lock:
                self._by_id[schema_id] = found
        return found

    def by_id_if_known(self, schema_id: int) -> RegisteredAvro | None:
        """`by_id`, or None when the registry has no schema `schema_id` (HTTP 404)."""
        try:
            return self.by_id(schema_id)
        except SchemaRegistryError as exc:
            if exc.http_status_code == 404:
                return None
            raise

    def by_version(self, subject: str, version: Version = "latest") -> RegisteredAvro:
        """Version `version` (a number or "latest") of `subject`."""
        registered = self.schemas.by_version(subject, version)
        if registered.schema_id is None:
            raise SchemaRegistryError(500, SchemaRegistryError.UNKNOWN,
                                      f"the registry returned {subject} version {version} without an id")
        found = self.by_id(registered.schema_id)
        return RegisteredAvro(found.schema_id, found.json, found.parsed, subject, registered.version)

    def ids_of_subject(self, subject: str) -> list[int]:
        """Ids of every version of `subject`, soft-deleted ones included (records written
        with them may still sit in a topic), oldest first, without repeats."""
        ids: list[int] = []
        for version in self.client.get_versions(subject, deleted=True):
            registered = self.schemas.by_version(subject, version, deleted=True)
            if registered.schema_id is not None and registered.schema_id not in ids:
                ids.append(registered.schema_id)
        return ids

    def _parsed(self, schema_id: int, schema: Schema) -> RegisteredAvro:
        if (schema.schema_type or "AVRO") != "AVRO":
            raise SchemaNotAvro(f"schema id {schema_id} is {schema.schema_type}, not Avro")
        if schema.schema_str is None:
            raise InvalidSchema(f"the registry returned schema id {schema_id} without its text")
        try:
            references = [(ref.name, ref.schema.schema_str) for ref in self.schemas.referenced(schema)]
        except shared.BadReference as exc:
            raise InvalidSchema(str(exc)) from exc
        parsed = AVRO.parse(schema.schema_str, dict(references))
        text = self_contained(schema.schema_str, [text for _name, text in references])
        return RegisteredAvro(schema_id, text, parsed)


# --- references, inlined --------------------------------------------------------------


def _type_name(node: Any) -> str | None:
    if isinstance(node, str):
        return node
    if isinstance(node, dict) and isinstance(node.get("type"), str):
        return node["type"]
    return None


def _never_null(node: Any) -> bool:
    """A type no datum of which is null: anything but "null" and a union (unions are
    left out whole, null branch or not, as are names of no type spark-avro knows)."""
    if isinstance(node, dict):
        node = node.get("type")
        if isinstance(node, (dict, list)):
            return _never_null(node)
    return isinstance(node, str) and node != "null"


def _full_name(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _namespace_of(node: dict[str, Any], enclosing: str) -> str:
    # An explicit "" is the null namespace; only a missing key inherits the enclosing one.
    namespace = node.get("namespace")
    return enclosing if namespace is None else str(namespace)


def _named_definitions(node: Any, namespace: str, out: dict[str, Any]) -> None:
    """Collect every named type `node` defines, keyed by full name, each rewritten to
    carry its full name (and an explicit namespace) so that it means the same thing
    wherever it is pasted."""
    if isinstance(node, list):
        for branch in node:
            _named_definitions(branch, namespace, out)
    elif isinstance(node, dict):
        kind = node.get("type")
        if kind in _NAMED and isinstance(node.get("name"), str):
            full = _full_name(node["name"], _namespace_of(node, namespace))
            inner_ns = full.rpartition(".")[0]
            definition = dict(node, name=full)
            if "." not in full:
                definition["namespace"] = ""  # the null namespace, also inside a namespaced record
            else:
                definition.pop("namespace", None)
            out.setdefault(full, definition)
            for f in node.get("fields", ()) if kind in ("record", "error") else ():
                _named_definitions(f.get("type"), inner_ns, out)
        elif kind in ("array", "map"):
            _named_definitions(node.get("items" if kind == "array" else "values"), namespace, out)
        elif isinstance(kind, (dict, list)):
            _named_definitions(kind, namespace, out)


class _Inliner:
    def __init__(self, library: dict[str, Any]) -> None:
        self.library = library
        self.defined: set[str] = set()

    def node(self, node: Any, namespace: str) -> Any:
        if isinstance(node, str):
            return self.name(node, namespace)
        if isinstance(node, list):
            return [self.node(branch, namespace) for branch in node]
        if not isinstance(node, dict):
            return node
        kind = node.get("type")
        out = dict(node)
        if kind in _NAMED and isinstance(node.get("name"), str):
            full = _full_name(node["name"], _namespace_of(node, namespace))
            self.defined.add(full)
            if kind in ("record", "error"):
                inner_ns = full.rpartition(".")[0]
                out["fields"] = [dict(f, type=self.node(f.get("type"), inner_ns))
                                 for f in node.get("fields", ())]
        elif kind in ("array", "map"):
            key = "items" if kind == "array" else "values"
            out[key] = self.node(node.get(key), namespace)
        elif isinstance(kind, (dict, list)):
            out["type"] = self.node(kind, namespace)
        elif isinstance(kind, str) and kind not in _PRIMITIVES and kind not in _NAMED:
            out["type"] = self.name(kind, namespace)
        return out

    def name(self, name: str, namespace: str) -> Any:
        """A type named by `name`: the referenced definition the first time, the name after."""
        if name in _PRIMITIVES:
            return name
        for full in (_full_name(name, namespace), name):
            if full in self.defined:
                return full
            definition = self.library.get(full)
            if definition is not None:
                # Walked like any other definition: it may itself use referenced types.
                return self.node(copy.deepcopy(definition), full.rpartition(".")[0])
        return name  # not ours to resolve: Avro Java reports an unknown name itself


def self_contained(schema_str: str, referenced: list[str]) -> str:
    """`schema_str` as one JSON document, the named types of `referenced` (schema texts)
    written out in full at their first use. Without references, returns the text as is."""
    if not referenced:
        return schema_str
    library: dict[str, Any] = {}
    for text in referenced:
        _named_definitions(json.loads(text), "", library)
    return json.dumps(_Inliner(library).node(json.loads(schema_str), ""), separators=(",", ":"))
