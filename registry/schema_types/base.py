"""The contract every schema type (Avro, JSON Schema, Protobuf) fulfils.

The service knows schema types only through this module: it parses text into a
`ParsedSchema`, stores `canonical()`, dedupes on it, and asks `read_errors` to decide
compatibility. Adding a type means adding a module and registering it in
`registry.schema_types.SCHEMA_TYPES`; the service does not change.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class InvalidSchema(ValueError):
    """The schema text is not a valid schema of its type. The message says why."""


class CheckTooCostly(ValueError):
    """Deciding compatibility would take more work than the two schemas' sizes allow
    (each type counts its comparison steps against a budget proportional to them). The
    request's fault, not the registry's: the service answers 422, and writes nothing.
    The message says what to simplify."""


class ParsedSchema(Protocol):
    """A validated schema. Immutable; safe to share between threads."""

    @property
    def schema_type(self) -> str:
        """"AVRO", "JSON" or "PROTOBUF"."""

    def canonical(self) -> str:
        """The text the registry stores and returns.

        Reformatting a schema (whitespace) must not change it, so that re-registering
        reformatted text dedupes to the same id. Whether key order counts follows
        Confluent's type: Avro's canonical form ignores it, JSON Schema's keeps it (as
        Confluent stores the schema), and `normalized()` ignores it for every type.
        """

    def normalized(self) -> str:
        """The text used instead of `canonical()` when a request sets `normalize=true`.

        It may go further than `canonical()` (Confluent's normalization), and
        equals `canonical()` where a type has nothing more to normalize.
        """

    def read_errors(self, writer: ParsedSchema) -> list[str]:
        """Why this schema, as a reader, cannot read data written with `writer`.

        An empty list means it can. Each entry is a readable sentence naming the
        place in the schema, used for `verbose=true` compatibility answers.
        """


class SchemaType(Protocol):
    """A parser for one kind of schema."""

    name: str

    def parse(self, text: str, references: Mapping[str, str], *, lenient: bool = False) -> ParsedSchema:
        """Parse and validate `text`.

        `lenient` is set for schemas already in the log (adopted from another registry,
        imported with their ids): they are read as Confluent's parser reads what it
        stored, skipping checks that only new schemas must pass.

        `references` maps each reference name to the referenced schema's text, in
        dependency order (a referenced schema comes before the ones that use it), so
        that named types they define can be used by `text`.
        Raises `InvalidSchema` with a readable message.
        """
