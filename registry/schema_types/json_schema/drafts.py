"""JSON Schema drafts: which one a document uses, and validation against its meta-schema.

    draft = draft_of(document)           # from "$schema", as Confluent picks it
    meta_schema_errors(document, draft)  # [] when the document is a valid schema

Confluent reads `$schema` with `SpecificationVersion.getFromUrl`: an exact match of one
of the known meta-schema URLs (a trailing "#" ignored); anything else, or no
`$schema`, means draft 7.

The meta-schemas come from the `jsonschema` library (which bundles every draft's), used
without network access: `jsonschema`'s default registry would fetch unknown remote
`$ref`s over HTTP, so every validator here gets an explicit offline registry.
"""
from __future__ import annotations

import enum
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, Final

import jsonschema_specifications
from jsonschema import validators
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from registry.schema_types.json_schema.jackson_text import JsonValue, json_key


class Draft(enum.Enum):
    DRAFT_4 = "draft-04"
    DRAFT_6 = "draft-06"
    DRAFT_7 = "draft-07"
    DRAFT_2019_09 = "draft 2019-09"
    DRAFT_2020_12 = "draft 2020-12"

    @property
    def modern(self) -> bool:
        """2019-09 and later: Confluent loads these with json-sKema instead of Everit."""
        return self in (Draft.DRAFT_2019_09, Draft.DRAFT_2020_12)

    @property
    def id_keyword(self) -> str:
        return "id" if self is Draft.DRAFT_4 else "$id"

    def at_least(self, other: Draft) -> bool:
        return _ORDER[self] >= _ORDER[other]


_ORDER: Final = {draft: index for index, draft in enumerate(Draft)}

DEFAULT_DRAFT: Final = Draft.DRAFT_7

_URLS: Final[dict[str, Draft]] = {
    "http://json-schema.org/draft-04/schema": Draft.DRAFT_4,
    "https://json-schema.org/draft-04/schema": Draft.DRAFT_4,
    "http://json-schema.org/schema": Draft.DRAFT_4,
    "https://json-schema.org/schema": Draft.DRAFT_4,
    "http://json-schema.org/draft-06/schema": Draft.DRAFT_6,
    "https://json-schema.org/draft-06/schema": Draft.DRAFT_6,
    "http://json-schema.org/draft-07/schema": Draft.DRAFT_7,
    "https://json-schema.org/draft-07/schema": Draft.DRAFT_7,
    "http://json-schema.org/draft/2019-09/schema": Draft.DRAFT_2019_09,
    "https://json-schema.org/draft/2019-09/schema": Draft.DRAFT_2019_09,
    "http://json-schema.org/draft/2020-12/schema": Draft.DRAFT_2020_12,
    "https://json-schema.org/draft/2020-12/schema": Draft.DRAFT_2020_12,
}


def draft_named(url: object) -> Draft | None:
    """The draft a `$schema` value names, or None if it names none Confluent knows."""
    if not isinstance(url, str):
        return None
    return _URLS.get(url[:-1] if url.endswith("#") else url)


def draft_of(document: JsonValue, default: Draft = DEFAULT_DRAFT) -> Draft:
    """The draft `document` declares with `$schema`, else `default`."""
    if isinstance(document, dict):
        named = draft_named(document.get("$schema"))
        if named is not None:
            return named
    return default


# --- Meta-schema validation ----------------------------------------------------------

def _is_number(checker: Any, instance: object) -> bool:
    return isinstance(instance, (int, Decimal)) and not isinstance(instance, bool)


def _is_integer(checker: Any, instance: object) -> bool:
    # Floats are decoded as Decimal; 1.0 is an integer in JSON Schema. Comparing with
    # the integral value is cheap even for 1E+999999999 (no digits are expanded).
    if isinstance(instance, Decimal):
        return instance.is_finite() and instance == instance.to_integral_value()
    return isinstance(instance, int) and not isinstance(instance, bool)


def _unique_items(validator: Any, unique: object, instance: object, schema: object
                  ) -> Iterator[ValidationError]:
    # jsonschema's own check is quadratic for unhashable items (an enum of 100,000
    # objects would take minutes); hashing a canonical key is linear.
    if unique is True and isinstance(instance, list):
        seen: set[Any] = set()
        for item in instance:
            key = json_key(item)
            if key in seen:
                yield ValidationError("has non-unique elements")
                return
            seen.add(key)


VALIDATOR_CLASSES: Final = {
    Draft.DRAFT_4: validators.Draft4Validator,
    Draft.DRAFT_6: validators.Draft6Validator,
    Draft.DRAFT_7: validators.Draft7Validator,
    Draft.DRAFT_2019_09: validators.Draft201909Validator,
    Draft.DRAFT_2020_12: validators.Draft202012Validator,
}

OFFLINE_REGISTRY: Final = jsonschema_specifications.REGISTRY
"""The bundled meta-schemas, with no retrieval of anything else."""


def _meta_validator(draft: Draft) -> Validator:
    base = VALIDATOR_CLASSES[draft]
    checker = base.TYPE_CHECKER.redefine_many({"number": _is_number, "integer": _is_integer})
    cls = validators.extend(base, {"uniqueItems": _unique_items}, type_checker=checker)
    # No format checker: "format" stays an annotation, as in Confluent (and Python's
    # `re` is not Java's regex dialect, so "format": "regex" would reject valid patterns).
    return cls(base.META_SCHEMA, registry=OFFLINE_REGISTRY)


_META_VALIDATORS: Final = {draft: _meta_validator(draft) for draft in Draft}

MAX_META_ERRORS: Final = 5


def meta_schema_errors(document: JsonValue, draft: Draft) -> list[str]:
    """Why `document` is not valid against `draft`'s meta-schema (at most a few reasons).

    Work is linear in the document's size; the caller has bounded its depth.
    """
    found: list[str] = []
    for error in _META_VALIDATORS[draft].iter_errors(document):
        where = "/" + "/".join(str(part) for part in error.absolute_path)
        found.append(f"{where}: {_short(error)} (the {draft.value} meta-schema's "
                     f"'{error.validator}' rule)")
        if len(found) >= MAX_META_ERRORS:
            break
    return found


def _short(error: ValidationError) -> str:
    message = error.message
    return message if len(message) <= 200 else message[:200] + "..."
