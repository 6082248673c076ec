"""Schema resolution done by Catalyst instead of Avro, where the two give the same rows.

spark-avro resolves a writer schema into the reader's with Avro Java's resolving
decoder, which costs about a fifth more per row than decoding with the writer schema
alone (bench/spark_decode.py: 1.12 against 0.92 s per million rows, projection
included). For the usual evolution (fields added with a default, fields removed,
`int` widened to `long`) the same rows come from decoding with the writer schema and
then projecting the struct into the reader's shape: copy a field, widen a number,
or fill a missing field with its default.

`plan(writer, reader)` says how, for a writer and reader record, or None where the
shortcut might differ from Avro's answer in any way; those writers keep Avro's
resolution. It is deliberately narrow:
- both are records of the same full name, without aliases on the reader's side (an
  alias may name a writer field differently);
- a field both have is of the same type in both, written the same way, and that type
  names no record, enum or fixed (a named type's definition could differ elsewhere in
  the schema), or it is a primitive widened as Avro allows between numbers
  (int to long, float or double; long to float or double; float to double), which a
  Spark cast does exactly as Java does;
- a field only the reader has has a default of a primitive type without a logical type,
  or null for a union of null and one such primitive.
Pure logic, no Spark: registry/spark/decode.py builds the Catalyst side.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
# Avro's numeric promotions, each with the Spark type that reads the widened value.
_WIDENINGS = {("int", "long"): "bigint", ("int", "float"): "float", ("int", "double"): "double",
              ("long", "float"): "float", ("long", "double"): "double", ("float", "double"): "double"}
# Spark's type for a default of each primitive (as the reader's from_avro types the field).
_SPARK_TYPES = {"boolean": "boolean", "int": "int", "long": "bigint", "float": "float",
                "double": "double", "string": "string"}


@dataclass(frozen=True)
class Copy:
    """The writer's field, as it is."""

    name: str


@dataclass(frozen=True)
class Widen:
    """The writer's field, cast to a wider Spark number type."""

    name: str
    spark_type: str


@dataclass(frozen=True)
class Default:
    """A field the writer lacks: the reader's default, typed as Spark types the field."""

    name: str
    value: Any
    spark_type: str


Step = Copy | Widen | Default


def same_schema(writer_json: str, reader_json: str) -> bool:
    """True when the two texts are the same schema as JSON (key order aside): decoding
    with the writer's schema alone gives the reader's rows."""
    try:
        return bool(json.loads(writer_json) == json.loads(reader_json))
    except ValueError:
        return False


def plan(writer_json: str, reader_json: str) -> list[Step] | None:
    """The reader's fields in order, each taken from a writer record or defaulted; None
    where this shortcut is not certain to give what Avro's resolution gives."""
    try:
        writer, reader = json.loads(writer_json), json.loads(reader_json)
    except ValueError:
        return None
    if not (_is_record(writer) and _is_record(reader)) or "aliases" in reader:
        return None
    if _full_name(writer) != _full_name(reader):
        return None
    writer_fields = _fields(writer)
    reader_fields = _fields(reader)
    if writer_fields is None or reader_fields is None:
        return None
    steps: list[Step] = []
    for field in reader_fields.values():
        name, reader_type = field["name"], field.get("type")
        if "aliases" in field:
            return None
        if name in writer_fields:
            writer_type = writer_fields[name].get("type")
            if writer_type == reader_type and _unnamed(reader_type):
                steps.append(Copy(name))
                continue
            widened = _WIDENINGS.get((_bare_primitive(writer_type), _bare_primitive(reader_type)))
            if widened is None:
                return None
            steps.append(Widen(name, widened))
            continue
        if "default" not in field:
            return None
        default = _default(reader_type, field["default"])
        if default is None:
            return None
        steps.append(Default(name, *default))
    return steps


def _is_record(node: Any) -> bool:
    return isinstance(node, dict) and node.get("type") == "record"


def _full_name(record: dict[str, Any]) -> str | None:
    name, namespace = record.get("name"), record.get("namespace")
    if not isinstance(name, str):
        return None
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}" if isinstance(namespace, str) else None


def _fields(record: dict[str, Any]) -> dict[str, dict[str, Any]] | None:
    """Fields by name, in order; None if malformed or if two names fold to one (Spark
    resolves struct fields without regard to case)."""
    fields = record.get("fields")
    if not isinstance(fields, list):
        return None
    out: dict[str, dict[str, Any]] = {}
    folded: set[str] = set()
    for field in fields:
        if not isinstance(field, dict) or not isinstance(field.get("name"), str):
            return None
        if field["name"].lower() in folded:
            return None
        folded.add(field["name"].lower())
        out[field["name"]] = field
    return out


def _unnamed(node: Any) -> bool:
    """A type that names no record, enum or fixed, defined here or elsewhere."""
    if isinstance(node, str):
        return node in _PRIMITIVES
    if isinstance(node, list):
        return all(_unnamed(branch) for branch in node)
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "array":
            return _unnamed(node.get("items"))
        if kind == "map":
            return _unnamed(node.get("values"))
        return isinstance(kind, str) and kind in _PRIMITIVES
    return False


def _bare_primitive(node: Any) -> str | None:
    """The primitive `node` is, written bare or as {"type": ...} with nothing else."""
    if isinstance(node, dict) and set(node) == {"type"}:
        node = node["type"]
    return node if isinstance(node, str) and node in _PRIMITIVES else None


def _default(node: Any, value: Any) -> tuple[Any, str] | None:
    """(value, Spark type) for a default of type `node`, or None where not supported."""
    if isinstance(node, list):
        # A union's default is of its first branch; only null before one primitive here.
        if len(node) != 2 or node[0] != "null" or value is not None:
            return None
        other = _bare_primitive(node[1])
        return (None, _SPARK_TYPES[other]) if other in _SPARK_TYPES else None
    kind = _bare_primitive(node)
    if kind is None or kind not in _SPARK_TYPES:
        return None
    if kind == "boolean":
        return (value, "boolean") if isinstance(value, bool) else None
    if kind == "string":
        return (value, "string") if isinstance(value, str) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if kind in ("int", "long"):
        limit = 2**31 if kind == "int" else 2**63
        return (value, _SPARK_TYPES[kind]) if isinstance(value, int) and -limit <= value < limit else None
    return (float(value), _SPARK_TYPES[kind]) if math.isfinite(value) else None
