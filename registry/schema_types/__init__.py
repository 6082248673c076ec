"""Schema types by name, as they appear in `schemaType`."""
from __future__ import annotations

from registry.schema_types.avro import AVRO
from registry.schema_types.base import InvalidSchema, ParsedSchema, SchemaType
from registry.schema_types.json_schema import JSON

SCHEMA_TYPES: dict[str, SchemaType] = {AVRO.name: AVRO, JSON.name: JSON}

__all__ = ["SCHEMA_TYPES", "InvalidSchema", "ParsedSchema", "SchemaType"]
