"""The JSON Schema `SchemaType` ("JSON"): parsing, stored forms, compatibility, validation.

    schema = JSON.parse('{"type": "object", "properties": {"id": {"type": "integer"}}}', {})
    schema.canonical()          # '{"type":"object","properties":{"id":{"type":"integer"}}}'
    schema.read_errors(older)   # [] when `schema` can read data written with `older`
    schema.validator().is_valid({"id": 1})

Parsing a new schema (the default, strict): the text must be JSON within the limits of
`jackson_text.load_json`, an object or a boolean, nested at most MAX_SCHEMA_DEPTH sub-schemas
deep, valid against its draft's meta-schema (`$schema` picks the draft; draft 7 when
absent or unknown, as Confluent), and every `$ref` must resolve against the schema, its
references or the bundled meta-schemas (never the network). With `lenient=True`, for
schemas already in the log, only the JSON limits apply, as Confluent's parser reads such
schemas without validating them again; whatever cannot be resolved reads as an empty
schema, so a stored schema can never make its subject unusable.

Deviation from `ParsedSchema.canonical`'s usual promise: like Confluent, the stored text
keeps the schema's key order (Confluent stores Jackson's compact rewrite of the text),
so reformatting whitespace dedupes to the same id but reordering keys does not, unless
the request sets normalize=true (keys sorted at every depth, as Confluent normalizes).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cached_property
from typing import Final

import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema.protocols import Validator

from registry.schema_types.base import CheckTooCostly, InvalidSchema, ParsedSchema
from registry.schema_types.json_schema.compatibility import TooMuchWork, compare
from registry.schema_types.json_schema.drafts import (
    OFFLINE_REGISTRY,
    VALIDATOR_CLASSES,
    Draft,
    draft_of,
    meta_schema_errors,
)
from registry.schema_types.json_schema.jackson_text import (
    JsonValue,
    compact,
    load_json,
    sorted_compact,
)
from registry.schema_types.json_schema.loader import load
from registry.schema_types.json_schema.model import Node, fingerprint_all
from registry.schema_types.json_schema.references import (
    DEFAULT_BASE,
    SCHEMA_ARRAY_KEYWORDS,
    SCHEMA_KEYWORDS,
    SCHEMA_MAP_KEYWORDS,
    Resolver,
    join,
)

MAX_SCHEMA_DEPTH: Final = 48
"""Deepest nesting of sub-schemas in a new schema. The meta-schema check recurses once
per level (about a dozen Python frames each for 2020-12's allOf); 48 leaves room within
Python's default recursion limit for the caller's own stack."""

WORK_PER_NODE: Final = 10
"""Units of work a compatibility check may spend per node of the two schemas: a unit is
a pair comparison (about 30 microseconds) or a property name matched against one
patternProperties pattern; an ordinary check spends one to three per node."""
MIN_WORK: Final = 50_000


class JsonSchema:
    """A parsed JSON schema (see `ParsedSchema`). Immutable; safe to share between threads.

    Create through `JSON.parse`.
    """

    def __init__(self, document: JsonValue, draft: Draft, root: Node, size: int,
                 references: Mapping[str, JsonValue], root_base: str) -> None:
        self._document = document
        self.draft = draft
        self._root = root
        self._size = size
        self._references = dict(references)
        self._root_base = root_base

    @property
    def schema_type(self) -> str:
        return "JSON"

    @cached_property
    def _canonical(self) -> str:
        return compact(self._document)

    @cached_property
    def _normalized(self) -> str:
        return sorted_compact(self._document)

    def canonical(self) -> str:
        """Compact JSON with the schema's own key order (Confluent's canonicalString)."""
        return self._canonical

    def normalized(self) -> str:
        """The canonical text with object keys sorted at every depth (Confluent's
        `JsonSchema.normalize()`)."""
        return self._normalized

    @cached_property
    def document(self) -> JsonValue:
        """The schema as plain JSON values (floats as float), e.g. for a serializer.
        Do not mutate it."""
        return json.loads(self._canonical)

    def read_errors(self, writer: ParsedSchema) -> list[str]:
        """Why this schema, as the reader, cannot read data written with `writer`.

        Confluent's differences from the writer (original) to this schema (update) whose
        type is not in Confluent's compatible set, each as "<TYPE> at '<#/path>': why".
        """
        if not isinstance(writer, JsonSchema):
            return [f"#/: a JSON Schema reader cannot read data written with a "
                    f"{writer.schema_type} schema"]
        budget = WORK_PER_NODE * (self._size + writer._size) + MIN_WORK
        try:
            differences = compare(writer._root, self._root, budget)
        except TooMuchWork as exc:
            what = f" ({exc})" if str(exc) else ""
            raise CheckTooCostly(
                f"deciding compatibility would take more than {budget} schema comparisons or "
                f"patternProperties matches (the limit for schemas of this size){what}; simplify "
                f"large oneOf/anyOf/allOf unions or patternProperties") from None
        return [difference.sentence() for difference in differences if not difference.compatible]

    def validator(self) -> Validator:
        """A `jsonschema` validator for instances of this schema, references resolved.

        Formats are not asserted (pass a format checker to the class yourself if you
        want them). Nothing is fetched: a `$ref` to anything but this schema, its
        references and the bundled meta-schemas fails when validation reaches it.
        """
        return self._validator

    @cached_property
    def _validator(self) -> Validator:
        specification = referencing.jsonschema.specification_with(
            _SPEC_URIS[self.draft], default=referencing.jsonschema.DRAFT7)
        resources = []
        for name, document in self._references.items():
            contents = _bridge_definitions(_plain(document))
            resource = referencing.Resource.from_contents(contents, default_specification=specification)
            base = join(self._root_base, name)
            for uri in {name, base, join(DEFAULT_BASE, name), "./" + name}:
                resources.append((uri, resource))
        registry: referencing.Registry = referencing.Registry(retrieve=_refuse).with_resources(
            resources).combine(OFFLINE_REGISTRY)
        cls = VALIDATOR_CLASSES[self.draft]
        return cls(_bridge_definitions(self.document), registry=registry)

    def __repr__(self) -> str:
        return f"JsonSchema({self.canonical()})"


_SPEC_URIS: Final = {
    Draft.DRAFT_4: "http://json-schema.org/draft-04/schema#",
    Draft.DRAFT_6: "http://json-schema.org/draft-06/schema#",
    Draft.DRAFT_7: "http://json-schema.org/draft-07/schema#",
    Draft.DRAFT_2019_09: "https://json-schema.org/draft/2019-09/schema",
    Draft.DRAFT_2020_12: "https://json-schema.org/draft/2020-12/schema",
}


def _refuse(uri: str) -> referencing.Resource:
    raise referencing.exceptions.NoSuchResource(ref=uri)


def _plain(value: JsonValue) -> JsonValue:
    return json.loads(compact(value))


def _bridge_definitions(document: JsonValue) -> JsonValue:
    """Confluent lets "#/$defs/X" find a top-level "definitions" entry; so does this."""
    if not isinstance(document, dict) or not isinstance(document.get("definitions"), dict):
        return document
    defs = document.get("$defs", {})
    if not isinstance(defs, dict):
        return document
    merged = dict(document["definitions"])
    merged.update(defs)
    return {**document, "$defs": merged}


def _schema_depth_problem(document: JsonValue) -> str | None:
    """Why `document` nests sub-schemas too deeply, or None; iterative."""
    stack: list[tuple[JsonValue, int, str]] = [(document, 1, "")]
    while stack:
        value, depth, where = stack.pop()
        if not isinstance(value, dict):
            continue
        if depth > MAX_SCHEMA_DEPTH:
            return (f"{where}: sub-schemas are nested more than {MAX_SCHEMA_DEPTH} levels "
                    f"deep (use $ref to definitions to flatten the schema)")
        for keyword, child in value.items():
            if keyword in SCHEMA_KEYWORDS and isinstance(child, dict):
                stack.append((child, depth + 1, f"{where}/{keyword}"))
            elif keyword in SCHEMA_ARRAY_KEYWORDS and isinstance(child, list):
                stack.extend((item, depth + 1, f"{where}/{keyword}/{index}")
                             for index, item in enumerate(child))
            elif keyword in SCHEMA_MAP_KEYWORDS and isinstance(child, dict):
                stack.extend((item, depth + 1, f"{where}/{keyword}/{name}")
                             for name, item in child.items())
    return None


class JsonSchemaType:
    """The JSON Schema `SchemaType`: parses schema text into `JsonSchema`."""

    name: str = "JSON"

    def parse(self, text: str, references: Mapping[str, str], *, lenient: bool = False
              ) -> JsonSchema:
        """Parse and validate `text` (see `SchemaType.parse` and the module docstring).

        `references` maps reference names to the referenced schemas' texts, which were
        validated when they were registered and are read leniently here.
        Raises InvalidSchema with a readable message; never fetches anything.
        """
        document = load_json(text, "the schema")
        if not isinstance(document, (dict, bool)):
            raise InvalidSchema(f"a JSON schema must be an object or a boolean, not "
                                f"{type(document).__name__ if document is not None else 'null'}")
        draft = draft_of(document)
        documents: dict[str, JsonValue] = {}
        for name, reference_text in references.items():
            documents[name] = load_json(reference_text, f"reference {name!r}")
        if not lenient:
            problem = _schema_depth_problem(document)
            if problem is not None:
                raise InvalidSchema(problem)
            errors = meta_schema_errors(document, draft)
            if errors:
                raise InvalidSchema(f"not a valid {draft.value} JSON schema: " + "; ".join(errors))
        resolver = Resolver(document, documents, draft)
        root, size = load(document, resolver, draft, lenient=lenient)
        fingerprint_all(root)
        return JsonSchema(document, draft, root, size, documents, resolver.root_base)


JSON: Final = JsonSchemaType()
