"""Schemas as requests give them and as the log holds them, parsed: references
resolved, texts that stored versions hold, and which stored texts are the same schema
written another way."""
from __future__ import annotations

from collections.abc import Iterable

from registry import errors
from registry.compatibility import PreviousVersion
from registry.schema_types import InvalidSchema, ParsedSchema
from registry.service.requests import NewSchema
from registry.service.state import ServiceState
from store.cache import content_key, qualify_reference
from store.records import DEFAULT_CONTEXT, SchemaReference, SchemaValue, context_of

_MAX_REFERENCE_DEPTH = 32


class Parsing(ServiceState):
    """Parsing what requests give and what the log holds. What the log holds parses
    leniently (`_parse_stored`), as Confluent's parser reads what it stored; parsed
    stored versions are remembered by (context, id), parsed request texts by the parse
    memo. Raises `registry.errors.InvalidSchema`."""

    def _parse(self, new: NewSchema, subject: str = "", *, lenient: bool = False) -> ParsedSchema:
        """Parse a schema a request gives. One that fails the checks for new schemas is
        still taken when the same text is stored already (under `subject`, or as an id
        of its context), or when the subject's latest version fails them too: what a
        registry once accepted stays usable, and its next versions must keep its names
        (a renamed record is another type). Confluent validates new schemas only."""
        schema_type = self._types.get(new.schema_type)
        if schema_type is None:
            raise errors.InvalidSchema(f"Invalid schema type {new.schema_type}")
        references = self._resolve_references(new.references, subject)
        memo = self._parse_memo
        try:
            return memo.parse(new.schema_type, new.schema, references, lenient,
                              lambda: schema_type.parse(new.schema, references, lenient=lenient))
        except InvalidSchema as exc:
            if lenient:
                raise errors.InvalidSchema(f"Invalid schema: {exc}") from None
            # Its text, not the exception: the exception's traceback holds this frame,
            # a cycle left for the garbage collector on every refused schema.
            error = str(exc)
        try:
            parsed = memo.parse(new.schema_type, new.schema, references, True,
                                lambda: schema_type.parse(new.schema, references, lenient=True))
        except InvalidSchema:
            raise errors.InvalidSchema(f"Invalid schema: {error}") from None
        if self._is_stored(subject, new, parsed) or self._latest_is_grandfathered(subject, new.schema_type):
            return parsed
        raise errors.InvalidSchema(f"Invalid schema: {error}") from None

    def _latest_is_grandfathered(self, subject: str, schema_type: str) -> bool:
        """True if the subject's latest live version is one the checks for new schemas
        refuse (stored by a registry that accepted it). Only asked on the error path."""
        live = self._visible_versions(subject, deleted=False) if subject else []
        if not live or live[-1].schema_type != schema_type:
            return False
        latest = live[-1]
        try:
            self._types[schema_type].parse(latest.schema, self._resolve_references(latest.references, subject))
        except InvalidSchema:
            return True
        return False

    def _parse_stored(self, new: NewSchema, subject: str = "") -> ParsedSchema:
        """Parse a schema from the log, as Confluent's parser reads what it stored."""
        return self._parse(new, subject, lenient=True)

    def _is_stored(self, subject: str, new: NewSchema, parsed: ParsedSchema) -> bool:
        texts = {new.schema, parsed.canonical()}
        if any(v.schema in texts and v.schema_type == new.schema_type and v.references == new.references
               for v in self._cache.versions(subject)):
            return True
        context = context_of(subject) if subject else DEFAULT_CONTEXT
        return any(self._cache.id_by_content(content_key(context, new.schema_type, text, new.references))
                   is not None for text in texts)

    def _resolve_references(self, references: Iterable[SchemaReference], referrer: str = "") -> dict[str, str]:
        """Reference name -> schema text, dependencies first, following references of references.

        Each (subject, version) is visited once, however many schemas reach it: a fan-out
        of references costs what the distinct referenced versions and their edges cost,
        never the number of paths through them. A reference from a subject of another
        context names a subject of that context unless it is qualified itself.
        """
        resolved: dict[str, str] = {}
        visited: set[tuple[str, int]] = set()
        for ref in references:
            self._visit_reference(ref, referrer, 0, resolved, visited)
        return resolved

    def _visit_reference(self, ref: SchemaReference, parent: str, depth: int, resolved: dict[str, str],
                         visited: set[tuple[str, int]]) -> None:
        """`_resolve_references`' walk. A method, not a closure: a recursive closure holds
        itself through its cell, a cycle left for the garbage collector on every call
        (every registration: 7 objects each)."""
        if depth > _MAX_REFERENCE_DEPTH:
            raise errors.InvalidSchema("Invalid schema: references nest too deeply or form a cycle")
        subject = qualify_reference(parent, ref.subject)
        target = self._cache.version(subject, ref.version)
        if target is None:
            raise errors.InvalidSchema(
                f"Invalid schema: reference {ref.name} names subject '{ref.subject}' "
                f"version {ref.version}, which does not exist")
        key = (subject, ref.version)
        if key not in visited:
            visited.add(key)
            for inner in target.references:
                self._visit_reference(inner, subject, depth + 1, resolved, visited)
        resolved.setdefault(ref.name, target.schema)

    def _previous(self, value: SchemaValue) -> PreviousVersion:
        key = (context_of(value.subject), value.id)
        with self._parsed_lock:
            parsed = self._parsed.get(key)
            if parsed is not None:
                self._parsed.move_to_end(key)
        if parsed is None:
            parsed = self._parse_stored(NewSchema(value.schema, value.schema_type, value.references),
                                        value.subject)
            with self._parsed_lock:
                self._parsed[key] = parsed
                if len(self._parsed) > 10_000:
                    self._parsed.popitem(last=False)
        return PreviousVersion(value.version, parsed)

    def _equivalent_texts(self, new: NewSchema, parsed: ParsedSchema, normalize: bool,
                          versions: Iterable[SchemaValue]) -> frozenset[str]:
        """The texts among `versions` (of `new`'s type and references) that are `parsed`
        written another way: its canonical (or, asked to `normalize`, normalized) form,
        or any stored text that parses to the same one. A log written by another
        registry (Confluent, Karapace, a client's own JSON) holds texts as they were
        sent, so equal texts are not the only equal schemas, as Confluent compares
        parsed schemas. Parses stored versions (memoised, `_previous`) only when no
        text matches as it is: call it off the event loop and outside the write lock."""
        wanted = {parsed.canonical(), _text(parsed, normalize)}
        same_kind = [v for v in versions if v.schema_type == new.schema_type and v.references == new.references]
        exact = frozenset(v.schema for v in same_kind if v.schema in wanted)
        if exact:
            return exact | wanted
        found = set(wanted)
        for value in same_kind:
            try:
                stored = self._previous(value).schema
            except errors.RegistryError:
                continue  # a stored text this registry cannot parse equals nothing
            if stored.canonical() in wanted or (normalize and stored.normalized() in wanted):
                found.add(value.schema)
        return frozenset(found)

    def formatted(self, schema_type: str, text: str, references: tuple[SchemaReference, ...], subject: str,
                  fmt: str | None) -> str:
        """A stored schema's text in the format a read asks for (`?format=`), as
        Confluent's `formattedString`: for Protobuf `serialized` is the base64
        FileDescriptorProto, for Avro `resolved` the schema with every type its
        references define written inline. Any other format, or none, is the text as stored
        (Confluent too answers unknown formats with the default, for forward
        compatibility). Raises InvalidSchema only if the stored text no longer parses."""
        if (schema_type, fmt) == ("PROTOBUF", "serialized"):
            parsed = self._parse_stored(NewSchema(text, schema_type, references), subject)
            return parsed.serialized()  # type: ignore[attr-defined]
        if (schema_type, fmt) == ("AVRO", "resolved"):
            parsed = self._parse_stored(NewSchema(text, schema_type, references), subject)
            return parsed.resolved()  # type: ignore[attr-defined]
        return text


def storable_text(parsed: ParsedSchema, normalize: bool) -> str:
    """The text a registration stores for `parsed`: its normalized form if asked to
    `normalize`, else its canonical one. Raises InvalidSchema if it cannot be stored."""
    return _storable(_text(parsed, normalize))


def _text(parsed: ParsedSchema, normalize: bool) -> str:
    return parsed.normalized() if normalize else parsed.canonical()


def _storable(text: str) -> str:
    """`text`, if it can be stored as UTF-8 (no lone surrogates); else InvalidSchema."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise errors.InvalidSchema("Invalid schema: it holds a lone surrogate, which is not text") from None
    return text
