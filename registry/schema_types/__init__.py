"""Schema types by name, as they appear in `schemaType`.

`SCHEMA_TYPES` imports a type's module the first time the type is asked for, not when
the registry starts: JSON Schema (jsonschema, referencing) and Protobuf take a third
of a second to import, a start-up that serves reads and Avro never needs them, and
a node is ready only once it has replayed the log, so every import before then
delays it (bench/cold_start.py). `SCHEMA_TYPES.load_all()` imports the rest ahead of
their first use; the server calls it once the node is ready.
"""
from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator, Mapping

from registry.schema_types.base import CheckTooCostly, InvalidSchema, ParsedSchema, SchemaType


class SchemaTypes(Mapping[str, SchemaType]):
    """Name -> SchemaType, each imported from `module`.`attribute` on first access.
    Thread-safe; an import error surfaces (ImportError) where the type is first used."""

    def __init__(self, where: Mapping[str, tuple[str, str]]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, SchemaType] = {}
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> SchemaType:
        loaded = self._loaded.get(name)
        if loaded is not None:
            return loaded
        module, attribute = self._where[name]  # KeyError for an unknown type, as a dict
        with self._lock:
            loaded = self._loaded.get(name)
            if loaded is None:
                loaded = self._loaded[name] = getattr(importlib.import_module(module), attribute)
        return loaded

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def load_all(self) -> None:
        """Import every type now. Blocks for the imports."""
        for name in self._where:
            self[name]


SCHEMA_TYPES = SchemaTypes({
    "AVRO": ("registry.schema_types.avro", "AVRO"),
    "JSON": ("registry.schema_types.json_schema", "JSON"),
    "PROTOBUF": ("registry.schema_types.protobuf", "PROTOBUF"),
})

__all__ = ["SCHEMA_TYPES", "CheckTooCostly", "InvalidSchema", "ParsedSchema", "SchemaType", "SchemaTypes"]
