"""Schema types by name, as they appear in `schemaType`."""
from __future__ import annotations

from registry.schema_types.avro import AVRO
from registry.schema_types.base import InvalidSchema, ParsedSchema, SchemaType
from registry.schema_types.json_schema import JSON
from registry.schema_types.protobuf import PROTOBUF

SCHEMA_TYPES: dict[str, SchemaType] = {AVRO.name: AVRO, JSON.name: JSON, PROTOBUF.name: PROTOBUF}

__all__ = ["SCHEMA_TYPES", "InvalidSchema", "ParsedSchema", "SchemaType"]
