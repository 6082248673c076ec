"""The one schema lookup of the client side: by id, by subject version, and references.

    schemas = SchemaLookup(client)                     # ours or confluent-kafka's client
    schema = schemas.by_id(5)                          # a confluent-kafka Schema
    for ref in schemas.referenced(schema):             # each one before the schemas using it
        named_types.add(ref.name, ref.schema.schema_str)

The serializers (`registry.serde`) and Spark decoding (`registry.spark`) read the
registry only through this, each in its own terms: serde parses for fastavro, spark
inlines references for spark-avro. An id never names other content, and a numbered
version of a subject does not change, so both are fetched once and kept (up to
`capacity` of each, least recently used evicted); concurrent misses on one key make
one request between them. "latest" is the client's to cache (``cache.latest.ttl.sec``).
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from cachetools import LRUCache, cachedmethod
from confluent_kafka.schema_registry import RegisteredSchema, Schema, SchemaReference

Version = int | Literal["latest"]


class BadReference(ValueError):
    """A reference that names no subject or version, or a referenced schema without text."""


@dataclass(frozen=True)
class Referenced:
    """One schema another references: the name the reference gives it, and what it names."""

    name: str
    subject: str
    version: int
    schema: Schema


class SchemaLookup:
    """Schemas from the registry through `client`, each fetched once. Thread-safe.

    `client` is anything with confluent-kafka's `get_schema`, `get_version` and
    `get_latest_version`. Each method blocks on the registry the first time it is asked
    about an id or a subject version, and raises what the client raises
    (`SchemaRegistryError`, `RegistryUnreachable`).
    """

    def __init__(self, client: Any, capacity: int = 1000) -> None:
        self.client = client
        self._ids: LRUCache[Any, Schema] = LRUCache(maxsize=capacity)
        self._versions: LRUCache[Any, RegisteredSchema] = LRUCache(maxsize=capacity)
        # cachetools holds this while it reads or fills a cache, and waits on it while
        # another thread fetches the same key; never during the other keys' fetches.
        self._fetching = threading.Condition()

    @cachedmethod(lambda self: self._ids, condition=lambda self: self._fetching)
    def by_id(self, schema_id: int) -> Schema:
        """The schema registered with `schema_id`."""
        return self.client.get_schema(schema_id)

    def by_version(self, subject: str, version: Version = "latest", deleted: bool = False) -> RegisteredSchema:
        """Version `version` (a number, or "latest": the client's cached latest) of
        `subject`; a soft-deleted one too when `deleted`."""
        if version == "latest":
            return self.client.get_latest_version(subject)
        return self._numbered(subject, int(version), deleted)

    @cachedmethod(lambda self: self._versions, condition=lambda self: self._fetching)
    def _numbered(self, subject: str, version: int, deleted: bool) -> RegisteredSchema:
        return self.client.get_version(subject, version, deleted=deleted)

    def referenced(self, schema: Schema) -> list[Referenced]:
        """Every schema `schema` references, directly or not, each once, in dependency
        order: a schema comes after every schema it references (the order in which
        named types must be defined). A reference cycle is walked once round.

        Raises BadReference for a reference without subject or version, or a referenced
        schema without text. Work is one lookup per distinct reference; the walk keeps
        its own stack, so a deep chain of references cannot exhaust Python's.
        """
        out: list[Referenced] = []
        seen: set[tuple[str, int]] = set()
        walking: list[Referenced] = []  # the path from `schema` down to the reference being walked
        stack: list[Iterator[SchemaReference]] = [iter(schema.references or ())]
        while stack:
            ref = next(stack[-1], None)
            if ref is None:
                stack.pop()
                if walking:  # every reference below it is out: now it may follow them
                    out.append(walking.pop())
                continue
            if ref.subject is None or ref.version is None:
                raise BadReference(f"reference {ref.name!r} lacks a subject or a version")
            key = (ref.subject, int(ref.version))
            if key in seen:
                continue
            seen.add(key)
            registered = self._numbered(key[0], key[1], True)
            if registered.schema.schema_str is None:
                raise BadReference(f"referenced schema {key} has no text")
            walking.append(Referenced(ref.name or f"{key[0]}:{key[1]}", key[0], key[1], registered.schema))
            stack.append(iter(registered.schema.references or ()))
        return out
